//! Generation events as Anthropic's message stream: `message_start` and a `ping`, then
//! for each block of the answer `content_block_start`, its deltas (`thinking_delta`,
//! `text_delta`, `input_json_delta`) and `content_block_stop`, then `message_delta` with the
//! stop reason and the usage, and `message_stop`. A failure after the stream began is one
//! `error` event, as Anthropic sends it. Tools Tessera runs itself stay inside.

use serde_json::{Value, json};
use tessera_chats::{GenerationEvent, Source};
use tessera_models::ChatEvent;

use super::{
    error::Failure,
    message::{AnthropicUsage, stop_reason},
};
use crate::chat::SourceOut;

/// The kind of the block being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Thinking,
    Text,
    /// A tool call, by its index among the answer's calls.
    Tool(u32),
}

/// Encodes one answer's events.
pub struct MessageEncoder {
    id: String,
    model: String,
    show_thinking: bool,
    failure: Failure,
    began: bool,
    /// The block being written and its index.
    open: Option<(Open, usize)>,
    /// Blocks started so far.
    blocks: usize,
    /// Each tool call's block, by the call's index.
    tool_blocks: Vec<(u32, usize)>,
    sources: Vec<Source>,
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

impl MessageEncoder {
    pub fn new(id: String, model: String, show_thinking: bool, failure: Failure) -> Self {
        Self {
            id,
            model,
            show_thinking,
            failure,
            began: false,
            open: None,
            blocks: 0,
            tool_blocks: Vec::new(),
            sources: Vec::new(),
        }
    }

    fn close(&mut self, out: &mut Vec<String>) {
        if let Some((_, index)) = self.open.take() {
            out.push(event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }

    /// The index of a block of this kind, closing the open one and starting it if needed.
    fn block(&mut self, kind: Open, start: Value, out: &mut Vec<String>) -> usize {
        if let Some((open, index)) = self.open
            && open == kind
        {
            return index;
        }
        self.close(out);
        let index = self.blocks;
        self.blocks += 1;
        self.open = Some((kind, index));
        out.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        index
    }

    fn delta(index: usize, delta: Value) -> String {
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    }

    /// The SSE frames (`event:` and `data:` lines and a blank line each) this event adds.
    pub fn encode(&mut self, generation: &GenerationEvent) -> Vec<String> {
        let mut out = Vec::new();
        if !self.began {
            self.began = true;
            out.push(event(
                "message_start",
                &json!({"type": "message_start", "message": {
                    "id": self.id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    // The prompt's tokens are known when the answer ends (`message_delta`).
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                }}),
            ));
            out.push(event("ping", &json!({"type": "ping"})));
        }
        match generation {
            GenerationEvent::Sources(sources) => self.sources.clone_from(sources),
            GenerationEvent::Delta(ChatEvent::ReasoningDelta(text)) => {
                let start = json!({"type": "thinking", "thinking": "", "signature": ""});
                let index = self.block(Open::Thinking, start, &mut out);
                if self.show_thinking && !text.is_empty() {
                    out.push(Self::delta(
                        index,
                        json!({"type": "thinking_delta", "thinking": text}),
                    ));
                }
            }
            GenerationEvent::Delta(ChatEvent::TextDelta(text)) => {
                if !text.is_empty() {
                    let index =
                        self.block(Open::Text, json!({"type": "text", "text": ""}), &mut out);
                    out.push(Self::delta(
                        index,
                        json!({"type": "text_delta", "text": text}),
                    ));
                }
            }
            GenerationEvent::Delta(ChatEvent::ToolCallStart { index, id, name }) => {
                let start = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
                let block = self.block(Open::Tool(*index), start, &mut out);
                self.tool_blocks.push((*index, block));
            }
            GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta { index, delta }) => {
                // Providers stream one call at a time; a late piece of an earlier call
                // still goes to its own block.
                if let Some(&(_, block)) = self.tool_blocks.iter().find(|(call, _)| call == index) {
                    out.push(Self::delta(
                        block,
                        json!({"type": "input_json_delta", "partial_json": delta}),
                    ));
                }
            }
            GenerationEvent::Delta(ChatEvent::ToolCallEnd { index }) => {
                if self
                    .open
                    .is_some_and(|(open, _)| open == Open::Tool(*index))
                {
                    self.close(&mut out);
                }
            }
            GenerationEvent::Delta(ChatEvent::Finish { .. } | ChatEvent::Routed(_))
            | GenerationEvent::ServerToolDelta(_)
            | GenerationEvent::ToolResult(_)
            | GenerationEvent::StepStarted => {}
            GenerationEvent::Finished(message) => {
                self.close(&mut out);
                let usage = message.usage.as_ref();
                let mut delta = json!({
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": stop_reason(usage.map(|usage| &usage.finish_reason)),
                        "stop_sequence": null,
                    },
                    "usage": AnthropicUsage::of(&usage.map(|usage| usage.usage).unwrap_or_default()),
                });
                if !self.sources.is_empty() {
                    let sources: Vec<SourceOut> =
                        self.sources.iter().map(SourceOut::from).collect();
                    delta["sources"] = json!(sources);
                }
                out.push(event("message_delta", &delta));
                out.push(event("message_stop", &json!({"type": "message_stop"})));
            }
            GenerationEvent::Failed(error) => {
                out.push(event("error", &json!((self.failure)(error))));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anthropic::error::AnthropicError;

    fn failure(_: &tessera_chats::ChatError) -> AnthropicError {
        AnthropicError::new("overloaded_error", "Overloaded")
    }

    fn names(frames: &[String]) -> Vec<String> {
        frames
            .iter()
            .map(|frame| {
                let data: Value = serde_json::from_str(
                    frame.lines().nth(1).unwrap().trim_start_matches("data: "),
                )
                .unwrap();
                let name = frame.lines().next().unwrap().trim_start_matches("event: ");
                assert_eq!(data["type"], name, "{frame}");
                match data["delta"]["type"].as_str() {
                    Some(delta) if name == "content_block_delta" => {
                        format!("{name}:{delta}:{}", data["index"])
                    }
                    _ if name.starts_with("content_block") => format!("{name}:{}", data["index"]),
                    _ => name.to_owned(),
                }
            })
            .collect()
    }

    #[test]
    fn blocks_open_and_close_in_anthropics_order() {
        let mut encoder = MessageEncoder::new("msg_1".into(), "m".into(), true, failure);
        let mut frames = Vec::new();
        for event in [
            ChatEvent::ReasoningDelta("hm".into()),
            ChatEvent::TextDelta("Let me".into()),
            ChatEvent::TextDelta(" check.".into()),
            ChatEvent::ToolCallStart {
                index: 0,
                id: "t0".into(),
                name: "f".into(),
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: "{\"a\":".into(),
            },
            ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: "1}".into(),
            },
            ChatEvent::ToolCallEnd { index: 0 },
            ChatEvent::ToolCallStart {
                index: 1,
                id: "t1".into(),
                name: "g".into(),
            },
        ] {
            frames.extend(encoder.encode(&GenerationEvent::Delta(event)));
        }
        assert_eq!(
            names(&frames),
            [
                "message_start",
                "ping",
                "content_block_start:0",
                "content_block_delta:thinking_delta:0",
                "content_block_stop:0",
                "content_block_start:1",
                "content_block_delta:text_delta:1",
                "content_block_delta:text_delta:1",
                "content_block_stop:1",
                "content_block_start:2",
                "content_block_delta:input_json_delta:2",
                "content_block_delta:input_json_delta:2",
                "content_block_stop:2",
                "content_block_start:3",
            ]
        );
    }

    #[test]
    fn omitted_thinking_keeps_its_block_without_text() {
        let mut encoder = MessageEncoder::new("msg_1".into(), "m".into(), false, failure);
        let frames = encoder.encode(&GenerationEvent::Delta(ChatEvent::ReasoningDelta(
            "secret".into(),
        )));
        assert_eq!(
            names(&frames),
            ["message_start", "ping", "content_block_start:0"]
        );
        assert!(!frames.concat().contains("secret"));
    }
}
