//! Generation events as the Responses API's stream: `response.created` and
//! `response.in_progress`, then for the passages the answer is grounded on a
//! `file_search_call` item (`response.file_search_call.in_progress`, `.searching`,
//! `.completed`), for the answer's text `response.output_item.added`,
//! `response.content_part.added`, `response.output_text.delta`…, its citations
//! (`response.output_text.annotation.added`) and their `.done` events,
//! for each function call `response.output_item.added`,
//! `response.function_call_arguments.delta`… `.done` and `response.output_item.done`, and
//! last `response.completed` (or `response.incomplete`, `response.failed`) with the whole
//! response. Every event carries its `type` and a `sequence_number` counted from 0. Tools
//! Tessera runs itself (MCP) stay inside, as in the chat completions stream.

use serde_json::{Value, json};
use tessera_chats::{GenerationEvent, MessageId, Source};
use tessera_models::ChatEvent;

use super::{
    error::Failure,
    file_search::{citations, file_search_call, search_item_id},
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
    /// The passages the answer is grounded on: its text's citations name their files.
    sources: Vec<Source>,
    /// Whether the `file_search_call` item was sent.
    search_shown: bool,
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
            sources: Vec::new(),
            search_shown: false,
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
        let annotations = citations(&text, &self.sources);
        for (annotation_index, annotation) in annotations.iter().enumerate() {
            let mut added = located.clone();
            added["annotation_index"] = json!(annotation_index);
            added["annotation"] = annotation.clone();
            self.emit(out, "response.output_text.annotation.added", added);
        }
        let mut done = located.clone();
        done["text"] = json!(text);
        done["logprobs"] = json!([]);
        self.emit(out, "response.output_text.done", done);
        let mut part = located;
        part["part"] = output_text(&text, annotations.clone());
        self.emit(out, "response.content_part.done", part);
        let item = json!({
            "type": "message", "id": item_id, "status": "completed", "role": "assistant",
            "content": [output_text(&text, annotations)],
        });
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
    }

    /// The search the passages came from, as one item: it ran before the model began.
    fn show_search(&mut self, out: &mut Vec<String>, sources: &[Source]) {
        self.search_shown = true;
        self.sources = sources.to_vec();
        let output_index = self.outputs;
        self.outputs += 1;
        let (question, search) = (
            self.echo.question.as_deref(),
            self.echo.file_search.as_ref(),
        );
        let item = |status| file_search_call(&self.message, question, search, sources, status);
        let added = json!({"output_index": output_index, "item": item("in_progress")});
        let done = json!({"output_index": output_index, "item": item("completed")});
        self.emit(out, "response.output_item.added", added);
        let located =
            json!({"item_id": search_item_id(&self.message), "output_index": output_index});
        for step in ["in_progress", "searching", "completed"] {
            let kind = format!("response.file_search_call.{step}");
            self.emit(out, &kind, located.clone());
        }
        self.emit(out, "response.output_item.done", done);
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
        // The tool's search found nothing (no sources come): its item is shown all the same.
        let sources_come = matches!(event, GenerationEvent::Sources(_));
        if self.echo.file_search.is_some() && !self.search_shown && !sources_come {
            self.show_search(&mut out, &[]);
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
                                "part": output_text("", Vec::new()),
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
            GenerationEvent::Sources(sources) => self.show_search(&mut out, sources),
            GenerationEvent::Delta(
                ChatEvent::ReasoningDelta(_) | ChatEvent::Finish { .. } | ChatEvent::Routed(_),
            )
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
