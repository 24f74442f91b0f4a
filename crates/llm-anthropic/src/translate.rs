//! Messages API events → `ChatEvent`s. Pure: it sees each server-sent event's data (or a
//! whole message) and says which events follow.
//!
//! Rules:
//! - `text_delta` → `TextDelta`; `thinking_delta` → `ReasoningDelta`; signatures, redacted
//!   thinking, citations and `ping`s yield nothing.
//! - A `tool_use` block is a tool call: `ToolCallStart` at its `content_block_start` (calls
//!   numbered densely in the order they start), `input_json_delta`s as its arguments, and
//!   `ToolCallEnd` at its `content_block_stop`. A whole message's `tool_use` carries its
//!   `input` complete, sent as one arguments delta.
//! - Usage: `message_start` brings the input side, `message_delta` the output (cumulative;
//!   LiteLLM also sends the input there). Input is `input_tokens` plus the cache's
//!   `cache_creation_input_tokens` and `cache_read_input_tokens`: Anthropic counts them apart,
//!   and all of them are tokens the prompt cost. The cache reads are also the cached input
//!   tokens (taken from the same event as the input).
//! - The stop reason (`message_delta`) and the usage make the single `Finish`, emitted at
//!   `message_stop`, at the end of the stream or when it goes silent after a stop reason.
//!   `end_turn`, `stop_sequence` → `Stop`; `max_tokens`, `model_context_window_exceeded` →
//!   `Length`; `tool_use` → `ToolCalls`; `refusal` → `ContentFilter`; others are `Other`.
//!   A stream that ends without a stop reason is an upstream failure.
//! - An `error` event is an `Err` item and ends the stream: `overloaded_error` and
//!   `rate_limit_error` as `Unavailable`, others as `Upstream`.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use tessera_llm_http::{Items, Translate, clip, error_details};
use tessera_models::{ChatEvent, FinishReason, ProviderError, Usage};

/// One event's data, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: Message,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

/// `message_start`'s message, or a whole (non-streamed) answer.
#[derive(Debug, Default, Deserialize)]
struct Message {
    #[serde(default)]
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl WireUsage {
    /// Every input token, the cache's included; `None` when the event says nothing of input.
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

fn tokens(count: u64) -> u32 {
    u32::try_from(count).unwrap_or(u32::MAX)
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The state of one answer being translated.
#[derive(Debug, Default)]
pub(crate) struct Translator {
    /// Content-block index → the dense index of the tool call it is.
    calls: HashMap<u32, u32>,
    next_call: u32,
    input_tokens: u64,
    /// The part of `input_tokens` read from the cache.
    cached_input_tokens: u64,
    output_tokens: u64,
    stop: Option<FinishReason>,
    done: bool,
}

impl Translator {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn usage(&mut self, usage: Option<WireUsage>) {
        let Some(usage) = usage else { return };
        if let Some(input) = usage.input() {
            self.input_tokens = input;
            self.cached_input_tokens = usage.cache_read_input_tokens.unwrap_or(0);
        }
        if let Some(output) = usage.output_tokens {
            self.output_tokens = output;
        }
    }

    fn stop_reason(&mut self, reason: Option<String>) {
        if let Some(reason) = reason
            && self.stop.is_none()
        {
            self.stop = Some(finish_reason(&reason));
        }
    }

    /// A block begins: a tool call starts; text or thinking that came with it is a delta.
    fn block(&mut self, index: u32, block: Block, whole: bool, items: &mut Items) {
        match block {
            Block::Text { text } if !text.is_empty() => items.push(Ok(ChatEvent::TextDelta(text))),
            Block::Thinking {
                thinking: Some(thinking),
            } if !thinking.is_empty() => items.push(Ok(ChatEvent::ReasoningDelta(thinking))),
            Block::ToolUse { id, name, input } => {
                let call = self.next_call;
                self.next_call += 1;
                self.calls.insert(index, call);
                items.push(Ok(ChatEvent::ToolCallStart {
                    index: call,
                    id,
                    name,
                }));
                // A stream sends `{}` here and the arguments as deltas; a whole message sends
                // them here.
                if whole {
                    let arguments = match input {
                        Value::Null => "{}".to_owned(),
                        input => input.to_string(),
                    };
                    items.push(Ok(ChatEvent::ToolCallArgumentsDelta {
                        index: call,
                        delta: arguments,
                    }));
                    items.push(Ok(ChatEvent::ToolCallEnd { index: call }));
                }
            }
            _ => {}
        }
    }

    fn error(&mut self, error: &Value) -> Items {
        let kind = error
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (message, status) = error_details(error);
        let message = message.unwrap_or_else(|| format!("the provider reported an error ({kind})"));
        self.failed(match kind {
            "overloaded_error" | "rate_limit_error" => ProviderError::Unavailable {
                message,
                retry_after: None,
            },
            _ => ProviderError::Upstream { status, message },
        })
    }
}

impl Translate for Translator {
    fn is_done(&self) -> bool {
        self.done
    }

    fn event(&mut self, _kind: &str, data: &str) -> Items {
        if self.done {
            return Vec::new();
        }
        let data = data.trim();
        if data.is_empty() {
            return Vec::new();
        }
        let event = match serde_json::from_str::<Event>(data) {
            Ok(event) => event,
            Err(e) => {
                return self.failed(ProviderError::Upstream {
                    status: None,
                    message: format!(
                        "the provider sent an event that is not a Messages API event ({e}): {}",
                        clip(data)
                    ),
                });
            }
        };
        let mut items = Vec::new();
        match event {
            Event::MessageStart { message } => {
                self.usage(message.usage);
                for (index, block) in (0..).zip(message.content) {
                    self.block(index, block, false, &mut items);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.block(index, content_block, false, &mut items),
            Event::ContentBlockDelta { index, delta } => match delta {
                Delta::Text { text } if !text.is_empty() => {
                    items.push(Ok(ChatEvent::TextDelta(text)));
                }
                Delta::Thinking { thinking } if !thinking.is_empty() => {
                    items.push(Ok(ChatEvent::ReasoningDelta(thinking)));
                }
                Delta::InputJson { partial_json } if !partial_json.is_empty() => {
                    if let Some(&call) = self.calls.get(&index) {
                        items.push(Ok(ChatEvent::ToolCallArgumentsDelta {
                            index: call,
                            delta: partial_json,
                        }));
                    }
                }
                _ => {}
            },
            Event::ContentBlockStop { index } => {
                if let Some(call) = self.calls.remove(&index) {
                    items.push(Ok(ChatEvent::ToolCallEnd { index: call }));
                }
            }
            Event::MessageDelta { delta, usage } => {
                self.stop_reason(delta.stop_reason);
                self.usage(usage);
            }
            Event::MessageStop => items.extend(self.end()),
            Event::Error { error } => items.extend(self.error(&error)),
            Event::Ping | Event::Unknown => {}
        }
        items
    }

    fn whole(&mut self, body: &[u8]) -> Items {
        let document: Value = match serde_json::from_slice(body) {
            Ok(document) => document,
            Err(e) => {
                return self.failed(ProviderError::Upstream {
                    status: None,
                    message: format!("the provider's answer is not JSON: {e}"),
                });
            }
        };
        if document.get("type").and_then(Value::as_str) == Some("error") {
            let error = document.get("error").cloned().unwrap_or(document);
            return self.error(&error);
        }
        let message = match serde_json::from_value::<Message>(document) {
            Ok(message) => message,
            Err(e) => {
                return self.failed(ProviderError::Upstream {
                    status: None,
                    message: format!("the provider's answer is not a message: {e}"),
                });
            }
        };
        let mut items = Vec::new();
        self.usage(message.usage);
        for (index, block) in (0..).zip(message.content) {
            self.block(index, block, true, &mut items);
        }
        self.stop_reason(message.stop_reason);
        items.extend(self.end());
        items
    }

    fn finishing(&self) -> bool {
        self.stop.is_some()
    }

    fn complete(&mut self) -> Items {
        self.done = true;
        let reason = self.stop.clone().unwrap_or(FinishReason::Stop);
        vec![Ok(ChatEvent::Finish {
            reason,
            usage: Usage {
                input_tokens: tokens(self.input_tokens),
                output_tokens: tokens(self.output_tokens),
                reasoning_tokens: 0,
                cached_input_tokens: tokens(self.cached_input_tokens),
            },
        })]
    }

    fn failed(&mut self, error: ProviderError) -> Items {
        self.done = true;
        vec![Err(error)]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn feed(
        translator: &mut Translator,
        events: &[Value],
    ) -> Vec<Result<ChatEvent, ProviderError>> {
        events
            .iter()
            .flat_map(|event| translator.event("message", &event.to_string()))
            .collect()
    }

    fn ok(items: Vec<Result<ChatEvent, ProviderError>>) -> Vec<ChatEvent> {
        items.into_iter().map(Result::unwrap).collect()
    }

    fn start(input: u64, cache_read: u64) -> Value {
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "claude", "stop_reason": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": 2,
                      "cache_read_input_tokens": cache_read, "output_tokens": 1}}})
    }

    #[test]
    fn thinking_text_and_usage_with_the_cache_make_one_finish_at_message_stop() {
        let mut translator = Translator::new();
        let events = ok(feed(
            &mut translator,
            &[
                start(10, 30),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                json!({"type": "ping"}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hmm."}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Bonjour"}}),
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " ☕"}}),
                json!({"type": "content_block_stop", "index": 1}),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
                json!({"type": "message_stop"}),
            ],
        ));
        assert_eq!(
            events,
            vec![
                ChatEvent::ReasoningDelta("Hmm.".into()),
                ChatEvent::TextDelta("Bonjour".into()),
                ChatEvent::TextDelta(" ☕".into()),
                ChatEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Usage {
                        input_tokens: 42,
                        output_tokens: 15,
                        reasoning_tokens: 0,
                        cached_input_tokens: 30
                    }
                },
            ]
        );
        assert!(translator.is_done());
        assert!(translator.event("message", r#"{"type":"ping"}"#).is_empty());
    }

    /// A cache hit as the Messages API streams it (`message_delta` repeats the cumulative
    /// input, as the API does since mid-2025), and as a whole message: input is every
    /// prompt token, the cache reads among them are the cached input.
    #[test]
    fn cache_reads_are_the_cached_part_of_the_input() {
        let usage = json!({"input_tokens": 3, "cache_creation_input_tokens": 12,
            "cache_read_input_tokens": 2048,
            "cache_creation": {"ephemeral_5m_input_tokens": 12, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 1, "service_tier": "standard"});
        let expected = ChatEvent::Finish {
            reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 3 + 12 + 2048,
                output_tokens: 9,
                reasoning_tokens: 0,
                cached_input_tokens: 2048,
            },
        };
        let mut translator = Translator::new();
        let events = ok(feed(
            &mut translator,
            &[
                json!({"type": "message_start", "message": {"id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                    "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
                    "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Paris."}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                    "usage": {"input_tokens": 3, "cache_creation_input_tokens": 12,
                        "cache_read_input_tokens": 2048, "output_tokens": 9}}),
                json!({"type": "message_stop"}),
            ],
        ));
        assert_eq!(
            events,
            vec![ChatEvent::TextDelta("Paris.".into()), expected.clone()]
        );

        let mut whole_usage = usage;
        whole_usage["output_tokens"] = json!(9);
        let body = json!({"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "Paris."}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": whole_usage});
        let mut translator = Translator::new();
        assert_eq!(
            ok(translator.whole(body.to_string().as_bytes())),
            vec![ChatEvent::TextDelta("Paris.".into()), expected]
        );
    }

    #[test]
    fn tool_use_blocks_are_calls_numbered_in_order_and_stop_as_tool_calls() {
        let mut translator = Translator::new();
        let events = ok(feed(
            &mut translator,
            &[
                start(5, 0),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Looking."}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {}}}),
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
                json!({"type": "content_block_stop", "index": 1}),
                json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "time", "input": {}}}),
                json!({"type": "content_block_stop", "index": 2}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"input_tokens": 5, "output_tokens": 9}}),
                json!({"type": "message_stop"}),
            ],
        ));
        assert_eq!(
            events,
            vec![
                ChatEvent::TextDelta("Looking.".into()),
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_a".into(),
                    name: "weather".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "{\"city\": ".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "\"Paris\"}".into()
                },
                ChatEvent::ToolCallEnd { index: 0 },
                ChatEvent::ToolCallStart {
                    index: 1,
                    id: "toolu_b".into(),
                    name: "time".into()
                },
                ChatEvent::ToolCallEnd { index: 1 },
                ChatEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    usage: Usage {
                        input_tokens: 5,
                        output_tokens: 9,
                        reasoning_tokens: 0,
                        cached_input_tokens: 0
                    }
                },
            ]
        );
    }

    #[test]
    fn stop_reasons_map_to_finish_reasons() {
        for (reason, expected) in [
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("max_tokens", FinishReason::Length),
            ("model_context_window_exceeded", FinishReason::Length),
            ("tool_use", FinishReason::ToolCalls),
            ("refusal", FinishReason::ContentFilter),
            ("pause_turn", FinishReason::Other("pause_turn".into())),
        ] {
            let mut translator = Translator::new();
            let items = feed(
                &mut translator,
                &[json!({"type": "message_delta", "delta": {"stop_reason": reason}})],
            );
            assert!(items.is_empty());
            match ok(translator.end()).as_slice() {
                [ChatEvent::Finish { reason, .. }] => assert_eq!(*reason, expected),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn errors_garbage_and_early_ends_fail_the_stream() {
        let mut translator = Translator::new();
        let items = feed(
            &mut translator,
            &[
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Par"}}),
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "is"}}),
            ],
        );
        assert_eq!(items.len(), 2, "nothing after the error: {items:?}");
        assert_eq!(
            items[1],
            Err(ProviderError::Unavailable {
                message: "Overloaded".into(),
                retry_after: None
            })
        );
        let mut translator = Translator::new();
        match translator.event("message", "not json").as_slice() {
            [Err(ProviderError::Upstream { message, .. })] => {
                assert!(message.contains("not a Messages API event"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let mut translator = Translator::new();
        let _ = feed(&mut translator, &[start(1, 0)]);
        match translator.end().as_slice() {
            [Err(ProviderError::Upstream { message, .. })] => {
                assert!(message.contains("ended before"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let mut translator = Translator::new();
        assert_eq!(translator.silence(), vec![Err(ProviderError::Timeout)]);
        let mut translator = Translator::new();
        let _ = feed(
            &mut translator,
            &[json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})],
        );
        assert!(matches!(
            translator.silence().as_slice(),
            [Ok(ChatEvent::Finish { .. })]
        ));
    }

    #[test]
    fn a_whole_message_translates_like_a_stream_and_an_error_document_fails() {
        let mut translator = Translator::new();
        let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [
                {"type": "thinking", "thinking": "Why not.", "signature": "c2ln"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 7, "cache_read_input_tokens": 3, "output_tokens": 4}});
        assert_eq!(
            ok(translator.whole(body.to_string().as_bytes())),
            vec![
                ChatEvent::ReasoningDelta("Why not.".into()),
                ChatEvent::TextDelta("Checking.".into()),
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_1".into(),
                    name: "weather".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: r#"{"city":"Oslo"}"#.into()
                },
                ChatEvent::ToolCallEnd { index: 0 },
                ChatEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    usage: Usage {
                        input_tokens: 10,
                        output_tokens: 4,
                        reasoning_tokens: 0,
                        cached_input_tokens: 3
                    }
                },
            ]
        );
        let mut translator = Translator::new();
        let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: required"}});
        assert_eq!(
            translator.whole(error.to_string().as_bytes()),
            vec![Err(ProviderError::Upstream {
                status: None,
                message: "max_tokens: required".into()
            })]
        );
    }
}
