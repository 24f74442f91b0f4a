//! OpenAI's Responses API at `/openai/v1/responses` over Tessera's chats: a response is an
//! answer of a chat, `previous_response_id` continues that chat, `store: false` keeps
//! nothing, `background: true` answers at once while the generation goes on. The request
//! runs through the same completion pipeline as `POST /v1/chats` (model, system prompt,
//! retrieval, MCP tools, budgets, usage); see decision 0031.

use std::collections::HashMap;

use actix_web::{HttpResponse, delete, get, http::StatusCode, post, web};
use serde::Deserialize;
use serde_json::{Value, json};
use tessera_chats::{
    CANCELLED, ChatError, ChatRecord, ChatStatus, CompletionRequest, EventStream, GenerationEvent,
    Message, MessageId, NewMessage,
};
use tessera_kernel::FieldError;
use tessera_models::{
    ChatEvent, JsonSchemaFormat, ModelError, ReasoningEffort, Role, ToolCall, ToolSpec,
};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use super::{
    chat::{ReasoningEffortIn, data_url},
    error::OpenAiError,
    models::model_not_found,
    response_object::{Echo, Status, function_call, parse_response_id, response, response_id},
    response_stream::ResponseEncoder,
    unix,
};
use crate::{
    access::Caller,
    chat_stream::{self, Encoder, Format, HEARTBEAT},
    extract::{ValidJson, ValidQuery},
    problem::ApiError,
    routes::chats::{Running, chat_caller, chat_error, start_completion},
    state::AppState,
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
    /// Function tools (`{"type": "function", "name", "description", "parameters"}`).
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Vec<Value>>,
    /// `auto` (default) or `none`.
    #[schema(value_type = Option<Object>)]
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
    /// Accepted and ignored.
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
struct Translated {
    request: CompletionRequest,
    echo: Echo,
    stream: bool,
    /// The chat's latest answer that `previous_response_id` names, checked before starting.
    continues: Option<(tessera_chats::ChatId, tessera_chats::MessageId)>,
}

impl CreateResponse {
    fn translate(self) -> Result<Translated, ApiError> {
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
                None => return Err(previous_not_found(id)),
            },
        };
        let use_tools = match &self.tool_choice {
            None => true,
            Some(Value::String(choice)) if choice == "auto" => true,
            Some(Value::String(choice)) if choice == "none" => false,
            Some(_) => {
                errors.push(field(
                    &["tool_choice"],
                    None,
                    "only `auto` and `none`: the model decides whether to call a tool",
                    "unsupported",
                ));
                true
            }
        };
        let mut tools = Vec::new();
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
                _ => errors.push(field(
                    &["tools", "type"],
                    Some(index),
                    "only `function` tools with a `name` (MCP tools linked to the model run \
                     on the server by themselves)",
                    "enum",
                )),
            }
        }
        if !use_tools {
            tools.clear();
        }
        let (messages, mut instructions) = messages_of(&self.input, &mut errors);
        if !errors.is_empty() {
            return Err(ApiError::validation(errors));
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
        let effort = self.reasoning.and_then(|reasoning| reasoning.effort);
        let (enable_reasoning, reasoning_effort, effort_name) = match effort {
            None | Some(ReasoningEffortIn::None) => (false, None, None),
            Some(ReasoningEffortIn::Minimal | ReasoningEffortIn::Low) => {
                (true, Some(ReasoningEffort::Low), Some("low"))
            }
            Some(ReasoningEffortIn::Medium) => {
                (true, Some(ReasoningEffort::Medium), Some("medium"))
            }
            Some(ReasoningEffortIn::High) => (true, Some(ReasoningEffort::High), Some("high")),
        };
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
            reasoning_effort: effort_name.map(str::to_owned),
            metadata: json!(self.metadata.unwrap_or_default()),
            store,
            background,
        };
        Ok(Translated {
            request: CompletionRequest {
                // A continued chat keeps its model.
                model_id: continues.is_none().then_some(self.model),
                chat_id: continues.as_ref().map(|(chat, _)| chat.clone()),
                messages,
                tools,
                response_format,
                enable_reasoning,
                reasoning_effort,
                max_tokens: self.max_output_tokens,
                temperature: self.temperature,
                top_p: self.top_p,
                instructions: Some(instructions.join("\n\n")).filter(|text| !text.is_empty()),
                stateless: !store,
                ..CompletionRequest::default()
            },
            echo,
            stream,
            continues,
        })
    }
}

fn previous_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "previous_response_not_found",
        format!("Previous response with id '{id}' not found."),
    )
    .with("param", "previous_response_id")
}

fn response_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("No response with id '{id}' found."),
    )
}

/// The problem a failed response answers with, in this dialect's terms.
fn response_error(error: ChatError, model: &str) -> ApiError {
    match error {
        ChatError::Model(ModelError::NotFound(_) | ModelError::UnknownBaseModel(_)) => {
            model_not_found(model)
        }
        other => chat_error(other),
    }
}

/// A conversation continues from its latest answer only: Tessera's chats do not branch.
async fn check_latest(
    state: &AppState,
    caller: &Caller,
    previous: &str,
    (chat, message): &(tessera_chats::ChatId, tessera_chats::MessageId),
) -> Result<(), ApiError> {
    let record = match state.chats.get(&chat_caller(caller), chat).await {
        Ok(record) if record.chat.deleted_at.is_some() => return Err(previous_not_found(previous)),
        Ok(record) => record,
        Err(ChatError::NotFound(_)) => return Err(previous_not_found(previous)),
        Err(other) => return Err(chat_error(other)),
    };
    let latest = record
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant);
    match latest {
        Some(latest) if &latest.id == message => Ok(()),
        _ if record.messages.iter().any(|m| &m.id == message) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "conversation_moved_on",
            format!(
                "'{previous}' is not the latest response of its conversation; continue from \
                 the latest (conversations do not branch)"
            ),
        )
        .with("param", "previous_response_id")),
        _ => Err(previous_not_found(previous)),
    }
}

/// Create a response.
///
/// The same pipeline as `POST /v1/chats`: a user model brings its system prompt, datasets
/// and MCP tools; usage is recorded once per model call; budgets and rate limits apply.
/// With `stream: true` the answer is a stream of Responses events (`response.created` …
/// `response.completed`), each with a `sequence_number`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateResponse",
    request_body = CreateResponse,
    responses(
        (status = 401, description = "Missing, invalid, expired or revoked API key or token", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:invoke`, or the model needs another plan", body = OpenAiError),
        (status = 200, description = "The response (`object: response`); with `stream: true`, `text/event-stream` of Responses events", body = serde_json::Value),
        (status = 400, description = "Invalid or unsupported parameters (`param` names the first)", body = OpenAiError),
        (status = 404, description = "No such model, or no such `previous_response_id`", body = OpenAiError),
        (status = 409, description = "`previous_response_id` is not the latest response of its conversation, or the model is disabled", body = OpenAiError),
        (status = 410, description = "The model reached its end of life (`model_end_of_life`)", body = OpenAiError),
        (status = 429, description = "Rate limited, or the monthly credits are spent", body = OpenAiError),
        (status = 502, description = "The provider failed, or a strict answer does not conform to its schema", body = OpenAiError),
        (status = 503, description = "The provider is unavailable, or this instance is shutting down", body = OpenAiError)
    )
)]
#[post("/openai/v1/responses")]
pub async fn create_response(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateResponse>,
) -> Result<HttpResponse, ApiError> {
    let model = body.model.clone();
    let translated = body.translate()?;
    if let (Some(continues), Some(previous)) =
        (&translated.continues, &translated.echo.previous_response_id)
    {
        check_latest(&state, &caller, previous, continues).await?;
    }
    let running = start_completion(&state, &caller, translated.request)
        .await
        .map_err(|error| located_model(error, &model))?;
    let Running {
        chat,
        message_id,
        events,
        ..
    } = running;
    let id = response_id(&chat.id, &message_id);
    let created_at = unix(chrono::Utc::now());
    let echo = translated.echo;

    if echo.background {
        let queued = response(&id, created_at, &echo, Status::Queued, None, None);
        return Ok(HttpResponse::Ok().json(queued));
    }
    if translated.stream {
        let encoder = Encoder::Responses(Box::new(ResponseEncoder::new(
            id, created_at, echo, message_id,
        )));
        let body = chat_stream::body(events, encoder, HEARTBEAT);
        let mut builder = HttpResponse::Ok();
        builder.insert_header(("Cache-Control", "no-cache"));
        return Ok(chat_stream::sse(Format::OpenAi, &mut builder, body));
    }
    let outcome = chat_stream::final_event(events).await;
    match outcome.as_deref() {
        Some(GenerationEvent::Finished(message)) => {
            let status = Status::of(message);
            Ok(HttpResponse::Ok().json(response(
                &id,
                created_at,
                &echo,
                status,
                Some(message),
                None,
            )))
        }
        Some(GenerationEvent::Failed(error)) => Err(response_error(error.clone(), &model)),
        _ => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the generation ended without an answer",
        )),
    }
}

/// `start_completion` answers an unknown model as the chats API does; here it is OpenAI's
/// `model_not_found`.
fn located_model(error: ApiError, model: &str) -> ApiError {
    if error.status == StatusCode::NOT_FOUND && error.code == "not_found" {
        model_not_found(model)
    } else {
        error
    }
}

/// What a stored chat tells of the request that made its answer: the model and the
/// preceding answer (instructions, tools and sampling are not stored with a chat).
fn stored_echo(record: &ChatRecord, before: usize) -> Echo {
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
        ..Echo::default()
    }
}

/// Where the answer sits in its chat, or `None` while it is not stored yet.
fn position_of(record: &ChatRecord, answer: &MessageId) -> Option<usize> {
    record.messages.iter().position(|m| &m.id == answer)
}

/// When the response was made, as far as the stored chat tells.
fn created_at(record: &ChatRecord, answer: &MessageId) -> i64 {
    position_of(record, answer).map_or(unix(record.chat.updated_at), |at| {
        unix(record.messages[at].created_at)
    })
}

/// The response of a chat's answer as stored: completed (or incomplete), in progress while
/// the chat generates it, failed when its generation failed.
fn stored_response(id: &str, record: &ChatRecord, answer: &MessageId) -> Option<Value> {
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

/// A stored answer's events, for a stream asked for after its generation ended: the text
/// as one delta, each call whole, then the answer.
fn replay_of(message: &Message) -> EventStream {
    let mut events = Vec::new();
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

/// The chat a response id names, as the caller may see it.
async fn record_of(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<(ChatRecord, MessageId), ApiError> {
    let (chat, message) = parse_response_id(id).ok_or_else(|| response_not_found(id))?;
    match state.chats.get(&chat_caller(caller), &chat).await {
        // A deleted response's chat stays restorable through `/v1/chats`, not here.
        Ok(record) if record.chat.deleted_at.is_some() => Err(response_not_found(id)),
        Ok(record) => Ok((record, message)),
        Err(ChatError::NotFound(_)) => Err(response_not_found(id)),
        Err(other) => Err(chat_error(other)),
    }
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

/// A stored response: `completed` (or `incomplete`) once answered, `in_progress` while its
/// generation runs (a background response), `failed` if it failed. With `stream=true`, its
/// events, resumable with `starting_after`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiGetResponse",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)"), RetrieveResponse),
    responses(
        (status = 401, description = "Missing, invalid, expired or revoked API key or token", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:read`", body = OpenAiError),
        (status = 200, description = "The response; with `stream=true`, `text/event-stream` of its events", body = serde_json::Value),
        (status = 400, description = "Invalid `stream` or `starting_after`", body = OpenAiError),
        (status = 404, description = "No such response in the organization (or it was not stored)", body = OpenAiError),
        (status = 409, description = "`stream=true` for a response that generates on another instance", body = OpenAiError),
        (status = 429, description = "Rate limited (`Retry-After`)", body = OpenAiError),
        (status = 503, description = "The database cannot answer; retry (`Retry-After`)", body = OpenAiError)
    )
)]
#[get("/openai/v1/responses/{response_id}")]
pub async fn get_response(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<RetrieveResponse>,
) -> Result<HttpResponse, ApiError> {
    let (record, message) = record_of(&state, &caller, &path).await?;
    if query.stream != Some(true) {
        let body =
            stored_response(&path, &record, &message).ok_or_else(|| response_not_found(&path))?;
        return Ok(HttpResponse::Ok().json(body));
    }
    let attached = state
        .chats
        .attach(&chat_caller(&caller), &record.chat.id)
        .await
        .map_err(chat_error)?;
    let (events, before) = match (attached, position_of(&record, &message)) {
        (Some(attached), _) if attached.message == message => {
            (attached.events, record.messages.len())
        }
        (_, Some(at)) => (replay_of(&record.messages[at]), at),
        (_, None) if record.chat.status == Some(ChatStatus::Generating) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "response_elsewhere",
                "the response generates on another instance; retrieve it without `stream` \
                 until it is done",
            ));
        }
        (_, None) => return Err(response_not_found(&path)),
    };
    let encoder = ResponseEncoder::new(
        path.to_string(),
        created_at(&record, &message),
        stored_echo(&record, before),
        message,
    )
    .starting_after(query.starting_after);
    let body = chat_stream::body(events, Encoder::Responses(Box::new(encoder)), HEARTBEAT);
    let mut builder = HttpResponse::Ok();
    builder.insert_header(("Cache-Control", "no-cache"));
    Ok(chat_stream::sse(Format::OpenAi, &mut builder, body))
}

/// Cancel a background response while it generates: the generation stops where it waits,
/// what the model used is billed, and the response is `cancelled`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCancelResponse",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)")),
    responses(
        (status = 200, description = "The response, `cancelled`", body = serde_json::Value),
        (status = 400, description = "The response is already finished (`response_finished`)", body = OpenAiError),
        (status = 401, description = "Missing, invalid, expired or revoked API key or token", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:invoke`", body = OpenAiError),
        (status = 404, description = "No such response in the organization", body = OpenAiError),
        (status = 409, description = "The response generates on another instance", body = OpenAiError),
        (status = 429, description = "Rate limited (`Retry-After`)", body = OpenAiError),
        (status = 503, description = "The database cannot answer; retry (`Retry-After`)", body = OpenAiError)
    )
)]
#[post("/openai/v1/responses/{response_id}/cancel")]
pub async fn cancel_response(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (record, message) = record_of(&state, &caller, &path).await?;
    if position_of(&record, &message).is_some()
        || record.chat.status != Some(ChatStatus::Generating)
    {
        let body =
            stored_response(&path, &record, &message).ok_or_else(|| response_not_found(&path))?;
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "response_finished",
            format!(
                "the response is {}; only a running response can be cancelled",
                body["status"]
            ),
        ));
    }
    let who = chat_caller(&caller);
    // Listen first, so the end of the generation is seen once it is stopped.
    let attached = state
        .chats
        .attach(&who, &record.chat.id)
        .await
        .map_err(chat_error)?;
    let Some(attached) = attached.filter(|attached| attached.message == message) else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "response_elsewhere",
            "the response generates on another instance",
        ));
    };
    state
        .chats
        .cancel(&who, &record.chat.id)
        .await
        .map_err(chat_error)?;
    chat_stream::final_event(attached.events).await;
    let (record, message) = record_of(&state, &caller, &path).await?;
    let body =
        stored_response(&path, &record, &message).ok_or_else(|| response_not_found(&path))?;
    Ok(HttpResponse::Ok().json(body))
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

/// The items a response was made from: the messages of its turn (after the previous
/// answer), paged as OpenAI pages them.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListResponseInputItems",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)"), ListInputItems),
    responses(
        (status = 401, description = "Missing, invalid, expired or revoked API key or token", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:read`", body = OpenAiError),
        (status = 200, description = "`object: list` of input items with `first_id`, `last_id`, `has_more`", body = serde_json::Value),
        (status = 400, description = "Invalid `limit`, `order`, `after` or `before`", body = OpenAiError),
        (status = 404, description = "No such response in the organization", body = OpenAiError),
        (status = 429, description = "Rate limited (`Retry-After`)", body = OpenAiError),
        (status = 503, description = "The database cannot answer; retry (`Retry-After`)", body = OpenAiError)
    )
)]
#[get("/openai/v1/responses/{response_id}/input_items")]
pub async fn list_input_items(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<ListInputItems>,
) -> Result<HttpResponse, ApiError> {
    let (record, message) = record_of(&state, &caller, &path).await?;
    let end = match position_of(&record, &message) {
        Some(at) => at,
        None if record.chat.status == Some(ChatStatus::Generating) => record.messages.len(),
        None => return Err(response_not_found(&path)),
    };
    let start = record.messages[..end]
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |at| at + 1);
    let mut items: Vec<Value> = record.messages[start..end]
        .iter()
        .flat_map(input_items_of)
        .collect();
    match query.order.as_deref() {
        None | Some("desc") => items.reverse(),
        Some("asc") => {}
        Some(_) => {
            return Err(ApiError::validation(vec![FieldError::new(
                ["query".into(), "order".into()],
                "`asc` or `desc`",
                "enum",
            )]));
        }
    }
    let position = |id: &Option<String>, name: &str| -> Result<Option<usize>, ApiError> {
        let Some(id) = id else { return Ok(None) };
        items
            .iter()
            .position(|item| item["id"] == json!(id))
            .map(Some)
            .ok_or_else(|| {
                ApiError::validation(vec![FieldError::new(
                    ["query".into(), name.into()],
                    "not an input item of this response",
                    "value_error",
                )])
            })
    };
    let from = position(&query.after, "after")?.map_or(0, |at| at + 1);
    let to = position(&query.before, "before")?.unwrap_or(items.len());
    let window = items.get(from..to.max(from)).unwrap_or_default();
    let limit = query.limit.unwrap_or(20);
    let page: Vec<Value> = window.iter().take(limit).cloned().collect();
    Ok(HttpResponse::Ok().json(json!({
        "object": "list",
        "first_id": page.first().map(|item| item["id"].clone()),
        "last_id": page.last().map(|item| item["id"].clone()),
        "has_more": window.len() > page.len(),
        "data": page,
    })))
}

/// Delete a response: its conversation (the Tessera chat) is deleted, restorable with
/// `POST /v1/chats/{id}/restore` as any deleted chat is.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiDeleteResponse",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)")),
    responses(
        (status = 401, description = "Missing, invalid, expired or revoked API key or token", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:delete`", body = OpenAiError),
        (status = 200, description = "Deleted (`object: response.deleted`)", body = serde_json::Value),
        (status = 404, description = "No such response in the organization", body = OpenAiError),
        (status = 429, description = "Rate limited (`Retry-After`)", body = OpenAiError),
        (status = 503, description = "The database cannot answer; retry (`Retry-After`)", body = OpenAiError)
    )
)]
#[delete("/openai/v1/responses/{response_id}")]
pub async fn delete_response(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (record, message) = record_of(&state, &caller, &path).await?;
    if !record.messages.iter().any(|m| m.id == message) {
        return Err(response_not_found(&path));
    }
    state
        .chats
        .delete(&chat_caller(&caller), &record.chat.id)
        .await
        .map_err(chat_error)?;
    Ok(HttpResponse::Ok().json(json!({
        "id": path.as_str(),
        "object": "response.deleted",
        "deleted": true,
    })))
}
