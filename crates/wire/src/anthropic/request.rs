//! Anthropic's `POST /v1/messages` request, translated into the chats domain's
//! `CompletionRequest`: `system` becomes the caller's instructions after the model's own
//! system prompt, each `tool_result` block a tool message, `tool_use` blocks the assistant's
//! tool calls, `thinking` the engine's reasoning; a request is stateless, as Anthropic's
//! API is. What Tessera cannot honour (`top_k`, Anthropic's server tools, remote images,
//! documents) is refused with the field named, never ignored; `cache_control` marks are
//! accepted (the engine and the providers reuse prompt prefixes on their own).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_chats::{CompletionRequest, NewMessage};
use tessera_kernel::{FieldError, LocSegment};
use tessera_models::{
    ImageInput, JsonSchemaFormat, ReasoningEffort, Role, ToolCall, ToolChoice, ToolSpec,
};
use utoipa::ToSchema;
use validator::Validate;

use crate::chat::body_field as field;

/// Text, or an array of content blocks.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum AnthropicContent {
    Text(String),
    Blocks(Vec<ContentBlockIn>),
}

/// One block of a message's content.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlockIn {
    Text {
        text: String,
        /// Accepted: prompt prefixes are reused without marks.
        #[schema(value_type = Option<Object>)]
        cache_control: Option<Value>,
    },
    /// An image (user messages; vision models, given inline as base64).
    Image {
        source: ImageSourceIn,
        #[schema(value_type = Option<Object>)]
        cache_control: Option<Value>,
    },
    /// A tool call of an earlier assistant turn.
    ToolUse {
        id: String,
        name: String,
        /// The call's arguments.
        #[schema(value_type = Object)]
        input: Value,
        #[schema(value_type = Option<Object>)]
        cache_control: Option<Value>,
    },
    /// What a tool call returned (user messages).
    ToolResult {
        tool_use_id: String,
        content: Option<ToolResultContentIn>,
        /// The tool failed: the model reads the content as its error.
        is_error: Option<bool>,
        #[schema(value_type = Option<Object>)]
        cache_control: Option<Value>,
    },
    /// An earlier answer's reasoning: accepted and not replayed to the model.
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    /// Accepted and not replayed, as `thinking`.
    RedactedThinking { data: String },
}

/// An image's bytes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSourceIn {
    /// `image/jpeg`, `image/png`, `image/gif` or `image/webp`, base64-encoded.
    Base64 { media_type: String, data: String },
    /// Refused: remote images are not fetched.
    Url { url: String },
}

/// A tool result: text, or blocks of text.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ToolResultContentIn {
    Text(String),
    Blocks(Vec<ToolResultBlockIn>),
}

/// One block of a tool result (text only: tool messages carry no images here).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ToolResultBlockIn {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
}

/// Who speaks.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnthropicRole {
    User,
    Assistant,
    /// Instructions within the conversation, folded into the system prompt.
    System,
}

/// A turn of the conversation.
#[derive(Debug, Deserialize, ToSchema)]
pub struct MessageParam {
    pub role: AnthropicRole,
    pub content: AnthropicContent,
}

/// The system prompt: text, or text blocks.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum SystemIn {
    Text(String),
    Blocks(Vec<SystemBlockIn>),
}

/// A text block of the system prompt.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SystemBlockIn {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
    #[schema(value_type = Option<Object>)]
    pub cache_control: Option<Value>,
}

/// A tool the model may call (custom tools; Anthropic's own server tools are refused).
#[derive(Debug, Deserialize, ToSchema)]
pub struct AnthropicTool {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the tool's input.
    #[schema(value_type = Option<Object>)]
    pub input_schema: Option<Value>,
    /// `custom` or absent.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Accepted: the engine always constrains a call's input to its schema.
    pub strict: Option<bool>,
    #[schema(value_type = Option<Object>)]
    pub cache_control: Option<Value>,
}

/// Whether and which tool the model must call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AnthropicToolChoice {
    /// The model decides (the default).
    Auto {
        /// Accepted; the model decides how many calls it makes.
        disable_parallel_tool_use: Option<bool>,
    },
    /// At least one call, of any tool.
    Any {
        disable_parallel_tool_use: Option<bool>,
    },
    /// A call of the named tool.
    Tool {
        name: String,
        disable_parallel_tool_use: Option<bool>,
    },
    /// No call.
    None,
}

/// Extended thinking: the engine's reasoning, returned as `thinking` blocks.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThinkingIn {
    /// Think, within `budget_tokens` (at least 1,024 and below `max_tokens`).
    Enabled {
        budget_tokens: u32,
        display: Option<ThinkingDisplay>,
    },
    /// Think as much as the model sees fit.
    Adaptive {
        display: Option<ThinkingDisplay>,
    },
    Disabled,
}

/// Whether the thinking's text is returned (`summarized`, the default) or left out
/// (`omitted`: the blocks come back empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingDisplay {
    Summarized,
    Omitted,
}

/// Structured output and effort.
#[derive(Debug, Deserialize, ToSchema)]
pub struct OutputConfigIn {
    /// How hard to think: `low`, `medium`, `high`, `xhigh` or `max` (the last two think as
    /// `high`).
    pub effort: Option<EffortIn>,
    /// The answer must be JSON following this schema.
    pub format: Option<OutputFormatIn>,
}

/// An answer format.
#[derive(Debug, Deserialize, ToSchema)]
pub struct OutputFormatIn {
    /// Always `json_schema`.
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(value_type = Object)]
    pub schema: Value,
}

/// Effort levels.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EffortIn {
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

/// Request metadata.
#[derive(Debug, Deserialize, Validate, ToSchema)]
pub struct MetadataIn {
    /// An opaque id of the end user, accepted for compatibility (usage is attributed to
    /// the credential).
    #[validate(length(max = 512))]
    #[schema(max_length = 512)]
    pub user_id: Option<String>,
}

/// Anthropic's message creation request. Unknown members are refused, so a parameter that
/// would change the answer is never silently dropped.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateMessageRequest {
    /// A catalog model id (`GET /anthropic/v1/models`) or one of the organization's models
    /// (`mdl_…`, with its system prompt and datasets).
    #[validate(length(min = 1, max = 255))]
    #[schema(
        min_length = 1,
        max_length = 255,
        example = "local/smollm2-135m-instruct"
    )]
    pub model: String,
    #[schema(min_items = 1, max_items = 1000)]
    pub messages: Vec<MessageParam>,
    /// The most tokens the answer may take (its thinking included).
    #[validate(range(min = 1))]
    #[schema(minimum = 1)]
    pub max_tokens: u32,
    pub system: Option<SystemIn>,
    #[validate(nested)]
    pub metadata: Option<MetadataIn>,
    /// Generation stops before any of these.
    #[schema(max_items = 16)]
    pub stop_sequences: Option<Vec<String>>,
    /// Server-Sent Events in Anthropic's sequence instead of one message.
    pub stream: Option<bool>,
    #[validate(range(min = 0.0, max = 1.0))]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub temperature: Option<f32>,
    #[validate(range(min = 0.0, max = 1.0))]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub top_p: Option<f32>,
    /// Not supported.
    pub top_k: Option<u32>,
    #[schema(max_items = 128)]
    pub tools: Option<Vec<AnthropicTool>>,
    pub tool_choice: Option<AnthropicToolChoice>,
    pub thinking: Option<ThinkingIn>,
    pub output_config: Option<OutputConfigIn>,
    /// Accepted: prompt prefixes are reused without marks.
    #[schema(value_type = Option<Object>)]
    pub cache_control: Option<Value>,
    /// Accepted (Claude Code sends it): earlier thinking, which its edits clear, is never
    /// replayed to the model here.
    #[schema(value_type = Option<Object>)]
    pub context_management: Option<Value>,
    /// Accepted and ignored.
    pub service_tier: Option<String>,
    /// Accepted and ignored.
    pub speed: Option<String>,
    /// Accepted and ignored.
    pub inference_geo: Option<String>,
}

/// What `POST /v1/messages/count_tokens` reads: a message request without the answer's
/// parameters.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CountTokensRequest {
    /// As for a message.
    #[validate(length(min = 1, max = 255))]
    #[schema(
        min_length = 1,
        max_length = 255,
        example = "local/smollm2-135m-instruct"
    )]
    pub model: String,
    #[schema(min_items = 1, max_items = 1000)]
    pub messages: Vec<MessageParam>,
    pub system: Option<SystemIn>,
    #[schema(max_items = 128)]
    pub tools: Option<Vec<AnthropicTool>>,
    pub tool_choice: Option<AnthropicToolChoice>,
    pub thinking: Option<ThinkingIn>,
    pub output_config: Option<OutputConfigIn>,
    #[schema(value_type = Option<Object>)]
    pub cache_control: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub context_management: Option<Value>,
}

/// The prompt's size.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenCount {
    /// The tokens the model would read: its system prompt, retrieved passages, the messages
    /// (earlier ones the context window cannot hold left out, as a message would) and the
    /// tool definitions. An estimate for tool definitions, as Anthropic's own count is.
    pub input_tokens: u32,
}

impl CountTokensRequest {
    /// The domain's request the count is of (no answer length: the window is the
    /// prompt's), or every field error found.
    pub fn translate(self) -> Result<Translated, Vec<FieldError>> {
        let mut translated = CreateMessageRequest {
            model: self.model,
            messages: self.messages,
            // Any thinking budget fits.
            max_tokens: u32::MAX,
            system: self.system,
            metadata: None,
            stop_sequences: None,
            stream: None,
            temperature: None,
            top_p: None,
            top_k: None,
            tools: self.tools,
            tool_choice: self.tool_choice,
            thinking: self.thinking,
            output_config: self.output_config,
            cache_control: None,
            context_management: None,
            service_tier: None,
            speed: None,
            inference_geo: None,
        }
        .translate()?;
        translated.request.max_tokens = None;
        Ok(translated)
    }
}

/// What the translation keeps beside the domain request.
#[derive(Debug)]
pub struct Translated {
    pub request: CompletionRequest,
    pub stream: bool,
    /// `thinking.display` was not `omitted`.
    pub show_thinking: bool,
    /// The position in `messages` of each message the domain sees (a user turn with tool
    /// results becomes several), to name parameters as the client sent them.
    pub positions: Vec<usize>,
}

fn block_loc(at: usize, index: usize, rest: &[&str]) -> Vec<LocSegment> {
    let mut loc = vec!["messages".into(), at.into(), "content".into(), index.into()];
    loc.extend(rest.iter().map(|name| LocSegment::from(*name)));
    loc
}

impl AnthropicContent {
    fn blocks(self) -> Vec<ContentBlockIn> {
        match self {
            AnthropicContent::Text(text) => vec![ContentBlockIn::Text {
                text,
                cache_control: None,
            }],
            AnthropicContent::Blocks(blocks) => blocks,
        }
    }
}

impl ImageSourceIn {
    fn image(self) -> Result<ImageInput, &'static str> {
        match self {
            ImageSourceIn::Url { .. } => {
                Err("remote images are not fetched; give the image as `base64`")
            }
            ImageSourceIn::Base64 { media_type, data } => {
                crate::chat::inline_image(&media_type, &data).ok_or(
                    "must be base64 `data` of an image/jpeg, image/png, image/gif or image/webp",
                )
            }
        }
    }
}

impl ToolResultContentIn {
    fn text(self, loc: Vec<LocSegment>, errors: &mut Vec<FieldError>) -> String {
        match self {
            ToolResultContentIn::Text(text) => text,
            ToolResultContentIn::Blocks(blocks) => {
                let mut parts = Vec::with_capacity(blocks.len());
                for (index, block) in blocks.into_iter().enumerate() {
                    match (block.kind.as_str(), block.text) {
                        ("text", Some(text)) => parts.push(text),
                        _ => {
                            let mut at = loc.clone();
                            at.push(index.into());
                            errors.push(field(
                                &at,
                                "tool results carry text blocks only",
                                "unsupported",
                            ));
                        }
                    }
                }
                parts.join("\n")
            }
        }
    }
}

/// The engine's effort for Anthropic's.
fn effort(effort: EffortIn) -> ReasoningEffort {
    match effort {
        EffortIn::Low => ReasoningEffort::Low,
        EffortIn::Medium => ReasoningEffort::Medium,
        EffortIn::High | EffortIn::Xhigh | EffortIn::Max => ReasoningEffort::High,
    }
}

/// The smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

impl CreateMessageRequest {
    /// The domain's request, or every field error found (located under `body`).
    pub fn translate(self) -> Result<Translated, Vec<FieldError>> {
        let mut errors = Vec::new();
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
        if self
            .stop_sequences
            .as_ref()
            .is_some_and(|stops| stops.len() > 16)
        {
            errors.push(field(
                &["stop_sequences".into()],
                "at most 16 stop sequences",
                "length",
            ));
        }
        if self.top_k.is_some() {
            errors.push(field(
                &["top_k".into()],
                "top-k sampling is not supported",
                "unsupported",
            ));
        }
        // `system` first, then the conversation's system turns, in order.
        let mut instructions = match self.system {
            None => Vec::new(),
            Some(SystemIn::Text(text)) => vec![text],
            Some(SystemIn::Blocks(blocks)) => {
                let mut texts = Vec::with_capacity(blocks.len());
                for (index, block) in blocks.into_iter().enumerate() {
                    if block.kind != "text" {
                        errors.push(field(
                            &["system".into(), index.into(), "type".into()],
                            "system blocks are `text` blocks",
                            "enum",
                        ));
                    }
                    texts.push(block.text);
                }
                vec![texts.join("\n\n")]
            }
        };

        let mut messages = Vec::new();
        let mut positions = Vec::new();
        for (at, message) in self.messages.into_iter().enumerate() {
            match message.role {
                AnthropicRole::User => user_turn(
                    at,
                    message.content,
                    &mut messages,
                    &mut positions,
                    &mut errors,
                ),
                AnthropicRole::System => {
                    instructions.push(system_turn(at, message.content, &mut errors));
                }
                AnthropicRole::Assistant => {
                    messages.push(assistant_turn(at, message.content, &mut errors));
                    positions.push(at);
                }
            }
        }

        let mut tools = Vec::new();
        for (index, tool) in self.tools.unwrap_or_default().into_iter().enumerate() {
            if let Some(kind) = tool.kind.as_deref().filter(|kind| *kind != "custom") {
                errors.push(field(
                    &["tools".into(), index.into(), "type".into()],
                    format!("Anthropic's server tools (`{kind}`) are not available here; give custom tools with a `name` and an `input_schema`"),
                    "unsupported",
                ));
                continue;
            }
            let Some(parameters) = tool.input_schema else {
                errors.push(field(
                    &["tools".into(), index.into(), "input_schema".into()],
                    "a custom tool needs an `input_schema`",
                    "missing",
                ));
                continue;
            };
            tools.push(ToolSpec {
                name: tool.name,
                description: tool.description,
                parameters,
            });
        }
        let tool_choice = match self.tool_choice {
            None | Some(AnthropicToolChoice::Auto { .. }) => ToolChoice::Auto,
            Some(AnthropicToolChoice::Any { .. }) => ToolChoice::Required,
            Some(AnthropicToolChoice::Tool { name, .. }) => ToolChoice::Function(name),
            Some(AnthropicToolChoice::None) => ToolChoice::None,
        };

        let adaptive = matches!(self.thinking, Some(ThinkingIn::Adaptive { .. }));
        let (enable_reasoning, reasoning_budget, display) = match self.thinking {
            None | Some(ThinkingIn::Disabled) => (false, None, None),
            Some(ThinkingIn::Adaptive { display }) => (true, None, display),
            Some(ThinkingIn::Enabled {
                budget_tokens,
                display,
            }) => {
                if budget_tokens < MIN_THINKING_BUDGET || budget_tokens >= self.max_tokens {
                    errors.push(field(
                        &["thinking".into(), "budget_tokens".into()],
                        format!(
                            "must be at least {MIN_THINKING_BUDGET} and less than `max_tokens`"
                        ),
                        "range",
                    ));
                }
                (true, Some(budget_tokens), display)
            }
        };
        let (reasoning_effort, response_format) = match self.output_config {
            None => (None, None),
            Some(config) => {
                let format = match config.format {
                    None => None,
                    Some(format) if format.kind == "json_schema" => Some(JsonSchemaFormat {
                        name: "output".into(),
                        strict: true,
                        schema: format.schema,
                    }),
                    Some(_) => {
                        errors.push(field(
                            &["output_config".into(), "format".into(), "type".into()],
                            "only `json_schema` formats exist",
                            "enum",
                        ));
                        None
                    }
                };
                (config.effort.map(effort), format)
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Translated {
            request: CompletionRequest {
                model_id: Some(self.model),
                messages,
                tools,
                tool_choice,
                response_format,
                enable_reasoning,
                // Adaptive thinking on a model without reasoning answers without it.
                reasoning_if_supported: adaptive,
                reasoning_budget,
                reasoning_effort: reasoning_effort.filter(|_| enable_reasoning),
                max_tokens: Some(self.max_tokens),
                temperature: self.temperature,
                top_p: self.top_p,
                stop: self.stop_sequences.unwrap_or_default(),
                instructions: Some(instructions.join("\n\n")).filter(|text| !text.is_empty()),
                stateless: true,
                ..CompletionRequest::default()
            },
            stream: self.stream.unwrap_or(false),
            show_thinking: display != Some(ThinkingDisplay::Omitted),
            positions,
        })
    }
}

/// A user turn: each tool result becomes a tool message (in order), the text and images
/// one user message after them.
fn user_turn(
    at: usize,
    content: AnthropicContent,
    messages: &mut Vec<NewMessage>,
    positions: &mut Vec<usize>,
    errors: &mut Vec<FieldError>,
) {
    let mut text = Vec::new();
    let mut images = Vec::new();
    let mut results = 0;
    for (index, block) in content.blocks().into_iter().enumerate() {
        match block {
            ContentBlockIn::Text { text: part, .. } => text.push(part),
            ContentBlockIn::Image { source, .. } => match source.image() {
                Ok(image) => images.push(image),
                Err(msg) => errors.push(field(
                    &block_loc(at, index, &["source"]),
                    msg,
                    "value_error",
                )),
            },
            ContentBlockIn::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => {
                let body = content
                    .map(|content| content.text(block_loc(at, index, &["content"]), errors))
                    .unwrap_or_default();
                // A failed tool's text reads as an error to the model, as Anthropic's does.
                let body = if is_error == Some(true) {
                    format!("Error: {body}")
                } else {
                    body
                };
                results += 1;
                positions.push(at);
                messages.push(NewMessage {
                    role: Role::Tool,
                    content: body,
                    tool_calls: Vec::new(),
                    tool_call_id: Some(tool_use_id),
                    attachments: Vec::new(),
                    images: Vec::new(),
                });
            }
            ContentBlockIn::ToolUse { .. }
            | ContentBlockIn::Thinking { .. }
            | ContentBlockIn::RedactedThinking { .. } => errors.push(field(
                &block_loc(at, index, &["type"]),
                "only assistant turns carry `tool_use` and `thinking` blocks",
                "value_error",
            )),
        }
    }
    if results == 0 || !text.is_empty() || !images.is_empty() {
        positions.push(at);
        messages.push(NewMessage {
            role: Role::User,
            content: text.join("\n"),
            tool_calls: Vec::new(),
            tool_call_id: None,
            attachments: Vec::new(),
            images,
        });
    }
}

/// A system turn of the conversation (Claude Code sends its environment so): text blocks,
/// appended to the instructions as the OpenAI dialect folds out its system messages.
fn system_turn(at: usize, content: AnthropicContent, errors: &mut Vec<FieldError>) -> String {
    let mut text = Vec::new();
    for (index, block) in content.blocks().into_iter().enumerate() {
        match block {
            ContentBlockIn::Text { text: part, .. } => text.push(part),
            _ => errors.push(field(
                &block_loc(at, index, &["type"]),
                "system turns carry `text` blocks only",
                "value_error",
            )),
        }
    }
    text.join("\n")
}

/// An assistant turn: its text and tool calls (earlier thinking is not replayed).
fn assistant_turn(
    at: usize,
    content: AnthropicContent,
    errors: &mut Vec<FieldError>,
) -> NewMessage {
    let mut text = Vec::new();
    let mut tool_calls = Vec::new();
    for (index, block) in content.blocks().into_iter().enumerate() {
        match block {
            ContentBlockIn::Text { text: part, .. } => text.push(part),
            ContentBlockIn::ToolUse {
                id, name, input, ..
            } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: input.to_string(),
            }),
            ContentBlockIn::Thinking { .. } | ContentBlockIn::RedactedThinking { .. } => {}
            ContentBlockIn::Image { .. } | ContentBlockIn::ToolResult { .. } => errors.push(field(
                &block_loc(at, index, &["type"]),
                "assistant turns carry `text`, `tool_use` and `thinking` blocks",
                "value_error",
            )),
        }
    }
    NewMessage {
        role: Role::Assistant,
        content: text.join(""),
        tool_calls,
        tool_call_id: None,
        attachments: Vec::new(),
        images: Vec::new(),
    }
}

/// The domain's names for request fields, as Anthropic's request spells them.
pub fn anthropic_name(name: &str) -> String {
    match name {
        "modelId" => "model".into(),
        "enableReasoning" | "reasoningBudget" | "reasoningEffort" => "thinking".into(),
        "stop" => "stop_sequences".into(),
        "instructions" => "system".into(),
        "responseFormat" => "output_config".into(),
        "toolCalls" => "content".into(),
        "toolCallId" => "tool_use_id".into(),
        other => crate::chat::snake_case(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(body: Value) -> Result<Translated, Vec<FieldError>> {
        serde_json::from_value::<CreateMessageRequest>(body)
            .unwrap()
            .translate()
    }

    fn request_of(body: Value) -> Translated {
        request(body).ok().unwrap()
    }

    #[test]
    fn system_tool_results_and_tool_uses_become_the_domains_messages() {
        let translated = request(json!({
            "model": "m",
            "max_tokens": 64,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "call it", "signature": "s"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "-3 C"}]},
                    {"type": "text", "text": "And now?"}
                ]}
            ],
            "tools": [{"name": "weather", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
            "stop_sequences": ["END"],
            "metadata": {"user_id": "u-1"}
        }))
        .ok()
        .unwrap();
        let request = translated.request;
        assert_eq!(request.instructions.as_deref(), Some("Be brief."));
        let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::User]);
        assert_eq!(translated.positions, vec![0, 1, 2, 2]);
        assert_eq!(request.messages[1].content, "Checking.");
        assert_eq!(
            request.messages[1].tool_calls[0].arguments,
            r#"{"city":"Oslo"}"#
        );
        assert_eq!(request.messages[2].tool_call_id.as_deref(), Some("toolu_1"));
        assert_eq!(request.messages[2].content, "-3 C");
        assert_eq!(request.messages[3].content, "And now?");
        assert_eq!(request.tool_choice, ToolChoice::Required);
        assert_eq!(request.stop, vec!["END".to_owned()]);
        assert_eq!(request.max_tokens, Some(64));
        assert!(request.stateless && !request.enable_reasoning);
        let with_turn = request_of(json!({
            "model": "m",
            "max_tokens": 8,
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "system", "content": [{"type": "text", "text": "The time is noon."}]}
            ]
        }));
        assert_eq!(with_turn.positions, vec![0]);
        assert_eq!(
            with_turn.request.instructions.as_deref(),
            Some("Be brief.\n\nThe time is noon.")
        );
    }

    #[test]
    fn thinking_asks_for_reasoning_within_its_budget() {
        let translated = request(json!({
            "model": "m",
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": "Hi"}],
            "thinking": {"type": "enabled", "budget_tokens": 2048, "display": "omitted"}
        }))
        .ok()
        .unwrap();
        assert!(translated.request.enable_reasoning);
        assert_eq!(translated.request.reasoning_budget, Some(2048));
        assert!(!translated.show_thinking);
        let fields = request(json!({
            "model": "m",
            "max_tokens": 1000,
            "messages": [{"role": "user", "content": "Hi"}],
            "thinking": {"type": "enabled", "budget_tokens": 1000}
        }))
        .err()
        .unwrap();
        assert_eq!(fields.len(), 1);
        assert!(
            fields[0]
                .to_string()
                .starts_with("body.thinking.budget_tokens"),
            "{}",
            fields[0]
        );
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_with_its_location() {
        let fields = request(json!({
            "model": "m",
            "max_tokens": 16,
            "top_k": 5,
            "messages": [
                {"role": "user", "content": [
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}}
                ]}
            ],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}]
        }))
        .err()
        .unwrap();
        let locations: Vec<String> = fields
            .iter()
            .map(|f| f.to_string().split(':').next().unwrap().to_owned())
            .collect();
        assert_eq!(
            locations,
            [
                "body.top_k",
                "body.messages.0.content.0.source",
                "body.messages.0.content.1.type",
                "body.tools.0.type"
            ]
        );
        let unknown = serde_json::from_value::<CreateMessageRequest>(json!({
            "model": "m", "max_tokens": 1, "messages": [], "frequency_penalty": 1
        }));
        assert!(unknown.is_err(), "unknown members are refused");
    }

    #[test]
    fn inline_images_and_structured_output_are_translated() {
        let translated = request(json!({
            "model": "m",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "What is it?"}
            ]}],
            "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}, "effort": "max"}
        }))
        .ok()
        .unwrap();
        let request = translated.request;
        assert_eq!(request.messages[0].images.len(), 1);
        assert_eq!(
            request.response_format.unwrap().schema,
            json!({"type": "object"})
        );
        assert_eq!(request.reasoning_effort, None, "effort needs thinking");
    }
}
