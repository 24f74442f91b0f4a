//! Generation events as `/v1`'s two stream formats: Tessera's own chunks (`{id, delta,
//! finished}`, the interface's default; tool calls, server-run tool results, steps and
//! sources on their own chunks; the final chunk with the answer's id, tool calls, finish
//! reason and usage, or the problem of a failure) and the Vercel AI SDK UI message stream
//! (protocol v1 of `ai` v5+: text, reasoning and tool parts, source documents, steps). Each
//! event becomes SSE frames (`data: …` and a blank line); both end with `data: [DONE]`.

use serde::Serialize;
use serde_json::{Value, json};
use tessera_chats::{ChatError, ChatId, GenerationEvent, Message, MessageId};
use tessera_models::ChatEvent;
use utoipa::ToSchema;

use crate::chat::{SourceOut, TokenUsageOut, ToolCallOut};

/// One chunk of the default format.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamChunk {
    /// The chat's id.
    pub id: String,
    /// New answer text; empty on every other kind of chunk and on the final one.
    pub delta: String,
    /// True on the last chunk (followed by `data: [DONE]`).
    pub finished: bool,
    /// New reasoning text (`enableReasoning`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Progress of a tool call: `index`, and `id` and `name` when it starts, then
    /// `arguments` deltas; `server: true` on calls of tools Tessera runs itself (those of
    /// the MCP servers linked to the model), whose result follows in `toolResult`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub tool_call: Option<Value>,
    /// The result of a server-run tool call: `toolCallId`, `name`, `content` (what the model
    /// reads next) and `isError` (the tool failed or timed out).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub tool_result: Option<Value>,
    /// The model is asked again after tool results: the number of the step that begins
    /// (2 for the second model call, ...); tool call indexes start again from 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// Retrieved passages the answer is grounded on (one chunk, before the answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<SourceOut>>,
    /// Final chunk: the stored answer's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Final chunk: the complete tool calls of the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallOut>>,
    /// Final chunk: `stop`, `length`, `tool_calls`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Final chunk of a successful answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsageOut>,
    /// Final chunk of a failed generation: the problem, as an error response would carry it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
}

impl StreamChunk {
    fn new(chat: &ChatId) -> Self {
        Self {
            id: chat.to_string(),
            delta: String::new(),
            finished: false,
            reasoning: None,
            tool_call: None,
            tool_result: None,
            step: None,
            sources: None,
            message_id: None,
            tool_calls: None,
            finish_reason: None,
            usage: None,
            error: None,
        }
    }
}

fn data(value: &impl Serialize) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    format!("data: {json}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";

/// Encodes generation events as default-format chunks.
pub struct TesseraEncoder {
    chat: ChatId,
    /// The model call under way, from 1.
    step: u32,
    problem: Problem,
}

/// The problem+json body a failed generation ends a default-format stream with, as the
/// error response would carry it. The server decides it (it owns what each error means).
pub type Problem = fn(&ChatError) -> Value;

impl TesseraEncoder {
    pub fn new(chat: ChatId, problem: Problem) -> Self {
        Self {
            chat,
            step: 1,
            problem,
        }
    }

    /// The SSE frames this event adds.
    pub fn encode(&mut self, event: &GenerationEvent) -> Vec<String> {
        let mut chunk = StreamChunk::new(&self.chat);
        match event {
            GenerationEvent::Sources(sources) => {
                chunk.sources = Some(sources.iter().map(SourceOut::from).collect());
            }
            GenerationEvent::Delta(ChatEvent::TextDelta(text)) => chunk.delta.clone_from(text),
            GenerationEvent::Delta(ChatEvent::ReasoningDelta(text)) => {
                chunk.reasoning = Some(text.clone());
            }
            GenerationEvent::Delta(ChatEvent::ToolCallStart { index, id, name }) => {
                chunk.tool_call = Some(json!({"index": index, "id": id, "name": name}));
            }
            GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta { index, delta }) => {
                chunk.tool_call = Some(json!({"index": index, "arguments": delta}));
            }
            GenerationEvent::Delta(
                ChatEvent::ToolCallEnd { .. } | ChatEvent::Finish { .. } | ChatEvent::Routed(_),
            )
            | GenerationEvent::ServerToolDelta(
                ChatEvent::ToolCallEnd { .. }
                | ChatEvent::Finish { .. }
                | ChatEvent::Routed(_)
                | ChatEvent::TextDelta(_)
                | ChatEvent::ReasoningDelta(_),
            ) => {
                return Vec::new();
            }
            GenerationEvent::ServerToolDelta(ChatEvent::ToolCallStart { index, id, name }) => {
                chunk.tool_call =
                    Some(json!({"index": index, "id": id, "name": name, "server": true}));
            }
            GenerationEvent::ServerToolDelta(ChatEvent::ToolCallArgumentsDelta {
                index,
                delta,
            }) => {
                chunk.tool_call = Some(json!({"index": index, "arguments": delta, "server": true}));
            }
            GenerationEvent::ToolResult(result) => {
                chunk.tool_result = Some(json!({
                    "toolCallId": result.tool_call_id,
                    "name": result.name,
                    "content": result.content,
                    "isError": result.is_error,
                }));
            }
            GenerationEvent::StepStarted => {
                self.step += 1;
                chunk.step = Some(self.step);
            }
            GenerationEvent::Finished(message) => {
                chunk.finished = true;
                chunk.message_id = Some(message.id.to_string());
                if !message.tool_calls.is_empty() {
                    chunk.tool_calls =
                        Some(message.tool_calls.iter().map(ToolCallOut::from).collect());
                }
                if let Some(usage) = &message.usage {
                    chunk.finish_reason = Some(usage.finish_reason.as_str().to_owned());
                    chunk.usage = Some(TokenUsageOut::from(&usage.usage));
                }
                return vec![data(&chunk), DONE.to_owned()];
            }
            GenerationEvent::Failed(error) => {
                chunk.finished = true;
                chunk.error = Some((self.problem)(error));
                return vec![data(&chunk), DONE.to_owned()];
            }
        }
        vec![data(&chunk)]
    }
}

/// What the AI SDK stream has open: a text or reasoning part receives deltas until
/// something else starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    None,
    Text(u32),
    Reasoning(u32),
}

/// Encodes generation events as the AI SDK UI message stream (protocol v1 of `ai` v5+).
pub struct AiSdkEncoder {
    message: MessageId,
    started: bool,
    open: Part,
    parts: u32,
    /// Tool calls by stream index: id, name and the arguments so far.
    tools: Vec<(u32, String, String, String)>,
}

impl AiSdkEncoder {
    pub fn new(message: MessageId) -> Self {
        Self {
            message,
            started: false,
            open: Part::None,
            parts: 0,
            tools: Vec::new(),
        }
    }

    fn close(&mut self, out: &mut Vec<String>) {
        match self.open {
            Part::Text(n) => out.push(data(&json!({"type": "text-end", "id": format!("t{n}")}))),
            Part::Reasoning(n) => {
                out.push(data(
                    &json!({"type": "reasoning-end", "id": format!("r{n}")}),
                ));
            }
            Part::None => {}
        }
        self.open = Part::None;
    }

    fn begin(&mut self, out: &mut Vec<String>) {
        if !self.started {
            self.started = true;
            out.push(data(
                &json!({"type": "start", "messageId": self.message.to_string()}),
            ));
            out.push(data(&json!({"type": "start-step"})));
        }
    }

    /// The SSE frames this event adds.
    pub fn encode(&mut self, event: &GenerationEvent) -> Vec<String> {
        let mut out = Vec::new();
        self.begin(&mut out);
        match event {
            GenerationEvent::Sources(sources) => {
                self.close(&mut out);
                for source in sources {
                    let mut part = json!({
                        "type": "source-document",
                        "sourceId": source.id,
                        "mediaType": "text/plain",
                        "title": source.title.clone().unwrap_or_else(|| source.file_id.clone()),
                    });
                    if let Some(name) = &source.file_name {
                        part["filename"] = json!(name);
                    }
                    out.push(data(&part));
                }
            }
            GenerationEvent::Delta(ChatEvent::TextDelta(text)) => {
                let id = match self.open {
                    Part::Text(n) => n,
                    _ => {
                        self.close(&mut out);
                        let n = self.next_part();
                        self.open = Part::Text(n);
                        out.push(data(&json!({"type": "text-start", "id": format!("t{n}")})));
                        n
                    }
                };
                out.push(data(
                    &json!({"type": "text-delta", "id": format!("t{id}"), "delta": text}),
                ));
            }
            GenerationEvent::Delta(ChatEvent::ReasoningDelta(text)) => {
                let id = match self.open {
                    Part::Reasoning(n) => n,
                    _ => {
                        self.close(&mut out);
                        let n = self.next_part();
                        self.open = Part::Reasoning(n);
                        out.push(data(
                            &json!({"type": "reasoning-start", "id": format!("r{n}")}),
                        ));
                        n
                    }
                };
                out.push(data(
                    &json!({"type": "reasoning-delta", "id": format!("r{id}"), "delta": text}),
                ));
            }
            GenerationEvent::Delta(ChatEvent::ToolCallStart { index, id, name }) => {
                self.close(&mut out);
                self.tools
                    .push((*index, id.clone(), name.clone(), String::new()));
                out.push(data(&json!({
                    "type": "tool-input-start", "toolCallId": id, "toolName": name
                })));
            }
            GenerationEvent::ServerToolDelta(ChatEvent::ToolCallStart { index, id, name }) => {
                self.close(&mut out);
                self.tools
                    .push((*index, id.clone(), name.clone(), String::new()));
                // Run by Tessera: `useChat` shows them as dynamic tools it need not execute.
                out.push(data(&json!({
                    "type": "tool-input-start", "toolCallId": id, "toolName": name,
                    "providerExecuted": true, "dynamic": true
                })));
            }
            GenerationEvent::ServerToolDelta(ChatEvent::ToolCallEnd { index }) => {
                if let Some(tool) = self.tools.iter().find(|t| t.0 == *index) {
                    out.push(tool_available(&tool.1, &tool.2, &tool.3, true));
                }
            }
            GenerationEvent::ToolResult(result) => {
                let part = if result.is_error {
                    json!({
                        "type": "tool-output-error", "toolCallId": result.tool_call_id,
                        "errorText": result.content, "providerExecuted": true, "dynamic": true
                    })
                } else {
                    json!({
                        "type": "tool-output-available", "toolCallId": result.tool_call_id,
                        "output": result.content, "providerExecuted": true, "dynamic": true
                    })
                };
                out.push(data(&part));
            }
            GenerationEvent::StepStarted => {
                self.close(&mut out);
                self.tools.clear();
                out.push(data(&json!({"type": "finish-step"})));
                out.push(data(&json!({"type": "start-step"})));
            }
            GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta { index, delta })
            | GenerationEvent::ServerToolDelta(ChatEvent::ToolCallArgumentsDelta {
                index,
                delta,
            }) => {
                if let Some(tool) = self.tools.iter_mut().find(|t| t.0 == *index) {
                    tool.3.push_str(delta);
                    out.push(data(&json!({
                        "type": "tool-input-delta", "toolCallId": tool.1, "inputTextDelta": delta
                    })));
                }
            }
            GenerationEvent::Delta(ChatEvent::ToolCallEnd { index }) => {
                if let Some(tool) = self.tools.iter().find(|t| t.0 == *index) {
                    out.push(tool_available(&tool.1, &tool.2, &tool.3, false));
                }
            }
            GenerationEvent::Delta(ChatEvent::Finish { .. } | ChatEvent::Routed(_))
            | GenerationEvent::ServerToolDelta(_) => {}
            GenerationEvent::Finished(message) => {
                self.close(&mut out);
                out.push(data(&json!({"type": "finish-step"})));
                out.push(data(&json!({
                    "type": "finish",
                    "finishReason": ai_sdk_finish_reason(message),
                    "messageMetadata": finish_metadata(message),
                })));
                out.push(DONE.to_owned());
            }
            GenerationEvent::Failed(error) => {
                self.close(&mut out);
                out.push(data(&json!({
                    "type": "error",
                    "errorText": error.to_string(),
                })));
                out.push(DONE.to_owned());
            }
        }
        out
    }

    fn next_part(&mut self) -> u32 {
        self.parts += 1;
        self.parts - 1
    }
}

fn tool_available(id: &str, name: &str, arguments: &str, server: bool) -> String {
    let input: Value = serde_json::from_str(arguments).unwrap_or(Value::String(arguments.into()));
    let mut part = json!({
        "type": "tool-input-available", "toolCallId": id, "toolName": name, "input": input
    });
    if server {
        part["providerExecuted"] = json!(true);
        part["dynamic"] = json!(true);
    }
    data(&part)
}

/// The AI SDK's spelling of why an answer ended (a closed set).
fn ai_sdk_finish_reason(message: &Message) -> &'static str {
    match message.usage.as_ref().map(|u| u.finish_reason.as_str()) {
        Some("stop") | None => "stop",
        Some("length") => "length",
        Some("tool_calls") => "tool-calls",
        Some("content_filter") => "content-filter",
        Some(_) => "other",
    }
}

fn finish_metadata(message: &Message) -> Value {
    json!({
        "chatId": message.chat_id.to_string(),
        "finishReason": message.usage.as_ref().map(|u| u.finish_reason.as_str()),
        "usage": message.usage.as_ref().map(|u| TokenUsageOut::from(&u.usage)),
    })
}
