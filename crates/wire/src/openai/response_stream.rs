//! Generation events as the Responses API's stream: `response.created` and
//! `response.in_progress`, then for the answer's text `response.output_item.added`,
//! `response.content_part.added`, `response.output_text.delta`… and their `.done` events,
//! for each function call `response.output_item.added`,
//! `response.function_call_arguments.delta`… `.done` and `response.output_item.done`, and
//! last `response.completed` (or `response.incomplete`, `response.failed`) with the whole
//! response. Every event carries its `type` and a `sequence_number` counted from 0. Tools
//! Tessera runs itself (MCP) stay inside, as in the chat completions stream.

use serde_json::{Value, json};
use tessera_chats::{GenerationEvent, MessageId};
use tessera_models::ChatEvent;

use super::{
    error::Failure,
    response_object::{
        Echo, Status, call_item_id, function_call, message_item_id, output_text, response,
    },
};

/// A function call being streamed.
struct OpenCall {
    index: u32,
    output_index: usize,
    call_id: String,
    name: String,
    arguments: String,
}

/// Encodes one response's events.
pub struct ResponseEncoder {
    id: String,
    created_at: i64,
    echo: Echo,
    message: MessageId,
    sequence: u64,
    skip_through: Option<u64>,
    began: bool,
    outputs: usize,
    /// The text item's output index and its text so far, while it is open.
    text: Option<(usize, String)>,
    calls: Vec<OpenCall>,
    failure: Failure,
}

impl ResponseEncoder {
    pub fn new(
        id: String,
        created_at: i64,
        echo: Echo,
        message: MessageId,
        failure: Failure,
    ) -> Self {
        Self {
            id,
            created_at,
            echo,
            message,
            sequence: 0,
            skip_through: None,
            began: false,
            outputs: 0,
            text: None,
            calls: Vec::new(),
            failure,
        }
    }

    /// Resumes a stream: events up to and including this sequence number are not sent
    /// (they are still counted, so the rest keep their numbers).
    pub fn starting_after(mut self, sequence: Option<u64>) -> Self {
        self.skip_through = sequence;
        self
    }

    fn emit(&mut self, out: &mut Vec<String>, kind: &str, mut body: Value) {
        let sequence = self.sequence;
        self.sequence += 1;
        if self.skip_through.is_some_and(|skip| sequence <= skip) {
            return;
        }
        body["type"] = json!(kind);
        body["sequence_number"] = json!(sequence);
        out.push(format!("event: {kind}\ndata: {body}\n\n"));
    }

    fn in_progress(&self) -> Value {
        response(
            &self.id,
            self.created_at,
            &self.echo,
            Status::InProgress,
            None,
            None,
        )
    }

    fn close_text(&mut self, out: &mut Vec<String>) {
        let Some((output_index, text)) = self.text.take() else {
            return;
        };
        let item_id = message_item_id(&self.message);
        let located = json!({"item_id": item_id, "output_index": output_index, "content_index": 0});
        let mut done = located.clone();
        done["text"] = json!(text);
        done["logprobs"] = json!([]);
        self.emit(out, "response.output_text.done", done);
        let mut part = located;
        part["part"] = output_text(&text);
        self.emit(out, "response.content_part.done", part);
        let item = json!({
            "type": "message", "id": item_id, "status": "completed", "role": "assistant",
            "content": [output_text(&text)],
        });
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
    }

    fn close_call(&mut self, out: &mut Vec<String>, position: usize) {
        let call = self.calls.remove(position);
        let item_id = call_item_id(&call.call_id);
        self.emit(
            out,
            "response.function_call_arguments.done",
            json!({
                "item_id": item_id, "output_index": call.output_index,
                "name": call.name, "arguments": call.arguments,
            }),
        );
        self.emit(
            out,
            "response.output_item.done",
            json!({
                "output_index": call.output_index,
                "item": function_call(&call.call_id, &call.name, &call.arguments, "completed"),
            }),
        );
    }

    fn close_all(&mut self, out: &mut Vec<String>) {
        self.close_text(out);
        while !self.calls.is_empty() {
            self.close_call(out, 0);
        }
    }

    /// The SSE frames (`event:` and `data:` lines and a blank line each) this event adds.
    pub fn encode(&mut self, event: &GenerationEvent) -> Vec<String> {
        let mut out = Vec::new();
        if !self.began {
            self.began = true;
            let created = json!({"response": self.in_progress()});
            self.emit(&mut out, "response.created", created);
            let progress = json!({"response": self.in_progress()});
            self.emit(&mut out, "response.in_progress", progress);
        }
        match event {
            GenerationEvent::Delta(ChatEvent::TextDelta(delta)) => {
                let item_id = message_item_id(&self.message);
                let output_index = match &self.text {
                    Some((index, _)) => *index,
                    None => {
                        let index = self.outputs;
                        self.outputs += 1;
                        self.text = Some((index, String::new()));
                        let item = json!({
                            "type": "message", "id": item_id, "status": "in_progress",
                            "role": "assistant", "content": [],
                        });
                        self.emit(
                            &mut out,
                            "response.output_item.added",
                            json!({"output_index": index, "item": item}),
                        );
                        self.emit(
                            &mut out,
                            "response.content_part.added",
                            json!({
                                "item_id": item_id, "output_index": index, "content_index": 0,
                                "part": output_text(""),
                            }),
                        );
                        index
                    }
                };
                if let Some((_, text)) = &mut self.text {
                    text.push_str(delta);
                }
                self.emit(
                    &mut out,
                    "response.output_text.delta",
                    json!({
                        "item_id": item_id, "output_index": output_index, "content_index": 0,
                        "delta": delta, "logprobs": [],
                    }),
                );
            }
            GenerationEvent::Delta(ChatEvent::ToolCallStart { index, id, name }) => {
                self.close_text(&mut out);
                let output_index = self.outputs;
                self.outputs += 1;
                self.calls.push(OpenCall {
                    index: *index,
                    output_index,
                    call_id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                });
                self.emit(
                    &mut out,
                    "response.output_item.added",
                    json!({
                        "output_index": output_index,
                        "item": function_call(id, name, "", "in_progress"),
                    }),
                );
            }
            GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta { index, delta }) => {
                if let Some(call) = self.calls.iter_mut().find(|call| call.index == *index) {
                    call.arguments.push_str(delta);
                    let body = json!({
                        "item_id": call_item_id(&call.call_id),
                        "output_index": call.output_index,
                        "delta": delta,
                    });
                    self.emit(&mut out, "response.function_call_arguments.delta", body);
                }
            }
            GenerationEvent::Delta(ChatEvent::ToolCallEnd { index }) => {
                if let Some(position) = self.calls.iter().position(|call| call.index == *index) {
                    self.close_call(&mut out, position);
                }
            }
            // Reasoning arrives whole on the final response; server-run tools stay inside.
            GenerationEvent::Delta(
                ChatEvent::ReasoningDelta(_) | ChatEvent::Finish { .. } | ChatEvent::Routed(_),
            )
            | GenerationEvent::Sources(_)
            | GenerationEvent::ServerToolDelta(_)
            | GenerationEvent::ToolResult(_)
            | GenerationEvent::StepStarted => {}
            GenerationEvent::Finished(message) => {
                self.close_all(&mut out);
                let status = Status::of(message);
                let kind = match status {
                    Status::Incomplete => "response.incomplete",
                    _ => "response.completed",
                };
                let whole = response(
                    &self.id,
                    self.created_at,
                    &self.echo,
                    status,
                    Some(message),
                    None,
                );
                self.emit(&mut out, kind, json!({"response": whole}));
            }
            GenerationEvent::Failed(error) => {
                let body = (self.failure)(error);
                let error = json!({"code": body.error.code, "message": body.error.message});
                let whole = response(
                    &self.id,
                    self.created_at,
                    &self.echo,
                    Status::Failed,
                    None,
                    Some(error),
                );
                self.emit(&mut out, "response.failed", json!({"response": whole}));
            }
        }
        out
    }
}
