//! Generation events as OpenAI `chat.completion.chunk` objects: a first chunk with the
//! role, content, reasoning (`reasoning_content`) and tool-call deltas, a last chunk with
//! the finish reason (and the RAG sources, Tessera's extension), an optional usage chunk
//! without choices (`stream_options.include_usage`), then `data: [DONE]`. A failure after
//! the stream began is one `data: {"error": …}` event, as OpenAI sends it.

use serde_json::{Value, json};
use tessera_chats::{GenerationEvent, Source};
use tessera_models::ChatEvent;

use super::{
    chat::{CompletionUsage, finish_reason},
    error::Failure,
};
use crate::chat::SourceOut;

/// Encodes one completion's events as chunks.
pub struct ChunkEncoder {
    id: String,
    created: i64,
    model: String,
    include_usage: bool,
    began: bool,
    sources: Vec<Source>,
    failure: Failure,
}

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

impl ChunkEncoder {
    pub fn new(
        id: String,
        created: i64,
        model: String,
        include_usage: bool,
        failure: Failure,
    ) -> Self {
        Self {
            id,
            created,
            model,
            include_usage,
            began: false,
            sources: Vec::new(),
            failure,
        }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> String {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
        });
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        data(&chunk)
    }

    /// The SSE frames (`data: …` and a blank line each) this event adds.
    pub fn encode(&mut self, event: &GenerationEvent) -> Vec<String> {
        let mut out = Vec::new();
        if !self.began {
            self.began = true;
            out.push(self.chunk(json!({"role": "assistant", "content": ""}), None));
        }
        match event {
            GenerationEvent::Sources(sources) => self.sources.clone_from(sources),
            GenerationEvent::Delta(ChatEvent::TextDelta(text)) => {
                out.push(self.chunk(json!({"content": text}), None));
            }
            GenerationEvent::Delta(ChatEvent::ReasoningDelta(text)) => {
                out.push(self.chunk(json!({"reasoning_content": text}), None));
            }
            GenerationEvent::Delta(ChatEvent::ToolCallStart { index, id, name }) => {
                out.push(self.chunk(
                    json!({"tool_calls": [{
                        "index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }]}),
                    None,
                ));
            }
            GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta { index, delta }) => {
                out.push(self.chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": delta}}]}),
                    None,
                ));
            }
            // Tools Tessera runs itself stay inside: an OpenAI client sees only the answer.
            GenerationEvent::Delta(
                ChatEvent::ToolCallEnd { .. } | ChatEvent::Finish { .. } | ChatEvent::Routed(_),
            )
            | GenerationEvent::ServerToolDelta(_)
            | GenerationEvent::ToolResult(_)
            | GenerationEvent::StepStarted => {}
            GenerationEvent::Finished(message) => {
                let mut delta = json!({});
                if !self.sources.is_empty() {
                    let sources: Vec<SourceOut> =
                        self.sources.iter().map(SourceOut::from).collect();
                    delta["sources"] = json!(sources);
                }
                out.push(self.chunk(delta, Some(&finish_reason(message))));
                if self.include_usage {
                    out.push(data(&json!({
                        "id": self.id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "system_fingerprint": null,
                        "choices": [],
                        "usage": CompletionUsage::of(message),
                    })));
                }
                out.push("data: [DONE]\n\n".to_owned());
            }
            GenerationEvent::Failed(error) => {
                out.push(data(&json!((self.failure)(error))));
            }
        }
        out
    }
}
