//! `/v1/chats`' bodies: the completion request (messages with tool calls and attachments,
//! tools, a response schema, reasoning and sampling) and its translation into the chats
//! domain's `CompletionRequest`, the answer of a non-streamed completion, stored messages
//! with their sources, attachments, usage and route, and chat records with the related
//! objects `expand[]` adds (model, the system prompt's particle versions and particles).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_chats::{Attachment, Chat, ChatId, CompletionRequest, Expansion, Message, NewMessage};
use tessera_guardrails::RuleOutcome;
use tessera_kernel::{DomainError, LocSegment};
use tessera_models::{JsonSchemaFormat, Role, Route, ToolCall, ToolChoice, ToolSpec, Usage};
use tessera_prompts::ComposedParticle;
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::{
    chat::{SourceOut, TokenUsageOut, ToolCallOut},
    paged,
    tool_choice::ToolChoiceIn,
    v1::models::ModelOut,
};

/// Who wrote a message of a request.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RoleIn {
    User,
    Assistant,
    Tool,
}

/// One message of a completion request.
#[derive(Debug, Serialize, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageIn {
    pub role: RoleIn,
    /// The text (may be empty on an assistant message that only calls tools).
    #[serde(default)]
    #[validate(length(max = 1_000_000))]
    #[schema(max_length = 1000000)]
    pub content: String,
    /// Assistant messages: the calls the model made.
    #[validate(length(max = 128))]
    #[schema(max_items = 128)]
    pub tool_calls: Option<Vec<ToolCallOut>>,
    /// Tool messages: the id of the call this result answers.
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub tool_call_id: Option<String>,
    /// User messages: uploaded files to attach (needs the `files:read` scope). A document
    /// (once `ready`) is inlined as text ahead of the message; an image goes to the model
    /// as an image input, for models with `supportsVision` only. At most 10.
    #[validate(length(max = 10))]
    #[schema(max_items = 10)]
    pub attachments: Option<Vec<AttachmentIn>>,
}

/// A file attached to a message.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachmentIn {
    #[schema(example = "file_0193b0c4e5f67a8b9c0d1e2f3a4b5c6d")]
    pub file_id: String,
}

/// A file a message attached.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentOut {
    pub file_id: String,
    pub file_name: String,
    /// `document` (inlined as text) or `image`.
    pub kind: String,
    #[schema(example = "application/pdf")]
    pub media_type: String,
}

impl From<&Attachment> for AttachmentOut {
    fn from(attachment: &Attachment) -> Self {
        Self {
            file_id: attachment.file_id.clone(),
            file_name: attachment.file_name.clone(),
            kind: attachment.kind.as_str().to_owned(),
            media_type: attachment.media_type.clone(),
        }
    }
}

/// A function the model may call.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments (default: an object without properties).
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
}

/// Only `function` tools exist.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolType {
    Function,
}

/// A tool the model may call.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolIn {
    #[serde(rename = "type")]
    pub kind: ToolType,
    pub function: FunctionSpec,
}

/// The JSON Schema an answer must conform to.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaSpec {
    pub name: String,
    /// A non-conforming answer is an error (502) instead of being returned as is.
    #[serde(default)]
    pub strict: bool,
    #[schema(value_type = Object)]
    pub schema: Value,
}

/// Only `json_schema` response formats exist.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormatType {
    JsonSchema,
}

/// Structured output.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseFormat {
    #[serde(rename = "type")]
    pub kind: ResponseFormatType,
    pub json_schema: JsonSchemaSpec,
}

/// A completion: a new chat (`modelId`) or the next turn of one (`chatId`).
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateCompletion {
    /// A model of the organization (`mdl_…`) or a base model of the catalog. Needed for a
    /// new chat; an existing chat keeps its model.
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub model_id: Option<String>,
    /// Continues this chat: its earlier messages are included automatically.
    pub chat_id: Option<String>,
    /// This turn's messages (earlier ones come from the chat).
    #[validate(length(min = 1, max = 1000), nested)]
    #[schema(min_items = 1, max_items = 1000)]
    pub messages: Vec<MessageIn>,
    /// Answer with Server-Sent Events (format chosen by `X-Stream-Format`).
    #[serde(default)]
    pub stream: bool,
    /// Return the model's reasoning (models with `supportsReasoning`).
    #[serde(default)]
    pub enable_reasoning: bool,
    /// Caps the reasoning tokens.
    #[validate(range(min = 1))]
    #[schema(minimum = 1)]
    pub reasoning_budget: Option<u32>,
    pub response_format: Option<ResponseFormat>,
    #[validate(length(max = 128))]
    #[schema(max_items = 128)]
    pub tools: Option<Vec<ToolIn>>,
    /// Whether the model must call a tool: `auto` (default: the model decides), `none` (no
    /// tool call), `required` (a call of one of the tools, or of the linked MCP servers'),
    /// or `{"type": "function", "function": {"name": …}}` (a call of that one).
    pub tool_choice: Option<ToolChoiceIn>,
    /// Caps the answer's length (at most the model's `maxTokensPerRequest`).
    #[validate(range(min = 1))]
    #[schema(minimum = 1)]
    pub max_tokens: Option<u32>,
    #[validate(range(min = 0.0, max = 2.0))]
    #[schema(minimum = 0.0, maximum = 2.0)]
    pub temperature: Option<f32>,
    /// Makes sampling repeatable where the provider supports it.
    pub seed: Option<u64>,
    /// Rounds of calls of the tools of MCP servers linked to the model, which Tessera runs
    /// itself, before the model must answer without them (default 8, at most 32; 0 offers
    /// none of them).
    #[validate(range(max = 32))]
    #[schema(minimum = 0, maximum = 32)]
    pub max_tool_steps: Option<u32>,
}

impl CreateCompletion {
    /// The domain's request and whether to stream it. A `chatId` that is no chat id names
    /// no chat of any organization: not found, like any other miss.
    pub fn into_request(self) -> Result<(CompletionRequest, bool), DomainError> {
        let chat_id = self
            .chat_id
            .as_deref()
            .map(|id| {
                id.parse::<ChatId>()
                    .map_err(|_| DomainError::not_found("chat", id))
            })
            .transpose()?;
        let messages = self
            .messages
            .into_iter()
            .map(|m| NewMessage {
                role: match m.role {
                    RoleIn::User => Role::User,
                    RoleIn::Assistant => Role::Assistant,
                    RoleIn::Tool => Role::Tool,
                },
                content: m.content,
                tool_calls: m
                    .tool_calls
                    .unwrap_or_default()
                    .into_iter()
                    .map(ToolCall::from)
                    .collect(),
                tool_call_id: m.tool_call_id,
                images: Vec::new(),
                attachments: m
                    .attachments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|attachment| attachment.file_id)
                    .collect(),
            })
            .collect();
        let tools = self
            .tools
            .unwrap_or_default()
            .into_iter()
            .map(|tool| ToolSpec {
                name: tool.function.name,
                description: tool.function.description,
                parameters: tool
                    .function
                    .parameters
                    .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            })
            .collect();
        let tool_choice = match self.tool_choice.map(ToolChoiceIn::choice) {
            None => ToolChoice::Auto,
            Some(Ok(choice)) => choice,
            Some(Err(msg)) => {
                return Err(DomainError::invalid(
                    [LocSegment::from("body"), LocSegment::from("toolChoice")],
                    msg,
                    "value_error",
                ));
            }
        };
        let request = CompletionRequest {
            model_id: self.model_id,
            chat_id,
            messages,
            tools,
            tool_choice,
            response_format: self.response_format.map(|format| JsonSchemaFormat {
                name: format.json_schema.name,
                strict: format.json_schema.strict,
                schema: format.json_schema.schema,
            }),
            enable_reasoning: self.enable_reasoning,
            reasoning_budget: self.reasoning_budget,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            seed: self.seed,
            max_tool_steps: self.max_tool_steps,
            ..CompletionRequest::default()
        };
        Ok((request, self.stream))
    }
}

/// Which of the model's deployments answered, after which failed attempts (models served
/// by a remote provider).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteOut {
    /// The catalog's name of the deployment that answered.
    pub deployment: String,
    /// The catalog's key of its provider (absent on answers stored before it was kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Attempts that failed before the first token (retried or fallen back from); they
    /// bill nothing.
    pub failed_attempts: Vec<FailedAttemptOut>,
}

/// An attempt that failed before its first token.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedAttemptOut {
    pub deployment: String,
    pub error: String,
}

impl From<&Route> for RouteOut {
    fn from(route: &Route) -> Self {
        Self {
            deployment: route.deployment.clone(),
            provider: (!route.provider.is_empty()).then(|| route.provider.clone()),
            failed_attempts: route
                .failed_attempts
                .iter()
                .map(|attempt| FailedAttemptOut {
                    deployment: attempt.deployment.clone(),
                    error: attempt.error.clone(),
                })
                .collect(),
        }
    }
}

/// What one guardrail rule did to a completion: never the value it matched.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailOutcomeOut {
    /// The rule's id as its policy names it (`max_input_chars` and `hook` for the built-in
    /// checks).
    #[schema(example = "emails")]
    pub rule: String,
    /// The PII kind (`email`, `payment_card`, …), `denied`, `input_size` or `hook`.
    #[schema(example = "email")]
    pub kind: String,
    /// `input` or `output`.
    pub direction: String,
    /// `blocked`, `redacted`, `pseudonymised` or `passed` (the hook let it through).
    #[schema(example = "pseudonymised")]
    pub effect: String,
    /// How many values the rule concerned.
    pub count: u32,
    /// Why the hook did not answer (`timeout`, `unavailable`, `invalid_answer`,
    /// `not_configured`), when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_failure: Option<String>,
}

impl From<&RuleOutcome> for GuardrailOutcomeOut {
    fn from(outcome: &RuleOutcome) -> Self {
        Self {
            rule: outcome.rule.to_string(),
            kind: outcome.kind.as_str().to_owned(),
            direction: outcome.direction.as_str().to_owned(),
            effect: outcome.effect.as_str().to_owned(),
            count: outcome.count,
            hook_failure: outcome
                .hook_failure
                .map(|failure| failure.as_str().to_owned()),
        }
    }
}

/// An answer's guardrail outcomes (none without a policy).
fn guardrails_of(message: &Message) -> Vec<GuardrailOutcomeOut> {
    (message.usage.as_ref())
        .map(|usage| usage.guardrails.outcomes())
        .unwrap_or_default()
        .iter()
        .map(GuardrailOutcomeOut::from)
        .collect()
}

/// The answer of a completion.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnswerOut {
    /// Always `assistant`.
    pub role: String,
    pub content: String,
    /// Present when the model called tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallOut>,
    /// Present when reasoning was requested and the model reasoned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Present when passages were retrieved (RAG).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceOut>,
}

/// A non-streamed completion.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionOut {
    /// The chat's id (pass it as `chatId` to continue).
    pub id: String,
    /// The stored answer's id.
    pub message_id: String,
    pub message: AnswerOut,
    pub usage: TokenUsageOut,
    /// `stop`, `length`, `tool_calls`, `content_filter`, or the provider's own reason.
    pub finish_reason: String,
    /// Earlier messages left out to fit the model's context window (also in the
    /// `X-Truncated-Messages` header).
    pub truncated_messages: usize,
    /// Which deployment answered (models served by a remote provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteOut>,
    /// What the organization's and the model's guardrails did (present when a rule acted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guardrails: Vec<GuardrailOutcomeOut>,
}

impl CompletionOut {
    /// The answer `message` of a completion on `chat`, with how many earlier messages were
    /// left out to fit the context window.
    pub fn answered(chat: &Chat, message: &Message, truncated_messages: usize) -> Self {
        let usage = message.usage.as_ref();
        Self {
            id: chat.id.to_string(),
            message_id: message.id.to_string(),
            message: AnswerOut {
                role: "assistant".into(),
                content: message.content.clone(),
                tool_calls: message.tool_calls.iter().map(ToolCallOut::from).collect(),
                reasoning: message.reasoning.clone(),
                sources: message.sources.iter().map(SourceOut::from).collect(),
            },
            usage: usage.map_or_else(
                || TokenUsageOut::from(&Usage::default()),
                |u| TokenUsageOut::from(&u.usage),
            ),
            finish_reason: usage
                .map_or("stop", |u| u.finish_reason.as_str())
                .to_owned(),
            truncated_messages,
            route: usage.and_then(|u| u.route.as_ref()).map(RouteOut::from),
            guardrails: guardrails_of(message),
        }
    }
}

/// A stored message.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageOut {
    pub id: String,
    /// `user`, `assistant` or `tool`.
    pub role: String,
    pub content: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCallOut>,
    pub tool_call_id: Option<String>,
    pub sources: Vec<SourceOut>,
    /// Files a user message attached.
    pub attachments: Vec<AttachmentOut>,
    /// Assistant answers only.
    pub usage: Option<TokenUsageOut>,
    pub finish_reason: Option<String>,
    /// Which deployment answered (answers of models served by a remote provider).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteOut>,
    /// What the guardrails did to the completion (answers, when a rule acted).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guardrails: Vec<GuardrailOutcomeOut>,
    pub created_at: DateTime<Utc>,
}

impl From<&Message> for MessageOut {
    fn from(message: &Message) -> Self {
        Self {
            id: message.id.to_string(),
            role: message.role.as_str().to_owned(),
            content: message.content.clone(),
            reasoning: message.reasoning.clone(),
            tool_calls: message.tool_calls.iter().map(ToolCallOut::from).collect(),
            tool_call_id: message.tool_call_id.clone(),
            sources: message.sources.iter().map(SourceOut::from).collect(),
            attachments: message
                .attachments
                .iter()
                .map(AttachmentOut::from)
                .collect(),
            usage: message
                .usage
                .as_ref()
                .map(|u| TokenUsageOut::from(&u.usage)),
            finish_reason: message
                .usage
                .as_ref()
                .map(|u| u.finish_reason.as_str().to_owned()),
            route: (message.usage.as_ref())
                .and_then(|u| u.route.as_ref())
                .map(RouteOut::from),
            guardrails: guardrails_of(message),
            created_at: message.created_at,
        }
    }
}

/// A particle version of the chat's system prompt composition (`expand[]=versions`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComposedVersionOut {
    pub particle_id: String,
    pub particle_version_id: String,
    pub version: u32,
}

/// A particle of the chat's system prompt composition (`expand[]=particles`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatParticleOut {
    pub id: String,
    pub category: String,
    pub version: u32,
    pub token_count: u32,
}

/// A chat without its messages.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatSummary {
    pub id: String,
    pub organization_id: String,
    /// The model the chat was created with (a user model or a base model).
    pub model_id: String,
    /// With `expand[]=model`; `null` if the model was deleted since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Option<ModelOut>>,
    /// The system prompt the chat was created with, when it came from a composition.
    pub system_prompt_id: Option<String>,
    /// With `expand[]=versions`: the particle versions of that composition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<ComposedVersionOut>>,
    /// With `expand[]=particles`: the particles of that composition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub particles: Option<Vec<ChatParticleOut>>,
    /// At most 500 characters; derived from the first message until set.
    pub title: Option<String>,
    /// `generating` while a completion runs, `error` when the last one failed, else null.
    pub status: Option<String>,
    /// Why the last completion failed (with `status: error`).
    pub error: Option<String>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A chat with its messages.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatOut {
    #[serde(flatten)]
    pub chat: ChatSummary,
    pub messages: Vec<MessageOut>,
}

impl ChatSummary {
    /// `chat` with what the reader asked to expand: its model as it is now (already
    /// mapped) and its system prompt's composition, shown as versions and/or particles.
    pub fn of(
        chat: Chat,
        model: Option<Option<ModelOut>>,
        composition: &[ComposedParticle],
        expansion: Expansion,
    ) -> Self {
        let versions = (expansion.versions)
            .then(|| composition.iter().map(ComposedVersionOut::from).collect());
        let particles =
            (expansion.particles).then(|| composition.iter().map(ChatParticleOut::from).collect());
        Self {
            id: chat.id.to_string(),
            organization_id: chat.organization_id.to_string(),
            model_id: chat.model.model_id,
            model,
            system_prompt_id: chat.model.system_prompt_id.map(|id| id.to_string()),
            versions,
            particles,
            title: chat.title,
            status: chat.status.map(|status| status.as_str().to_owned()),
            error: chat.error,
            deleted_at: chat.deleted_at,
            created_at: chat.created_at,
            updated_at: chat.updated_at,
        }
    }
}

impl From<&ComposedParticle> for ComposedVersionOut {
    fn from(particle: &ComposedParticle) -> Self {
        Self {
            particle_id: particle.id.to_string(),
            particle_version_id: particle.version_id.to_string(),
            version: particle.version,
        }
    }
}

impl From<&ComposedParticle> for ChatParticleOut {
    fn from(particle: &ComposedParticle) -> Self {
        Self {
            id: particle.id.to_string(),
            category: particle.category.as_str().to_owned(),
            version: particle.version,
            token_count: particle.token_count,
        }
    }
}

paged!(ChatSummary => ChatSummaryPage, "A page of chats.");

/// Page through chats, newest first.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ListChats {
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
    /// Include soft-deleted chats.
    pub include_deleted: Option<bool>,
    /// `model`, `versions`, `particles`; repeatable (read from the raw query string).
    #[serde(skip)]
    #[param(rename = "expand[]")]
    pub expand: Option<Vec<String>>,
}

/// Which related objects to expand on a chat (`expand[]`).
#[derive(Debug, Serialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExpandChat {
    /// `model`, `versions`, `particles`; repeatable.
    #[param(rename = "expand[]")]
    pub expand: Option<Vec<String>>,
}

/// Sets the title; `null` clears it.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateChat {
    #[validate(length(max = 500))]
    #[schema(max_length = 500)]
    pub title: Option<String>,
}
