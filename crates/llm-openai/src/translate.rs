//! Upstream chunks → `ChatEvent`s. Pure: it sees the `data` of each server-sent event (and
//! the end of the stream) and says which events follow, so every odd stream shape can be
//! unit-tested without a socket.
//!
//! Rules:
//! - Empty deltas (no text, `""`, role-only) yield nothing.
//! - `content` → `TextDelta`; `reasoning_content` (vLLM, DeepSeek, llama.cpp) and `reasoning`
//!   (Ollama, OpenRouter, newer vLLM) → `ReasoningDelta`.
//! - Tool calls: a call starts (`ToolCallStart`) once both its id and name are known;
//!   argument text that came earlier is replayed right after the start. Calls are numbered
//!   densely in the order they start, whatever indexes the upstream used (some servers send
//!   every call at index 0, or none); a different id at an index already taken is a new
//!   call. When the finish reason arrives, a call that has a name but never got an id is
//!   started with a made-up id (`call_<n>`), then every call ends (`ToolCallEnd`).
//! - `finish_reason` (the first one seen) and `usage` (the last one seen, often in a final
//!   chunk with no choices) make the single `Finish` event, emitted at `[DONE]`, at the end
//!   of the stream, or when the stream goes silent after the finish reason. A `stop` reason
//!   after tool calls is reported as `ToolCalls` (Ollama and some llama.cpp versions say
//!   `stop`), so the tool loop can rely on it. A `[DONE]` without a finish reason finishes
//!   as `Stop` (or `ToolCalls`); a stream that ends with neither is an upstream failure.
//! - An `error` object (or an SSE event named `error`) is an `Err` item and ends the stream.
//! - Only the first choice (`index` 0) is read: the adapter never asks for more.

use std::collections::HashMap;

use serde::Deserialize;
use tessera_llm_http::{Items, Translate, clip, error_details};
use tessera_models::{ChatEvent, FinishReason, ProviderError, Usage};

/// One `data:` payload of the stream (or a whole non-streamed answer: `message` instead of
/// `delta`).
#[derive(Debug, Default, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Read only to tell an error document from a chunk (see `is_error`).
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    object: Option<String>,
}

impl Chunk {
    /// Whether this "chunk" is an error document after all (`is_error` on the typed form).
    fn is_error(&self) -> bool {
        self.error.is_some() || self.object.as_deref() == Some("error")
    }
}

#[derive(Debug, Default, Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    message: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    /// Part of `prompt_tokens` served from the provider's prompt cache.
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

fn tokens(count: Option<u64>) -> u32 {
    count.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: tokens(usage.prompt_tokens),
            output_tokens: tokens(usage.completion_tokens),
            reasoning_tokens: tokens(
                usage
                    .completion_tokens_details
                    .and_then(|details| details.reasoning_tokens),
            ),
            cached_input_tokens: tokens(
                usage
                    .prompt_tokens_details
                    .and_then(|details| details.cached_tokens),
            ),
        }
    }
}

#[derive(Debug, Default)]
struct Call {
    id: Option<String>,
    name: Option<String>,
    /// Argument text received before the call could start.
    pending_arguments: String,
    /// The dense index, once started.
    started: Option<u32>,
}

/// The state of one answer being translated.
#[derive(Debug, Default)]
pub(crate) struct Translator {
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    calls: Vec<Call>,
    by_upstream_index: HashMap<u32, usize>,
    last_call: Option<usize>,
    next_index: u32,
    calls_ended: bool,
    done: bool,
}

/// `{"error": …}` (OpenAI, LiteLLM, llama.cpp) or `{"object": "error", …}` (vLLM).
fn is_error(document: &serde_json::Value) -> bool {
    document.get("error").is_some_and(|e| !e.is_null())
        || document.get("object").and_then(serde_json::Value::as_str) == Some("error")
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "eos" | "end_turn" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

impl Translator {
    pub(crate) fn new() -> Self {
        Self::default()
    }
}

impl Translate for Translator {
    /// Whether the answer is over (finished or failed): nothing more should be fed.
    fn is_done(&self) -> bool {
        self.done
    }

    /// One server-sent event: its type (`message` unless named) and data.
    fn event(&mut self, kind: &str, data: &str) -> Items {
        if self.done {
            return Vec::new();
        }
        let data = data.trim();
        if data == "[DONE]" {
            return self.complete();
        }
        if data.is_empty() {
            return Vec::new();
        }
        // The common case, parsed once into its type; errors and odd shapes take the path
        // below, which reads the document generically to report them.
        if kind != "error"
            && let Ok(chunk) = serde_json::from_str::<Chunk>(data)
            && !chunk.is_error()
        {
            return self.chunk(chunk);
        }
        let document: serde_json::Value = match serde_json::from_str(data) {
            Ok(document) => document,
            Err(_) if kind == "error" => return self.fail(None, clip(data)),
            Err(e) => {
                return self.fail(
                    None,
                    format!(
                        "the provider sent a chunk that is not JSON ({e}): {}",
                        clip(data)
                    ),
                );
            }
        };
        if kind == "error" || is_error(&document) {
            let (message, status) = error_details(&document);
            return self.fail(
                status,
                message.unwrap_or_else(|| "the provider reported an error".to_owned()),
            );
        }
        match serde_json::from_value::<Chunk>(document) {
            Ok(chunk) => self.chunk(chunk),
            Err(e) => self.fail(
                None,
                format!("the provider sent a chunk of an unexpected shape: {e}"),
            ),
        }
    }

    /// A whole (non-streamed) answer: translated like one chunk, then complete.
    fn whole(&mut self, body: &[u8]) -> Items {
        let document: serde_json::Value = match serde_json::from_slice(body) {
            Ok(document) => document,
            Err(e) => {
                return self.fail(None, format!("the provider's answer is not JSON: {e}"));
            }
        };
        if is_error(&document) {
            let (message, status) = error_details(&document);
            return self.fail(
                status,
                message.unwrap_or_else(|| "the provider reported an error".to_owned()),
            );
        }
        let mut items = match serde_json::from_value::<Chunk>(document) {
            Ok(chunk) => self.chunk(chunk),
            Err(e) => {
                return self.fail(
                    None,
                    format!("the provider's answer has an unexpected shape: {e}"),
                );
            }
        };
        if !self.done {
            items.extend(self.end());
        }
        items
    }

    fn finishing(&self) -> bool {
        self.finish.is_some()
    }

    fn complete(&mut self) -> Items {
        let mut items = Vec::new();
        self.end_calls(&mut items);
        let reason = self.finish.take().unwrap_or(if self.next_index > 0 {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        });
        items.push(Ok(ChatEvent::Finish {
            reason,
            usage: self.usage.unwrap_or_default(),
        }));
        self.done = true;
        items
    }

    fn failed(&mut self, error: ProviderError) -> Items {
        self.done = true;
        vec![Err(error)]
    }
}

impl Translator {
    fn fail(&mut self, status: Option<u16>, message: String) -> Items {
        self.failed(ProviderError::Upstream { status, message })
    }

    fn chunk(&mut self, chunk: Chunk) -> Items {
        let mut items = Vec::new();
        for choice in chunk.choices.unwrap_or_default() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta.or(choice.message) {
                self.delta(delta, &mut items);
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason(&reason, &mut items);
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        items
    }

    fn delta(&mut self, delta: Delta, items: &mut Items) {
        for reasoning in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !reasoning.is_empty() {
                items.push(Ok(ChatEvent::ReasoningDelta(reasoning)));
            }
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            items.push(Ok(ChatEvent::TextDelta(text)));
        }
        if self.calls_ended {
            // Tool-call deltas after the finish reason cannot be honoured any more.
            return;
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.tool_call(call, items);
        }
    }

    fn tool_call(&mut self, delta: ToolCallDelta, items: &mut Items) {
        let id = delta.id.filter(|id| !id.is_empty());
        let (name, arguments) = match delta.function {
            Some(function) => (
                function.name.filter(|n| !n.is_empty()),
                function.arguments.unwrap_or_default(),
            ),
            None => (None, String::new()),
        };
        let known = match delta.index {
            Some(index) => self.by_upstream_index.get(&index).copied(),
            None => self.last_call,
        };
        let position = match known {
            // The same slot with another id is another call (servers that send each
            // complete call at index 0).
            Some(position)
                if !(id.is_some()
                    && self.calls[position].id.is_some()
                    && self.calls[position].id != id) =>
            {
                position
            }
            _ => {
                self.calls.push(Call::default());
                self.calls.len() - 1
            }
        };
        if let Some(index) = delta.index {
            self.by_upstream_index.insert(index, position);
        }
        self.last_call = Some(position);
        let next_index = &mut self.next_index;
        let call = &mut self.calls[position];
        if call.id.is_none() {
            call.id = id;
        }
        if call.name.is_none() {
            call.name = name;
        }
        match call.started {
            Some(index) => {
                if !arguments.is_empty() {
                    items.push(Ok(ChatEvent::ToolCallArgumentsDelta {
                        index,
                        delta: arguments,
                    }));
                }
            }
            None => {
                call.pending_arguments.push_str(&arguments);
                if call.id.is_some() && call.name.is_some() {
                    start(call, next_index, items);
                }
            }
        }
    }

    fn finish_reason(&mut self, reason: &str, items: &mut Items) {
        if self.finish.is_some() {
            return;
        }
        self.end_calls(items);
        let mut reason = finish_reason(reason);
        if reason == FinishReason::Stop && self.next_index > 0 {
            reason = FinishReason::ToolCalls;
        }
        self.finish = Some(reason);
    }

    /// Starts the calls that have a name but no id yet, then ends every call.
    fn end_calls(&mut self, items: &mut Items) {
        if self.calls_ended {
            return;
        }
        self.calls_ended = true;
        let next_index = &mut self.next_index;
        for call in &mut self.calls {
            if call.started.is_none() && call.name.is_some() {
                start(call, next_index, items);
            }
        }
        for call in &self.calls {
            if let Some(index) = call.started {
                items.push(Ok(ChatEvent::ToolCallEnd { index }));
            }
        }
    }
}

fn start(call: &mut Call, next_index: &mut u32, items: &mut Items) {
    let index = *next_index;
    *next_index += 1;
    call.started = Some(index);
    let id = call.id.clone().unwrap_or_else(|| format!("call_{index}"));
    call.id = Some(id.clone());
    items.push(Ok(ChatEvent::ToolCallStart {
        index,
        id,
        name: call.name.clone().unwrap_or_default(),
    }));
    if !call.pending_arguments.is_empty() {
        items.push(Ok(ChatEvent::ToolCallArgumentsDelta {
            index,
            delta: std::mem::take(&mut call.pending_arguments),
        }));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn feed(translator: &mut Translator, chunks: &[serde_json::Value]) -> Items {
        chunks
            .iter()
            .flat_map(|chunk| translator.event("message", &chunk.to_string()))
            .collect()
    }

    fn events(items: Items) -> Vec<ChatEvent> {
        items.into_iter().map(Result::unwrap).collect()
    }

    fn delta(delta: serde_json::Value) -> serde_json::Value {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    fn finish(reason: &str) -> serde_json::Value {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    }

    #[test]
    fn text_reasoning_and_usage_make_one_finish_at_done() {
        let mut t = Translator::new();
        let mut items = feed(
            &mut t,
            &[
                delta(json!({"role": "assistant", "content": ""})),
                delta(json!({"reasoning_content": "Hmm"})),
                delta(json!({"reasoning": " so"})),
                delta(json!({"content": "Hel"})),
                delta(json!({"content": null})),
                delta(json!({"content": "lo"})),
                finish("stop"),
                json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5,
                    "total_tokens": 12, "completion_tokens_details": {"reasoning_tokens": 2}}}),
            ],
        );
        assert!(!t.is_done());
        items.extend(t.event("message", "[DONE]"));
        assert!(t.is_done());
        assert_eq!(
            events(items),
            [
                ChatEvent::ReasoningDelta("Hmm".into()),
                ChatEvent::ReasoningDelta(" so".into()),
                ChatEvent::TextDelta("Hel".into()),
                ChatEvent::TextDelta("lo".into()),
                ChatEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Usage {
                        input_tokens: 7,
                        output_tokens: 5,
                        reasoning_tokens: 2,
                        cached_input_tokens: 0
                    }
                }
            ]
        );
        assert!(t.event("message", "{}").is_empty(), "nothing after the end");
    }

    #[test]
    fn tool_call_deltas_start_stream_and_end_at_the_finish_reason() {
        let mut t = Translator::new();
        let items = feed(
            &mut t,
            &[
                delta(
                    json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                    "function": {"name": "weather", "arguments": ""}}]}),
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
                ),
                delta(
                    json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                    "function": {"name": "time", "arguments": "{}"}}]}),
                ),
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
                ),
                finish("tool_calls"),
            ],
        );
        let mut all = events(items);
        all.extend(events(t.end()));
        assert_eq!(
            all,
            [
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "call_a".into(),
                    name: "weather".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "{\"city\":".into()
                },
                ChatEvent::ToolCallStart {
                    index: 1,
                    id: "call_b".into(),
                    name: "time".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 1,
                    delta: "{}".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "\"Paris\"}".into()
                },
                ChatEvent::ToolCallEnd { index: 0 },
                ChatEvent::ToolCallEnd { index: 1 },
                ChatEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    usage: Usage::default()
                },
            ]
        );
    }

    #[test]
    fn calls_at_one_index_with_different_ids_are_different_calls_and_stop_means_tool_calls() {
        // Ollama: every complete call at index 0, then `stop`.
        let mut t = Translator::new();
        let mut items = feed(
            &mut t,
            &[
                delta(json!({"tool_calls": [{"index": 0, "id": "x1",
                    "function": {"name": "a", "arguments": "{\"n\":1}"}}]})),
                delta(json!({"tool_calls": [{"index": 0, "id": "x2",
                    "function": {"name": "b", "arguments": "{\"n\":2}"}}]})),
                finish("stop"),
            ],
        );
        items.extend(t.event("message", "[DONE]"));
        let events = events(items);
        assert_eq!(
            events[2],
            ChatEvent::ToolCallStart {
                index: 1,
                id: "x2".into(),
                name: "b".into()
            }
        );
        assert_eq!(
            events.last(),
            Some(&ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage::default()
            })
        );
    }

    #[test]
    fn a_call_without_an_id_starts_with_a_made_up_one_and_its_early_arguments() {
        let mut t = Translator::new();
        let items = feed(
            &mut t,
            &[
                delta(
                    json!({"tool_calls": [{"function": {"name": "lookup", "arguments": "{\"q\""}}]}),
                ),
                delta(json!({"tool_calls": [{"function": {"arguments": ":1}"}}]})),
                finish("tool_calls"),
            ],
        );
        assert_eq!(
            events(items),
            [
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "call_0".into(),
                    name: "lookup".into()
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "{\"q\":1}".into()
                },
                ChatEvent::ToolCallEnd { index: 0 },
            ]
        );
    }

    #[test]
    fn an_error_object_fails_the_stream_with_the_upstream_message() {
        let mut t = Translator::new();
        let items = feed(
            &mut t,
            &[
                delta(json!({"content": "par"})),
                json!({"error": {"message": "model overloaded", "type": "server_error", "code": "503"}}),
            ],
        );
        assert_eq!(items[0], Ok(ChatEvent::TextDelta("par".into())));
        assert_eq!(
            items[1],
            Err(ProviderError::Upstream {
                status: Some(503),
                message: "model overloaded".into()
            })
        );
        assert!(t.is_done());
        assert!(t.end().is_empty());
    }

    #[test]
    fn an_error_event_and_garbage_are_failures() {
        let mut t = Translator::new();
        assert_eq!(
            t.event("error", "boom"),
            [Err(ProviderError::Upstream {
                status: None,
                message: "boom".into()
            })]
        );
        let mut t = Translator::new();
        assert!(matches!(
            t.event("message", "{not json")[..],
            [Err(ProviderError::Upstream { .. })]
        ));
    }

    #[test]
    fn the_end_of_the_stream_finishes_only_after_a_finish_reason() {
        let mut t = Translator::new();
        feed(&mut t, &[delta(json!({"content": "a"})), finish("length")]);
        assert_eq!(
            events(t.end()),
            [ChatEvent::Finish {
                reason: FinishReason::Length,
                usage: Usage::default()
            }]
        );
        let mut t = Translator::new();
        feed(&mut t, &[delta(json!({"content": "a"}))]);
        assert!(matches!(
            t.end()[..],
            [Err(ProviderError::Upstream { status: None, .. })]
        ));
        let mut t = Translator::new();
        feed(&mut t, &[delta(json!({"content": "a"}))]);
        assert_eq!(t.silence(), [Err(ProviderError::Timeout)]);
        let mut t = Translator::new();
        feed(&mut t, &[finish("content_filter")]);
        assert_eq!(
            events(t.silence()),
            [ChatEvent::Finish {
                reason: FinishReason::ContentFilter,
                usage: Usage::default()
            }]
        );
    }

    #[test]
    fn a_whole_answer_translates_like_a_stream() {
        let mut t = Translator::new();
        let body = json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me check.", "reasoning_content": "why",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "[]"}}
                ]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}
        });
        let events = events(t.whole(body.to_string().as_bytes()));
        assert_eq!(events.len(), 9, "{events:?}");
        assert_eq!(events[0], ChatEvent::ReasoningDelta("why".into()));
        assert_eq!(events[1], ChatEvent::TextDelta("Let me check.".into()));
        assert_eq!(
            events[4],
            ChatEvent::ToolCallStart {
                index: 1,
                id: "c2".into(),
                name: "b".into()
            }
        );
        assert_eq!(
            events[8],
            ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    reasoning_tokens: 0,
                    cached_input_tokens: 0
                }
            }
        );
    }

    /// OpenAI's usage as its API sends it (`gpt-4o-mini`, a prompt whose first 1,792 tokens
    /// were cached): the cache reads are part of the prompt tokens, streamed or not.
    #[test]
    fn cached_prompt_tokens_are_cached_input_tokens() {
        let usage = json!({"prompt_tokens": 1922, "completion_tokens": 11, "total_tokens": 1933,
            "prompt_tokens_details": {"cached_tokens": 1792, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}});
        let expected = ChatEvent::Finish {
            reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 1922,
                output_tokens: 11,
                reasoning_tokens: 0,
                cached_input_tokens: 1792,
            },
        };
        let mut t = Translator::new();
        let mut items = feed(
            &mut t,
            &[
                json!({"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion.chunk",
                    "created": 1741570283, "model": "gpt-4o-mini-2024-07-18", "service_tier": "default",
                    "system_fingerprint": "fp_06737a9306", "choices": [{"index": 0,
                    "delta": {"content": "Paris."}, "logprobs": null, "finish_reason": "stop"}],
                    "usage": null}),
                json!({"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion.chunk",
                    "created": 1741570283, "model": "gpt-4o-mini-2024-07-18", "service_tier": "default",
                    "system_fingerprint": "fp_06737a9306", "choices": [], "usage": usage}),
            ],
        );
        items.extend(t.event("message", "[DONE]"));
        assert_eq!(
            events(items),
            [ChatEvent::TextDelta("Paris.".into()), expected.clone()]
        );

        let mut t = Translator::new();
        let body = json!({"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion",
            "created": 1741570283, "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Paris.", "refusal": null,
                "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
            "usage": usage, "service_tier": "default", "system_fingerprint": "fp_06737a9306"});
        assert_eq!(
            events(t.whole(body.to_string().as_bytes())),
            [ChatEvent::TextDelta("Paris.".into()), expected]
        );
    }
}
