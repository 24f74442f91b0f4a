//! The chat shapes `/v1`'s answers, its streams and OpenAI's dialect share: an assistant's
//! tool calls (OpenAI's own shape, which `/v1` adopted), the retrieved passages an answer
//! cites (Tessera's extension on both surfaces) and the tokens an answer used.

use serde::{Deserialize, Serialize};
use tessera_chats::Source;
use tessera_kernel::{FieldError, LocSegment};
use tessera_models::{ToolCall, Usage};
use utoipa::ToSchema;

/// A function call: its name and its arguments as a JSON document in a string.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text, e.g. `{"city":"Oslo"}`.
    pub arguments: String,
}

/// A tool call of an assistant message.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallOut {
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

impl From<&ToolCall> for ToolCallOut {
    fn from(call: &ToolCall) -> Self {
        Self {
            id: call.id.clone(),
            kind: function_type(),
            function: FunctionCall {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
        }
    }
}

impl From<ToolCallOut> for ToolCall {
    fn from(call: ToolCallOut) -> Self {
        Self {
            id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
        }
    }
}

/// A retrieved passage an answer is grounded on.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceOut {
    /// `<fileId>#<chunk ordinal>`.
    pub id: String,
    pub file_id: String,
    pub dataset_id: Option<String>,
    /// The file's name and where in it, for display, e.g. `policy.pdf, page 2`.
    pub title: Option<String>,
    pub text: String,
    pub score: f32,
    #[schema(example = "policy.pdf")]
    pub file_name: Option<String>,
    /// Where the passage sits in the file.
    pub location: Option<SourceLocationOut>,
}

/// Where a cited passage sits in its file.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceLocationOut {
    /// 1-based page (PDF).
    pub page: Option<u32>,
    /// The heading (Markdown, DOCX), row range (CSV) or JSON path the passage is under.
    pub section: Option<String>,
    /// Character offsets of the passage in the file's extracted text.
    pub char_start: u64,
    pub char_end: u64,
}

impl From<&Source> for SourceOut {
    fn from(source: &Source) -> Self {
        Self {
            id: source.id.clone(),
            file_id: source.file_id.clone(),
            dataset_id: source.dataset_id.clone(),
            title: source.title.clone(),
            text: source.text.clone(),
            score: source.score,
            file_name: source.file_name.clone(),
            location: source.location.as_ref().map(|l| SourceLocationOut {
                page: l.page,
                section: l.section.clone(),
                char_start: l.char_start,
                char_end: l.char_end,
            }),
        }
    }
}

/// Tokens a completion used.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageOut {
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub total_tokens: u32,
    /// Part of `outputTokens` spent on reasoning, when the provider says.
    pub reasoning_tokens: u32,
    /// Part of `inputTokens` read from a cache (a prompt prefix reused from an earlier
    /// request) rather than processed, when the provider says.
    pub cached_input_tokens: u32,
}

impl From<&Usage> for TokenUsageOut {
    fn from(usage: &Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens(),
            reasoning_tokens: usage.reasoning_tokens,
            cached_input_tokens: usage.cached_input_tokens,
        }
    }
}

/// A camelCase name in snake_case (`toolCallId` → `tool_call_id`).
pub fn snake_case(name: &str) -> String {
    let mut snake = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    snake
}

/// The domain's field errors located as a dialect's client sent the request: `rename` spells
/// each field as the dialect does, and an index after `messages` becomes the position of
/// that message in the client's list (`positions`, one per message the domain saw).
pub fn located_as(
    fields: &[FieldError],
    positions: &[usize],
    rename: fn(&str) -> String,
) -> Vec<FieldError> {
    fields
        .iter()
        .map(|field| {
            let mut loc = Vec::with_capacity(field.loc.len());
            let mut after_messages = false;
            for segment in &field.loc {
                loc.push(match segment {
                    LocSegment::Index(index) if after_messages => {
                        LocSegment::Index(positions.get(*index).copied().unwrap_or(*index))
                    }
                    LocSegment::Field(name) => LocSegment::Field(rename(name)),
                    other => other.clone(),
                });
                after_messages = matches!(segment, LocSegment::Field(name) if name == "messages");
            }
            FieldError::new(loc, field.msg.clone(), field.kind.clone())
        })
        .collect()
}

/// A field error located in the request body (`body.` + `loc`).
pub fn body_field(loc: &[LocSegment], msg: impl Into<String>, kind: &str) -> FieldError {
    let mut full = vec![LocSegment::from("body")];
    full.extend_from_slice(loc);
    FieldError::new(full, msg, kind)
}

/// An image given inline as base64, when it is one of the accepted kinds (PNG, JPEG, GIF,
/// WebP) and decodes.
pub fn inline_image(media_type: &str, data: &str) -> Option<tessera_models::ImageInput> {
    if !matches!(
        media_type,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    ) {
        return None;
    }
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()?;
    Some(tessera_chats::image(media_type, bytes))
}
