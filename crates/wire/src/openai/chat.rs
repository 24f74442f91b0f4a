//! OpenAI's chat completion: the request translated into the chats domain's
//! `CompletionRequest` (system and developer messages become the caller's instructions after
//! the model's system prompt; parameters Tessera cannot honour refused), the domain's field
//! errors located as the client sent the request, and the `chat.completion` object built
//! from the stored answer.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tessera_chats::{CompletionRequest, Message, NewMessage};
use tessera_kernel::FieldError;
use tessera_models::{JsonSchemaFormat, ReasoningEffort, Role, ToolCall, ToolChoice, ToolSpec};
use utoipa::ToSchema;
use validator::Validate;

use crate::{
    chat::{SourceOut, ToolCallOut, body_field as field},
    tool_choice::ToolChoiceIn,
};

/// Text, or an array of content parts.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ContentIn {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One part of a message's content.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// An image as a `data:` URL (vision models, stateless completions).
    ImageUrl {
        image_url: ImageUrl,
    },
    /// An assistant's earlier refusal, replayed.
    Refusal {
        refusal: String,
    },
}

/// An image reference.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ImageUrl {
    /// `data:image/png;base64,…` (remote URLs are not fetched).
    pub url: String,
    /// Accepted and ignored.
    pub detail: Option<String>,
}

/// A message of the conversation (`name` and other members are accepted and ignored).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessageIn {
    /// Instructions; appended to the system prompt of the model.
    System {
        content: ContentIn,
    },
    /// Instructions; the same as `system`.
    Developer {
        content: ContentIn,
    },
    User {
        content: ContentIn,
    },
    Assistant {
        #[serde(default)]
        content: Option<ContentIn>,
        #[serde(default)]
        tool_calls: Option<Vec<ToolCallOut>>,
    },
    Tool {
        content: ContentIn,
        tool_call_id: String,
    },
}

/// A function the model may call.
#[derive(Debug, Deserialize, ToSchema)]
pub struct FunctionIn {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments (default: an object without properties).
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
    /// Accepted: Tessera's engine always constrains arguments to their schema.
    pub strict: Option<bool>,
}

/// A tool (only `function` tools exist).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatCompletionTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionIn,
}

/// A JSON Schema the answer must follow.
#[derive(Debug, Deserialize, ToSchema)]
pub struct JsonSchemaIn {
    pub name: String,
    pub description: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub schema: Option<Value>,
    /// A non-conforming answer is an error instead of being returned.
    pub strict: Option<bool>,
}

/// The answer's format.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormatIn {
    Text,
    /// Any JSON object.
    JsonObject,
    JsonSchema {
        json_schema: JsonSchemaIn,
    },
}

/// `stop`: one sequence or several.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum StopIn {
    One(String),
    Many(Vec<String>),
}

/// Streaming options.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StreamOptions {
    /// Adds a last chunk with the usage (and no choices) before `[DONE]`.
    pub include_usage: Option<bool>,
}

/// How hard a reasoning model thinks; `none` turns reasoning off.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffortIn {
    None,
    Minimal,
    Low,
    Medium,
    High,
}

impl ReasoningEffortIn {
    /// The engine's effort for OpenAI's: `None` (or `none`) thinks not at all, `minimal`
    /// thinks as `low`.
    pub fn effort(effort: Option<Self>) -> Option<ReasoningEffort> {
        match effort? {
            ReasoningEffortIn::None => None,
            ReasoningEffortIn::Minimal | ReasoningEffortIn::Low => Some(ReasoningEffort::Low),
            ReasoningEffortIn::Medium => Some(ReasoningEffort::Medium),
            ReasoningEffortIn::High => Some(ReasoningEffort::High),
        }
    }

    /// The name OpenAI's objects echo for an effort.
    pub fn name(effort: ReasoningEffort) -> &'static str {
        match effort {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

/// OpenAI's chat completion request. Parameters Tessera cannot honour (`n` > 1, `logprobs`,
/// penalties, `logit_bias`) are refused, never ignored.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatCompletionRequest {
    /// A catalog model id (`GET /openai/v1/models`) or one of the organization's models
    /// (`mdl_…`, with its system prompt and datasets).
    #[validate(length(min = 1, max = 255))]
    #[schema(
        min_length = 1,
        max_length = 255,
        example = "local/smollm2-135m-instruct"
    )]
    pub model: String,
    #[schema(min_items = 1, max_items = 1000)]
    pub messages: Vec<ChatMessageIn>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    #[schema(max_items = 128)]
    pub tools: Option<Vec<ChatCompletionTool>>,
    /// `auto` (the default), `none`, `required`, or
    /// `{"type": "function", "function": {"name": …}}` to force a call of that function.
    #[schema(value_type = Option<crate::tool_choice::ToolChoiceIn>)]
    pub tool_choice: Option<Value>,
    /// Accepted; the model decides how many calls it makes.
    pub parallel_tool_calls: Option<bool>,
    pub response_format: Option<ResponseFormatIn>,
    /// Deprecated by OpenAI in favour of `max_completion_tokens`; either caps the answer.
    #[validate(range(min = 1))]
    #[schema(minimum = 1)]
    pub max_tokens: Option<u32>,
    #[validate(range(min = 1))]
    #[schema(minimum = 1)]
    pub max_completion_tokens: Option<u32>,
    #[validate(range(min = 0.0, max = 2.0))]
    #[schema(minimum = 0.0, maximum = 2.0)]
    pub temperature: Option<f32>,
    #[validate(range(min = 0.0, max = 1.0))]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub top_p: Option<f32>,
    pub stop: Option<StopIn>,
    pub seed: Option<i64>,
    pub reasoning_effort: Option<ReasoningEffortIn>,
    /// The end user, accepted for compatibility (usage is attributed to the credential).
    #[validate(length(max = 256))]
    #[schema(max_length = 256)]
    pub user: Option<String>,
    /// At most 16 pairs; accepted for compatibility.
    #[validate(length(max = 16))]
    pub metadata: Option<HashMap<String, String>>,
    /// Keep the exchange as a Tessera chat (visible in `/v1/chats`); stateless by default.
    pub store: Option<bool>,
    /// Only 1.
    pub n: Option<u32>,
    /// Not supported: only `false`.
    pub logprobs: Option<bool>,
    /// Not supported.
    pub top_logprobs: Option<u32>,
    /// Only 0.
    pub frequency_penalty: Option<f32>,
    /// Only 0.
    pub presence_penalty: Option<f32>,
    /// Not supported: only empty.
    #[schema(value_type = Option<Object>)]
    pub logit_bias: Option<HashMap<String, f32>>,
    /// Accepted and ignored.
    pub service_tier: Option<String>,
}

/// What the translation keeps beside the domain request.
#[derive(Debug)]
pub struct Translated {
    pub request: CompletionRequest,
    pub stream: bool,
    pub include_usage: bool,
    /// The position in `messages` of each message the domain sees (instructions are
    /// folded out), to name parameters as the client sent them.
    pub positions: Vec<usize>,
}

impl ContentIn {
    /// The text of the content and its inline images; `at` locates errors.
    fn split(
        self,
        at: usize,
        errors: &mut Vec<FieldError>,
    ) -> (String, Vec<tessera_models::ImageInput>) {
        match self {
            ContentIn::Text(text) => (text, Vec::new()),
            ContentIn::Parts(parts) => {
                let mut text = Vec::new();
                let mut images = Vec::new();
                for (index, part) in parts.into_iter().enumerate() {
                    match part {
                        ContentPart::Text { text: part } | ContentPart::Refusal { refusal: part } => {
                            text.push(part);
                        }
                        ContentPart::ImageUrl { image_url } => match data_url(&image_url.url) {
                            Some(image) => images.push(image),
                            None => errors.push(field(
                                &[
                                    "messages".into(),
                                    at.into(),
                                    "content".into(),
                                    index.into(),
                                    "image_url".into(),
                                    "url".into(),
                                ],
                                "must be a base64 `data:image/(png|jpeg|gif|webp);base64,…` URL; remote images are not fetched",
                                "value_error",
                            )),
                        },
                    }
                }
                (text.join("\n"), images)
            }
        }
    }
}

/// The image of a `data:` URL, when it is one of the accepted kinds.
pub fn data_url(url: &str) -> Option<tessera_models::ImageInput> {
    let (media_type, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    crate::chat::inline_image(media_type, data)
}

impl ChatCompletionRequest {
    /// The domain's request, or every field error found (located under `body`).
    pub fn translate(self) -> Result<Translated, Vec<FieldError>> {
        let mut errors = Vec::new();
        let refuse = |errors: &mut Vec<FieldError>, name: &str, msg: &str| {
            errors.push(field(&[name.into()], msg, "unsupported"));
        };
        // Counted here: `validator` would want the message types serializable.
        if self.messages.is_empty() || self.messages.len() > 1000 {
            errors.push(field(
                &["messages".into()],
                "give 1 to 1000 messages",
                "length",
            ));
        }
        if self.tools.as_ref().is_some_and(|tools| tools.len() > 128) {
            errors.push(field(&["tools".into()], "at most 128 tools", "length"));
        }
        if self.n.is_some_and(|n| n != 1) {
            refuse(&mut errors, "n", "only one choice (n = 1) is generated");
        }
        if self.logprobs == Some(true) || self.top_logprobs.is_some() {
            refuse(
                &mut errors,
                "logprobs",
                "log probabilities are not returned",
            );
        }
        if self.frequency_penalty.is_some_and(|p| p != 0.0) {
            refuse(
                &mut errors,
                "frequency_penalty",
                "penalties are not supported; only 0",
            );
        }
        if self.presence_penalty.is_some_and(|p| p != 0.0) {
            refuse(
                &mut errors,
                "presence_penalty",
                "penalties are not supported; only 0",
            );
        }
        if self
            .logit_bias
            .as_ref()
            .is_some_and(|bias| !bias.is_empty())
        {
            refuse(&mut errors, "logit_bias", "logit biases are not supported");
        }
        let tool_choice = match self.tool_choice.as_ref().map(ToolChoiceIn::parse) {
            None => ToolChoice::Auto,
            Some(Ok(choice)) => choice,
            Some(Err(msg)) => {
                errors.push(field(&["tool_choice".into()], msg, "value_error"));
                ToolChoice::Auto
            }
        };
        let stateless = !self.store.unwrap_or(false);

        let mut instructions = Vec::new();
        let mut messages = Vec::new();
        let mut positions = Vec::new();
        for (at, message) in self.messages.into_iter().enumerate() {
            let (role, content, tool_calls, tool_call_id) = match message {
                ChatMessageIn::System { content } | ChatMessageIn::Developer { content } => {
                    let (text, images) = content.split(at, &mut errors);
                    if !images.is_empty() {
                        errors.push(field(
                            &["messages".into(), at.into(), "content".into()],
                            "instructions carry text only",
                            "value_error",
                        ));
                    }
                    instructions.push(text);
                    continue;
                }
                ChatMessageIn::User { content } => (Role::User, content, None, None),
                ChatMessageIn::Assistant {
                    content,
                    tool_calls,
                } => (
                    Role::Assistant,
                    content.unwrap_or(ContentIn::Text(String::new())),
                    tool_calls,
                    None,
                ),
                ChatMessageIn::Tool {
                    content,
                    tool_call_id,
                } => (Role::Tool, content, None, Some(tool_call_id)),
            };
            let (content, images) = content.split(at, &mut errors);
            positions.push(at);
            messages.push(NewMessage {
                role,
                content,
                tool_calls: tool_calls
                    .unwrap_or_default()
                    .into_iter()
                    .map(ToolCall::from)
                    .collect(),
                tool_call_id,
                attachments: Vec::new(),
                images,
            });
        }
        let mut tools = Vec::new();
        for (index, tool) in self.tools.unwrap_or_default().into_iter().enumerate() {
            if tool.kind != "function" {
                errors.push(field(
                    &["tools".into(), index.into(), "type".into()],
                    "only `function` tools exist",
                    "enum",
                ));
            }
            tools.push(ToolSpec {
                name: tool.function.name,
                description: tool.function.description,
                parameters: tool
                    .function
                    .parameters
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            });
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let response_format = match self.response_format {
            None | Some(ResponseFormatIn::Text) => None,
            Some(ResponseFormatIn::JsonObject) => Some(JsonSchemaFormat {
                name: "json_object".into(),
                strict: false,
                schema: json!({"type": "object"}),
            }),
            Some(ResponseFormatIn::JsonSchema { json_schema }) => Some(JsonSchemaFormat {
                name: json_schema.name,
                strict: json_schema.strict.unwrap_or(false),
                schema: json_schema
                    .schema
                    .unwrap_or_else(|| json!({"type": "object"})),
            }),
        };
        let reasoning_effort = ReasoningEffortIn::effort(self.reasoning_effort);
        let stream = self.stream.unwrap_or(false);
        Ok(Translated {
            request: CompletionRequest {
                model_id: Some(self.model),
                messages,
                tools,
                tool_choice,
                response_format,
                enable_reasoning: reasoning_effort.is_some(),
                reasoning_effort,
                max_tokens: self.max_completion_tokens.or(self.max_tokens),
                temperature: self.temperature,
                top_p: self.top_p,
                // OpenAI's seed is any integer; the engine takes its bits.
                seed: self.seed.map(|seed| seed as u64),
                stop: match self.stop {
                    None => Vec::new(),
                    Some(StopIn::One(one)) => vec![one],
                    Some(StopIn::Many(many)) => many,
                },
                instructions: Some(instructions.join("\n\n")).filter(|text| !text.is_empty()),
                stateless,
                ..CompletionRequest::default()
            },
            stream,
            include_usage: stream
                && self
                    .stream_options
                    .and_then(|options| options.include_usage)
                    .unwrap_or(false),
            positions,
        })
    }
}

/// The domain's names for request fields, as OpenAI's request spells them.
fn openai_name(name: &str) -> String {
    match name {
        "modelId" => "model".into(),
        "enableReasoning" | "reasoningBudget" => "reasoning_effort".into(),
        "maxTokens" => "max_completion_tokens".into(),
        other => crate::chat::snake_case(other),
    }
}

/// The domain's field errors located as the client sent the request: OpenAI's field names,
/// and message positions counting the instructions folded out.
pub fn located(fields: &[FieldError], positions: &[usize]) -> Vec<FieldError> {
    crate::chat::located_as(fields, positions, openai_name)
}

/// Tokens a completion used.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompletionUsage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
    pub prompt_tokens_details: PromptTokensDetails,
    pub completion_tokens_details: CompletionTokensDetails,
}

/// Where the prompt tokens came from.
#[derive(Debug, Serialize, ToSchema)]
pub struct PromptTokensDetails {
    /// Part of `prompt_tokens` read from a cache (a prompt prefix reused from an earlier
    /// request) rather than processed.
    pub cached_tokens: u32,
}

/// What the completion tokens were spent on.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompletionTokensDetails {
    pub reasoning_tokens: u32,
}

impl CompletionUsage {
    pub fn of(message: &Message) -> Self {
        let usage = message.usage.as_ref().map(|u| u.usage).unwrap_or_default();
        Self {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens(),
            prompt_tokens_details: PromptTokensDetails {
                cached_tokens: usage.cached_input_tokens,
            },
            completion_tokens_details: CompletionTokensDetails {
                reasoning_tokens: usage.reasoning_tokens,
            },
        }
    }
}

/// The answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssistantMessageOut {
    /// Always `assistant`.
    pub role: &'static str,
    /// `null` when the model only called tools.
    pub content: Option<String>,
    /// Always `null`.
    pub refusal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallOut>>,
    /// The model's reasoning (`reasoning_effort`, reasoning models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Tessera's extension: the passages retrieved from the model's datasets (RAG).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<SourceOut>>,
}

impl AssistantMessageOut {
    pub fn of(message: &Message) -> Self {
        Self {
            role: "assistant",
            content: (!message.content.is_empty() || message.tool_calls.is_empty())
                .then(|| message.content.clone()),
            refusal: None,
            tool_calls: (!message.tool_calls.is_empty())
                .then(|| message.tool_calls.iter().map(ToolCallOut::from).collect()),
            reasoning_content: message.reasoning.clone(),
            sources: (!message.sources.is_empty())
                .then(|| message.sources.iter().map(SourceOut::from).collect()),
        }
    }
}

/// The one choice.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChoiceOut {
    pub index: u32,
    pub message: AssistantMessageOut,
    /// `stop`, `length`, `tool_calls` or `content_filter`.
    pub finish_reason: String,
    /// Always `null`.
    #[schema(value_type = Option<Object>)]
    pub logprobs: Option<Value>,
}

/// A chat completion.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-…`.
    pub id: String,
    /// Always `chat.completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: i64,
    /// The model as requested.
    pub model: String,
    pub choices: Vec<ChoiceOut>,
    pub usage: CompletionUsage,
    /// Always `null`.
    pub system_fingerprint: Option<String>,
}

/// The id OpenAI clients see for a completion.
pub fn completion_id(message: &tessera_chats::MessageId) -> String {
    format!("chatcmpl-{message}")
}

/// The reason an answer ended, as stored.
pub fn finish_reason(message: &Message) -> String {
    message
        .usage
        .as_ref()
        .map_or("stop", |usage| usage.finish_reason.as_str())
        .to_owned()
}

impl ChatCompletion {
    /// The completion of a stored answer; `model` as the client named it.
    pub fn of(id: String, created: i64, model: String, message: &Message) -> Self {
        Self {
            id,
            object: "chat.completion",
            created,
            model,
            choices: vec![ChoiceOut {
                index: 0,
                message: AssistantMessageOut::of(message),
                finish_reason: finish_reason(message),
                logprobs: None,
            }],
            usage: CompletionUsage::of(message),
            system_fingerprint: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> Result<Translated, Vec<FieldError>> {
        serde_json::from_value::<ChatCompletionRequest>(body)
            .unwrap()
            .translate()
    }

    #[test]
    fn instructions_fold_out_and_positions_remember_where_messages_were() {
        let translated = request(json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hi"}], "name": "ann"},
                {"role": "developer", "content": "No emoji."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ], "refusal": null},
                {"role": "tool", "tool_call_id": "c1", "content": "42"}
            ],
            "stop": "END",
            "store": false
        }))
        .ok()
        .unwrap();
        let request = translated.request;
        assert_eq!(
            request.instructions.as_deref(),
            Some("Be brief.\n\nNo emoji.")
        );
        assert_eq!(translated.positions, vec![1, 3, 4]);
        assert_eq!(request.messages[0].content, "Hi");
        assert_eq!(request.messages[1].tool_calls[0].id, "c1");
        assert_eq!(request.messages[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(request.stop, vec!["END".to_owned()]);
        assert!(request.stateless);
    }

    #[test]
    fn parameters_that_cannot_be_honoured_are_refused() {
        let fields = request(json!({
            "model": "m",
            "messages": [{"role": "user", "content": "Hi"}],
            "n": 2,
            "logprobs": true,
            "presence_penalty": 0.5,
            "tool_choice": "any"
        }))
        .err()
        .unwrap();
        let params: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        assert_eq!(params.len(), 4, "{params:?}");
        let forced = request(json!({
            "model": "m",
            "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "tool_choice": {"type": "function", "function": {"name": "f"}}
        }))
        .ok()
        .unwrap();
        assert_eq!(forced.request.tool_choice, ToolChoice::Function("f".into()));
        assert_eq!(forced.request.tools.len(), 1);
    }

    #[test]
    fn domain_locations_take_openai_names_and_positions() {
        let fields = located(
            &[
                FieldError::new(
                    [
                        "body".into(),
                        "messages".into(),
                        1.into(),
                        "toolCallId".into(),
                    ],
                    "x",
                    "y",
                ),
                FieldError::new(["body".into(), "modelId".into()], "x", "y"),
            ],
            &[2, 5],
        );
        assert_eq!(
            fields[0].to_string().split(':').next(),
            Some("body.messages.5.tool_call_id")
        );
        assert_eq!(fields[1].to_string().split(':').next(), Some("body.model"));
    }

    #[test]
    fn only_data_urls_of_images_are_accepted() {
        assert!(data_url("data:image/png;base64,iVBORw0KGgo=").is_some());
        assert!(data_url("https://example.com/cat.png").is_none());
        assert!(data_url("data:text/plain;base64,aGk=").is_none());
    }
}
