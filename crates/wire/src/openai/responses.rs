//! OpenAI's Responses API over Tessera's chats: a response is an answer of a chat, its id
//! names both (`response_object::response_id`). Here: the request translated into the
//! chats domain's `CompletionRequest` (with the echo the response object repeats), the
//! response object of a stored chat's answer (completed, incomplete, in progress, failed or
//! cancelled), a stored answer replayed as generation events, and a turn's input items
//! paged as OpenAI pages them (decision 0031).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};
use tessera_chats::{
    CANCELLED, ChatId, ChatRecord, ChatStatus, CompletionRequest, EventStream, GenerationEvent,
    Message, MessageId, NewMessage,
};
use tessera_kernel::FieldError;
use tessera_knowledge::AttributeFilter;
use tessera_models::{ChatEvent, JsonSchemaFormat, Role, ToolCall, ToolChoice, ToolSpec};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::tool_choice::ToolChoiceIn;

use super::{
    chat::{ReasoningEffortIn, data_url},
    file_search::{SearchEcho, file_search_of},
    response_object::{Echo, Status, function_call, parse_response_id, response, response_id},
    unix,
};

/// How the answer's text is shaped.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormatIn {
    Text,
    /// Any JSON object.
    JsonObject,
    /// An answer that follows the schema (always constrained on Tessera's engine).
    JsonSchema {
        name: String,
        description: Option<String>,
        #[schema(value_type = Option<Object>)]
        schema: Option<Value>,
        strict: Option<bool>,
    },
}

/// Text options.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TextIn {
    pub format: Option<TextFormatIn>,
    /// Accepted and ignored.
    pub verbosity: Option<String>,
}

/// Reasoning options.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReasoningIn {
    pub effort: Option<ReasoningEffortIn>,
    /// Accepted; the reasoning comes back whole as a summary item.
    pub summary: Option<String>,
    /// Accepted; the same as `summary`.
    pub generate_summary: Option<String>,
}

/// A Responses API request. Parameters Tessera cannot honour are refused, never ignored.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateResponse {
    /// A catalog model id or one of the organization's models (`mdl_…`).
    #[validate(length(min = 1, max = 255))]
    #[schema(
        min_length = 1,
        max_length = 255,
        example = "local/smollm2-135m-instruct"
    )]
    pub model: String,
    /// A user message as text, or input items: messages (`role` and `content`, text and
    /// `input_image` parts), earlier `function_call`s and `function_call_output`s.
    #[schema(value_type = Object)]
    pub input: Value,
    /// Appended to the model's system prompt.
    pub instructions: Option<String>,
    /// Continue the conversation this response (the latest of its chat) belongs to.
    pub previous_response_id: Option<String>,
    /// Keep the exchange as a Tessera chat (default `true`).
    pub store: Option<bool>,
    pub stream: Option<bool>,
    /// Answer at once with status `queued`; poll `GET /openai/v1/responses/{id}`.
    pub background: Option<bool>,
    /// Function tools (`{"type": "function", "name", "description", "parameters"}`), and
    /// at most one `{"type": "file_search", "vector_store_ids": […], "max_num_results": n,
    /// "filters": …}` (1 to 10 stores, 1 to 50 results, default 10; `filters` on the files'
    /// attributes as a store's search takes them): the stores (datasets) are searched on the
    /// server with the turn's last user message before the model answers, and the response
    /// shows a `file_search_call` item and `file_citation` annotations.
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Vec<Value>>,
    /// `auto` (default), `none` (no function call and no file search), `required`,
    /// `{"type": "function", "name": …}` to force a call of that function, or
    /// `{"type": "file_search"}` (the search runs whenever the tool is given).
    #[schema(value_type = Option<crate::tool_choice::ToolChoiceIn>)]
    pub tool_choice: Option<Value>,
    pub text: Option<TextIn>,
    #[validate(range(min = 1))]
    pub max_output_tokens: Option<u32>,
    #[validate(range(min = 0.0, max = 2.0))]
    pub temperature: Option<f32>,
    #[validate(range(min = 0.0, max = 1.0))]
    pub top_p: Option<f32>,
    pub reasoning: Option<ReasoningIn>,
    /// At most 16 pairs, echoed on the response.
    #[validate(length(max = 16))]
    pub metadata: Option<HashMap<String, String>>,
    /// Accepted; the model decides how many calls it makes.
    pub parallel_tool_calls: Option<bool>,
    /// Accepted and ignored (usage is attributed to the credential).
    pub user: Option<String>,
    /// `file_search_call.results` shows the passages found on the `file_search_call`
    /// item; other values are accepted and ignored.
    pub include: Option<Vec<String>>,
    /// Only `disabled` (the chat's history is fitted to the context window either way).
    pub truncation: Option<String>,
    /// Accepted and ignored.
    pub service_tier: Option<String>,
    /// Accepted and ignored.
    pub prompt_cache_key: Option<String>,
    /// Accepted and ignored.
    pub safety_identifier: Option<String>,
    /// Accepted and ignored.
    #[schema(value_type = Option<Object>)]
    pub stream_options: Option<Value>,
}

fn field(loc: &[&str], index: Option<usize>, msg: impl Into<String>, kind: &str) -> FieldError {
    let mut full: Vec<tessera_kernel::LocSegment> = vec!["body".into()];
    for (at, name) in loc.iter().enumerate() {
        full.push((*name).into());
        if let (0, Some(index)) = (at, index) {
            full.push(index.into());
        }
    }
    FieldError::new(full, msg, kind)
}

/// The text and images of a message's `content` (a string or parts).
fn content_of(
    content: &Value,
    at: usize,
    errors: &mut Vec<FieldError>,
) -> (String, Vec<tessera_models::ImageInput>) {
    match content {
        Value::String(text) => (text.clone(), Vec::new()),
        Value::Array(parts) => {
            let mut text = Vec::new();
            let mut images = Vec::new();
            for part in parts {
                match part["type"].as_str() {
                    Some("input_text" | "output_text" | "text" | "refusal") => {
                        let piece = part["text"].as_str().or(part["refusal"].as_str());
                        text.push(piece.unwrap_or_default().to_owned());
                    }
                    Some("input_image") => match part["image_url"]
                        .as_str()
                        .and_then(data_url)
                    {
                        Some(image) => images.push(image),
                        None => errors.push(field(
                            &["input", "content"],
                            Some(at),
                            "`input_image` needs a base64 `data:image/(png|jpeg|gif|webp);base64,…` \
                             `image_url`; remote images and file ids are not fetched",
                            "value_error",
                        )),
                    },
                    _ => errors.push(field(
                        &["input", "content"],
                        Some(at),
                        "content parts are `input_text`, `output_text` or `input_image`",
                        "value_error",
                    )),
                }
            }
            (text.join("\n"), images)
        }
        _ => {
            errors.push(field(
                &["input", "content"],
                Some(at),
                "a string or an array of content parts",
                "type_error",
            ));
            (String::new(), Vec::new())
        }
    }
}

fn message(role: Role, content: String) -> NewMessage {
    NewMessage {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
        attachments: Vec::new(),
        images: Vec::new(),
    }
}

/// The input items as the chats domain's messages, and the instructions they carry.
fn messages_of(input: &Value, errors: &mut Vec<FieldError>) -> (Vec<NewMessage>, Vec<String>) {
    let items = match input {
        Value::String(text) => return (vec![message(Role::User, text.clone())], Vec::new()),
        Value::Array(items) if !items.is_empty() && items.len() <= 1000 => items,
        _ => {
            errors.push(field(
                &["input"],
                None,
                "a string, or 1 to 1000 input items",
                "type_error",
            ));
            return (Vec::new(), Vec::new());
        }
    };
    let mut messages: Vec<NewMessage> = Vec::new();
    let mut instructions = Vec::new();
    for (at, item) in items.iter().enumerate() {
        let text = |name: &str| item[name].as_str().map(str::to_owned);
        match item["type"].as_str() {
            Some("function_call") => {
                let (Some(call_id), Some(name)) = (text("call_id"), text("name")) else {
                    errors.push(field(
                        &["input"],
                        Some(at),
                        "a `function_call` needs `call_id`, `name` and `arguments`",
                        "missing",
                    ));
                    continue;
                };
                let call = ToolCall {
                    id: call_id,
                    name,
                    arguments: text("arguments").unwrap_or_else(|| "{}".into()),
                };
                // Consecutive calls belong to one assistant turn.
                match messages.last_mut() {
                    Some(last) if last.role == Role::Assistant && last.content.is_empty() => {
                        last.tool_calls.push(call);
                    }
                    _ => {
                        let mut turn = message(Role::Assistant, String::new());
                        turn.tool_calls.push(call);
                        messages.push(turn);
                    }
                }
            }
            Some("function_call_output") => {
                let output = match &item["output"] {
                    Value::String(output) => output.clone(),
                    other => content_of(other, at, errors).0,
                };
                let Some(call_id) = text("call_id") else {
                    errors.push(field(
                        &["input", "call_id"],
                        Some(at),
                        "field required",
                        "missing",
                    ));
                    continue;
                };
                let mut result = message(Role::Tool, output);
                result.tool_call_id = Some(call_id);
                messages.push(result);
            }
            // Earlier reasoning is the model's own; it is not sent back.
            Some("reasoning") => {}
            None | Some("message") => {
                let (content, images) = content_of(&item["content"], at, errors);
                let role = match item["role"].as_str() {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    Some("system" | "developer") => {
                        instructions.push(content);
                        continue;
                    }
                    _ => {
                        errors.push(field(
                            &["input", "role"],
                            Some(at),
                            "`user`, `assistant`, `system` or `developer`",
                            "enum",
                        ));
                        continue;
                    }
                };
                let mut turn = message(role, content);
                turn.images = images;
                messages.push(turn);
            }
            Some(other) => errors.push(field(
                &["input", "type"],
                Some(at),
                format!(
                    "`{other}` items are not supported: `message`, `function_call`, \
                     `function_call_output` and `reasoning` are"
                ),
                "enum",
            )),
        }
    }
    (messages, instructions)
}

/// What the translation keeps beside the domain request.
#[derive(Debug)]
pub struct Translated {
    pub request: CompletionRequest,
    pub echo: Echo,
    pub stream: bool,
    /// The chat's latest answer that `previous_response_id` names, checked before starting.
    pub continues: Option<(ChatId, MessageId)>,
    /// The `file_search` tool's filter: the handler restricts `request.file_search` to the
    /// stores' files whose attributes pass it.
    pub search_filter: Option<AttributeFilter>,
}

/// Why a Responses request cannot be translated.
#[derive(Debug)]
pub enum Untranslatable {
    /// Field errors, located under `body`.
    Invalid(Vec<FieldError>),
    /// `previous_response_id` is no response id at all (OpenAI answers 404).
    PreviousNotFound(String),
}

impl CreateResponse {
    pub fn translate(self) -> Result<Translated, Untranslatable> {
        let mut errors = Vec::new();
        let store = self.store.unwrap_or(true);
        let background = self.background.unwrap_or(false);
        let stream = self.stream.unwrap_or(false);
        if background && !store {
            errors.push(field(
                &["background"],
                None,
                "a background response is stored: `store: false` cannot be combined with it",
                "value_error",
            ));
        }
        if self.truncation.as_deref().is_some_and(|t| t != "disabled") {
            errors.push(field(
                &["truncation"],
                None,
                "only `disabled`",
                "unsupported",
            ));
        }
        let continues = match &self.previous_response_id {
            None => None,
            Some(id) => match parse_response_id(id) {
                Some(ids) if store => Some(ids),
                Some(_) => {
                    errors.push(field(
                        &["store"],
                        None,
                        "continuing a stored conversation is stored too: leave `store` true",
                        "value_error",
                    ));
                    None
                }
                None => return Err(Untranslatable::PreviousNotFound(id.clone())),
            },
        };
        let searches_files = self.tool_choice.as_ref().is_some_and(|choice| {
            choice.get("type").and_then(Value::as_str) == Some("file_search")
        });
        let tool_choice = match self.tool_choice.as_ref().map(ToolChoiceIn::parse) {
            None => ToolChoice::Auto,
            _ if searches_files => ToolChoice::Auto,
            Some(Ok(choice)) => choice,
            Some(Err(msg)) => {
                errors.push(field(&["tool_choice"], None, msg, "value_error"));
                ToolChoice::Auto
            }
        };
        let mut tools = Vec::new();
        let mut file_search = None;
        let mut search_filter = None;
        for (index, tool) in self.tools.iter().flatten().enumerate() {
            match (tool["type"].as_str(), tool["name"].as_str()) {
                (Some("function"), Some(name)) => tools.push(ToolSpec {
                    name: name.to_owned(),
                    description: tool["description"].as_str().map(str::to_owned),
                    parameters: match &tool["parameters"] {
                        Value::Null => json!({"type": "object", "properties": {}}),
                        parameters => parameters.clone(),
                    },
                }),
                (Some("file_search"), _) if file_search.is_some() => errors.push(field(
                    &["tools", "type"],
                    Some(index),
                    "one `file_search` tool per request (it may name several stores)",
                    "value_error",
                )),
                (Some("file_search"), _) => match file_search_of(tool, index) {
                    Ok(tool) => {
                        file_search = Some(tool.search);
                        search_filter = tool.filter;
                    }
                    Err(refused) => errors.extend(refused),
                },
                _ => errors.push(field(
                    &["tools", "type"],
                    Some(index),
                    "only `function` tools with a `name`, and `file_search` (MCP tools linked \
                     to the model run on the server by themselves)",
                    "enum",
                )),
            }
        }
        if searches_files && file_search.is_none() {
            errors.push(field(
                &["tool_choice"],
                None,
                "`file_search` is chosen but no `file_search` tool is given",
                "value_error",
            ));
        }
        // `none` asks for no tool at all: the stores are not searched either. `required`
        // with no function to call is met by the search itself.
        if tool_choice == ToolChoice::None {
            file_search = None;
        }
        let tool_choice = match tool_choice {
            ToolChoice::Required if tools.is_empty() && file_search.is_some() => ToolChoice::Auto,
            choice => choice,
        };
        let (messages, mut instructions) = messages_of(&self.input, &mut errors);
        if !errors.is_empty() {
            return Err(Untranslatable::Invalid(errors));
        }
        if let Some(text) = self.instructions.clone() {
            instructions.insert(0, text);
        }
        let (response_format, text_format) = match self.text.and_then(|text| text.format) {
            None | Some(TextFormatIn::Text) => (None, json!({"type": "text"})),
            Some(TextFormatIn::JsonObject) => (
                Some(JsonSchemaFormat {
                    name: "json_object".into(),
                    strict: false,
                    schema: json!({"type": "object"}),
                }),
                json!({"type": "json_object"}),
            ),
            Some(TextFormatIn::JsonSchema {
                name,
                description,
                schema,
                strict,
            }) => {
                let schema = schema.unwrap_or_else(|| json!({"type": "object"}));
                let echo = json!({
                    "type": "json_schema", "name": name, "description": description,
                    "schema": schema, "strict": strict,
                });
                (
                    Some(JsonSchemaFormat {
                        name,
                        strict: strict.unwrap_or(false),
                        schema,
                    }),
                    echo,
                )
            }
        };
        let reasoning_effort =
            ReasoningEffortIn::effort(self.reasoning.and_then(|reasoning| reasoning.effort));
        let search_echo = file_search.as_ref().map(|_| SearchEcho {
            results: self
                .include
                .iter()
                .flatten()
                .any(|include| include == "file_search_call.results"),
            attributes: HashMap::new(),
        });
        let echo = Echo {
            model: self.model.clone(),
            instructions: self.instructions,
            previous_response_id: self.previous_response_id,
            max_output_tokens: self.max_output_tokens,
            temperature: self.temperature,
            top_p: self.top_p,
            tools: self.tools.unwrap_or_default(),
            tool_choice: self.tool_choice.unwrap_or_else(|| json!("auto")),
            text_format,
            reasoning_effort: reasoning_effort
                .map(|effort| ReasoningEffortIn::name(effort).to_owned()),
            metadata: json!(self.metadata.unwrap_or_default()),
            store,
            background,
            question: question_of(&messages),
            file_search: search_echo,
        };
        Ok(Translated {
            request: CompletionRequest {
                // A continued chat keeps its model.
                model_id: continues.is_none().then_some(self.model),
                chat_id: continues.as_ref().map(|(chat, _)| chat.clone()),
                messages,
                tools,
                tool_choice,
                response_format,
                enable_reasoning: reasoning_effort.is_some(),
                reasoning_effort,
                max_tokens: self.max_output_tokens,
                temperature: self.temperature,
                top_p: self.top_p,
                instructions: Some(instructions.join("\n\n")).filter(|text| !text.is_empty()),
                stateless: !store,
                file_search,
                ..CompletionRequest::default()
            },
            echo,
            stream,
            continues,
            search_filter,
        })
    }
}

/// The question a turn searches with: its last user message.
fn question_of(messages: &[NewMessage]) -> Option<String> {
    let mut questions = messages.iter().filter(|m| m.role == Role::User);
    questions.next_back().map(|m| m.content.clone())
}

/// What a stored chat tells of the request that made its answer: the model, the
/// preceding answer and the question its passages were searched with (instructions, tools
/// and sampling are not stored with a chat, nor the search's results).
pub fn stored_echo(record: &ChatRecord, before: usize) -> Echo {
    let question = record.messages[..before]
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone());
    Echo {
        model: record.chat.model.model_id.clone(),
        previous_response_id: record.messages[..before]
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| response_id(&record.chat.id, &m.id)),
        store: true,
        tool_choice: json!("auto"),
        text_format: json!({"type": "text"}),
        metadata: json!({}),
        question,
        ..Echo::default()
    }
}

/// Where the answer sits in its chat, or `None` while it is not stored yet.
pub fn position_of(record: &ChatRecord, answer: &MessageId) -> Option<usize> {
    record.messages.iter().position(|m| &m.id == answer)
}

/// When the response was made, as far as the stored chat tells.
pub fn created_at(record: &ChatRecord, answer: &MessageId) -> i64 {
    position_of(record, answer).map_or(unix(record.chat.updated_at), |at| {
        unix(record.messages[at].created_at)
    })
}

/// The response of a chat's answer as stored: completed (or incomplete), in progress while
/// the chat generates it, failed when its generation failed.
pub fn stored_response(id: &str, record: &ChatRecord, answer: &MessageId) -> Option<Value> {
    let created = created_at(record, answer);
    match position_of(record, answer) {
        Some(at) => {
            let message: &Message = &record.messages[at];
            let echo = stored_echo(record, at);
            let status = Status::of(message);
            Some(response(id, created, &echo, status, Some(message), None))
        }
        None => {
            let echo = stored_echo(record, record.messages.len());
            match record.chat.status {
                Some(ChatStatus::Generating) => {
                    Some(response(id, created, &echo, Status::InProgress, None, None))
                }
                Some(ChatStatus::Error) if record.chat.error.as_deref() == Some(CANCELLED) => {
                    Some(response(id, created, &echo, Status::Cancelled, None, None))
                }
                Some(ChatStatus::Error) => {
                    let error = json!({
                        "code": "generation_failed",
                        "message": record.chat.error.clone().unwrap_or_default(),
                    });
                    Some(response(
                        id,
                        created,
                        &echo,
                        Status::Failed,
                        None,
                        Some(error),
                    ))
                }
                None => None,
            }
        }
    }
}

/// A stored answer's events, for a stream asked for after its generation ended: its
/// sources, the text as one delta, each call whole, then the answer.
pub fn replay_of(message: &Message) -> EventStream {
    let mut events = Vec::new();
    if !message.sources.is_empty() {
        events.push(GenerationEvent::Sources(message.sources.clone()));
    }
    if !message.content.is_empty() {
        events.push(GenerationEvent::Delta(ChatEvent::TextDelta(
            message.content.clone(),
        )));
    }
    for (index, call) in (0u32..).zip(&message.tool_calls) {
        events.push(GenerationEvent::Delta(ChatEvent::ToolCallStart {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        }));
        events.push(GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta {
            index,
            delta: call.arguments.clone(),
        }));
        events.push(GenerationEvent::Delta(ChatEvent::ToolCallEnd { index }));
    }
    events.push(GenerationEvent::Finished(Box::new(message.clone())));
    Box::pin(futures_util::stream::iter(
        events.into_iter().map(std::sync::Arc::new),
    ))
}

/// How to read a response.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RetrieveResponse {
    /// Stream the response's events instead: a running (background) response from its
    /// first event on, live; a finished one replayed from the stored answer.
    pub stream: Option<bool>,
    /// With `stream`: send only the events after this `sequence_number` (resuming).
    pub starting_after: Option<u64>,
}

/// Paging of a response's input items.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListInputItems {
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// `desc` (default, newest first) or `asc`.
    pub order: Option<String>,
    /// Items after this item id (in `order`).
    pub after: Option<String>,
    /// Items before this item id (in `order`).
    pub before: Option<String>,
}

/// The input item of a stored message of the turn.
fn input_items_of(message: &Message) -> Vec<Value> {
    let id = message.id.to_string();
    match message.role {
        Role::Tool => vec![json!({
            "type": "function_call_output", "id": id, "status": "completed",
            "call_id": message.tool_call_id, "output": message.content,
        })],
        Role::Assistant => {
            let mut items = Vec::new();
            if !message.content.is_empty() {
                items.push(json!({
                    "type": "message", "id": id, "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": message.content, "annotations": []}],
                }));
            }
            for call in &message.tool_calls {
                items.push(function_call(
                    &call.id,
                    &call.name,
                    &call.arguments,
                    "completed",
                ));
            }
            items
        }
        _ => vec![json!({
            "type": "message", "id": id, "status": "completed", "role": "user",
            "content": [{"type": "input_text", "text": message.content}],
        })],
    }
}

impl ListInputItems {
    /// The input items of the turn that made the answer at `end` (the messages after the
    /// previous answer), paged: OpenAI's `object: list` with `first_id`, `last_id` and
    /// `has_more`, or the query's field errors.
    pub fn page(&self, record: &ChatRecord, end: usize) -> Result<Value, Vec<FieldError>> {
        let start = record.messages[..end]
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |at| at + 1);
        let mut items: Vec<Value> = record.messages[start..end]
            .iter()
            .flat_map(input_items_of)
            .collect();
        match self.order.as_deref() {
            None | Some("desc") => items.reverse(),
            Some("asc") => {}
            Some(_) => {
                return Err(vec![FieldError::new(
                    ["query".into(), "order".into()],
                    "`asc` or `desc`",
                    "enum",
                )]);
            }
        }
        let position =
            |id: &Option<String>, name: &str| -> Result<Option<usize>, Vec<FieldError>> {
                let Some(id) = id else { return Ok(None) };
                items
                    .iter()
                    .position(|item| item["id"] == json!(id))
                    .map(Some)
                    .ok_or_else(|| {
                        vec![FieldError::new(
                            ["query".into(), name.into()],
                            "not an input item of this response",
                            "value_error",
                        )]
                    })
            };
        let from = position(&self.after, "after")?.map_or(0, |at| at + 1);
        let to = position(&self.before, "before")?.unwrap_or(items.len());
        let window = items.get(from..to.max(from)).unwrap_or_default();
        let limit = self.limit.unwrap_or(20);
        let page: Vec<Value> = window.iter().take(limit).cloned().collect();
        Ok(json!({
            "object": "list",
            "first_id": page.first().map(|item| item["id"].clone()),
            "last_id": page.last().map(|item| item["id"].clone()),
            "has_more": window.len() > page.len(),
            "data": page,
        }))
    }
}
