//! Anthropic's `message` object, built from a stored answer: its reasoning as a `thinking`
//! block, its text, its tool calls as `tool_use` blocks, why it stopped in Anthropic's
//! words, and its usage with the prompt tokens read from a cache apart (Anthropic counts
//! them outside `input_tokens`).

use serde::Serialize;
use serde_json::Value;
use tessera_chats::{Message, MessageId};
use tessera_models::{FinishReason, ToolCall, Usage};
use utoipa::ToSchema;

use crate::chat::SourceOut;

/// One block of the answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlockOut {
    /// The model's reasoning (with `thinking`); empty when `display` is `omitted`.
    Thinking {
        thinking: String,
        /// Always empty: Tessera does not sign reasoning, and earlier thinking sent back is
        /// not replayed to the model.
        signature: String,
    },
    Text {
        text: String,
    },
    /// A call of one of the request's tools.
    ToolUse {
        id: String,
        name: String,
        /// The call's arguments.
        #[schema(value_type = Object)]
        input: Value,
    },
}

/// Tokens the answer used.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnthropicUsage {
    /// Prompt tokens processed (those read from a cache are apart).
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Always 0: caching is automatic, never a separately billed write.
    pub cache_creation_input_tokens: u32,
    /// Prompt tokens read from a cache (a prefix reused from an earlier request).
    pub cache_read_input_tokens: u32,
}

impl AnthropicUsage {
    pub fn of(usage: &Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens.saturating_sub(usage.cached_input_tokens),
            output_tokens: usage.output_tokens,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: usage.cached_input_tokens,
        }
    }
}

/// An answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnthropicMessage {
    /// `msg_…`.
    pub id: String,
    /// Always `message`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Always `assistant`.
    pub role: &'static str,
    /// The model as requested.
    pub model: String,
    pub content: Vec<ContentBlockOut>,
    /// `end_turn`, `max_tokens`, `tool_use` or `refusal` (or a provider's own reason).
    pub stop_reason: String,
    /// Always `null`: an answer cut by a stop sequence reports `end_turn`.
    pub stop_sequence: Option<String>,
    pub usage: AnthropicUsage,
    /// Tessera's extension: the passages retrieved from the model's datasets (RAG).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<SourceOut>>,
}

/// The id Anthropic clients see for an answer.
pub fn message_id(message: &MessageId) -> String {
    message.to_string()
}

/// Why an answer ended, in Anthropic's words.
pub fn stop_reason(reason: Option<&FinishReason>) -> String {
    match reason {
        None | Some(FinishReason::Stop) => "end_turn".into(),
        Some(FinishReason::Length) => "max_tokens".into(),
        Some(FinishReason::ToolCalls) => "tool_use".into(),
        Some(FinishReason::ContentFilter) => "refusal".into(),
        Some(FinishReason::Other(other)) => other.clone(),
    }
}

/// A tool call's arguments as the object Anthropic's `input` is (the text itself when a
/// provider returned arguments that are not JSON, rather than losing them).
pub fn tool_input(call: &ToolCall) -> Value {
    if call.arguments.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::String(call.arguments.clone()))
}

impl AnthropicMessage {
    /// The message of a stored answer; `model` as the client named it.
    pub fn of(model: String, message: &Message, show_thinking: bool) -> Self {
        let mut content = Vec::new();
        if let Some(reasoning) = message.reasoning.as_ref().filter(|r| !r.is_empty()) {
            content.push(ContentBlockOut::Thinking {
                thinking: if show_thinking {
                    reasoning.clone()
                } else {
                    String::new()
                },
                signature: String::new(),
            });
        }
        // Anthropic refuses empty text blocks sent back: an answer of tool calls only has none.
        if !message.content.is_empty() {
            content.push(ContentBlockOut::Text {
                text: message.content.clone(),
            });
        }
        content.extend(
            message
                .tool_calls
                .iter()
                .map(|call| ContentBlockOut::ToolUse {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: tool_input(call),
                }),
        );
        let usage = message.usage.as_ref();
        Self {
            id: message_id(&message.id),
            kind: "message",
            role: "assistant",
            model,
            content,
            stop_reason: stop_reason(usage.map(|usage| &usage.finish_reason)),
            stop_sequence: None,
            usage: AnthropicUsage::of(&usage.map(|usage| usage.usage).unwrap_or_default()),
            sources: (!message.sources.is_empty())
                .then(|| message.sources.iter().map(SourceOut::from).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_prompt_tokens_are_counted_apart() {
        let usage = AnthropicUsage::of(&Usage {
            input_tokens: 100,
            output_tokens: 7,
            cached_input_tokens: 60,
            ..Usage::default()
        });
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_input_tokens,
                usage.output_tokens
            ),
            (40, 60, 7)
        );
    }

    #[test]
    fn arguments_become_the_input_object() {
        let call = |arguments: &str| ToolCall {
            id: "t".into(),
            name: "f".into(),
            arguments: arguments.into(),
        };
        assert_eq!(tool_input(&call(r#"{"a":1}"#)), serde_json::json!({"a": 1}));
        assert_eq!(tool_input(&call("")), serde_json::json!({}));
        assert_eq!(tool_input(&call("not json")), serde_json::json!("not json"));
        assert_eq!(stop_reason(Some(&FinishReason::ToolCalls)), "tool_use");
        assert_eq!(stop_reason(Some(&FinishReason::Length)), "max_tokens");
    }
}
