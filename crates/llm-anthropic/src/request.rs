//! `ChatRequest` → the body of `POST /v1/messages`.
//!
//! Choices worth knowing:
//! - The answer is always streamed (`stream: true`); the non-streaming answer is the folded
//!   stream.
//! - System messages go to the top-level `system`, joined by blank lines, wherever they stood.
//! - Messages alternate `user`/`assistant`: consecutive messages of one role are merged into
//!   one message of several content blocks (tool results answering several calls, a tool
//!   result followed by the user's next words).
//! - An assistant's tool calls are `tool_use` blocks whose `input` is the call's arguments
//!   parsed as JSON (arguments that are not a JSON object are refused as an invalid
//!   request); a tool message is a `tool_result` block of the user.
//! - A message with nothing in it (no text, image or call) is left out.
//! - Images are `image` blocks with base64 data, after the message's text.
//! - `max_tokens` is required by the API: the request's, else the configured default.
//! - Reasoning is extended thinking: `thinking: {type: enabled, budget_tokens}`. The budget
//!   is the request's (at least 1,024, the API's minimum); an effort alone becomes a budget
//!   (low 1,024, medium 2,048, high 4,096 — LiteLLM's mapping, so both routes agree).
//!   The budget must stay below `max_tokens`, so `max_tokens` grows by the budget when it
//!   would not. With thinking on, `temperature` and `top_p` are not sent (the API refuses
//!   them). `reasoning: Some((None, None))` sends nothing: the model's default.
//! - A tool choice other than `auto` (the API's default) is sent as `tool_choice`:
//!   `none`, `any` for `required`, `{"type": "tool", "name"}` for a named function. The API
//!   refuses a forced call together with extended thinking; that refusal is its own.
//! - `seed` has no Messages counterpart and is not sent; `stop` is `stop_sequences`.
//! - A JSON-schema response format is refused: the Messages API has no such parameter
//!   (a catalog model served by this adapter should not claim `json_schema`).

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;
use tessera_models::{
    ChatMessage, ChatRequest, ImageInput, ReasoningEffort, Role, ToolChoice, ToolSpec,
};

/// The smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
}

/// `{"type": "any"}` (some tool), `{"type": "tool", "name"}` or `{"type": "none"}`.
#[derive(Debug, Serialize)]
struct WireToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

/// The Messages API's choice for the request's; `auto` is its default, not sent.
fn tool_choice(choice: &ToolChoice) -> Option<WireToolChoice<'_>> {
    let (kind, name) = match choice {
        ToolChoice::Auto => return None,
        ToolChoice::None => ("none", None),
        ToolChoice::Required => ("any", None),
        ToolChoice::Function(name) => ("tool", Some(name.as_str())),
    };
    Some(WireToolChoice { kind, name })
}

#[derive(Debug, Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

#[derive(Debug, Serialize)]
struct ImageSource {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: String,
    data: String,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
}

impl<'a> WireRequest<'a> {
    /// The body, or why the request cannot be sent to a Messages API.
    pub(crate) fn new(request: &'a ChatRequest, default_max_tokens: u32) -> Result<Self, String> {
        if request.response_format.is_some() {
            return Err(
                "the Messages API has no JSON-schema response format; use a model without \
                 `json_schema` for structured output"
                    .into(),
            );
        }
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|message| message.role == Role::System && !message.content.is_empty())
            .map(|message| message.content.as_str())
            .collect();
        let mut messages: Vec<WireMessage<'a>> = Vec::new();
        for message in request.messages.iter().filter(|m| m.role != Role::System) {
            let (role, content) = blocks(message)?;
            // The API refuses a message without content (an empty turn says nothing anyway).
            if content.is_empty() {
                continue;
            }
            match messages.last_mut() {
                Some(last) if last.role == role => last.content.extend(content),
                _ => messages.push(WireMessage { role, content }),
            }
        }
        let budget = request.reasoning.and_then(thinking_budget);
        let mut max_tokens = request.max_tokens.unwrap_or(default_max_tokens).max(1);
        if let Some(budget) = budget
            && max_tokens <= budget
        {
            max_tokens = max_tokens.saturating_add(budget);
        }
        Ok(Self {
            model: &request.model,
            max_tokens,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages,
            stream: true,
            tools: request.tools.iter().map(tool).collect(),
            tool_choice: (!request.tools.is_empty())
                .then(|| tool_choice(&request.tool_choice))
                .flatten(),
            thinking: budget.map(|budget_tokens| Thinking {
                kind: "enabled",
                budget_tokens,
            }),
            temperature: request.temperature.filter(|_| budget.is_none()),
            top_p: request.top_p.filter(|_| budget.is_none()),
            stop_sequences: &request.stop,
        })
    }
}

/// A message's role on the wire and its content blocks.
fn blocks(message: &ChatMessage) -> Result<(&'static str, Vec<Block<'_>>), String> {
    let text = (!message.content.is_empty()).then(|| Block::Text {
        text: &message.content,
    });
    Ok(match message.role {
        Role::System | Role::User => {
            let images = message.images.iter().map(|image| Block::Image {
                source: image_source(image),
            });
            ("user", text.into_iter().chain(images).collect())
        }
        Role::Assistant => {
            let mut content: Vec<Block<'_>> = text.into_iter().collect();
            for call in &message.tool_calls {
                let input = arguments(&call.arguments).map_err(|reason| {
                    format!(
                        "the arguments of tool call `{}` are not a JSON object: {reason}",
                        call.id
                    )
                })?;
                content.push(Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input,
                });
            }
            ("assistant", content)
        }
        Role::Tool => {
            let Some(id) = message.tool_call_id.as_deref() else {
                return Err("a tool message names no tool call".into());
            };
            (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: id,
                    content: &message.content,
                }],
            )
        }
    })
}

/// A call's arguments as the object `input` must be (empty arguments are `{}`).
fn arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err("it is JSON but not an object".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn image_source(image: &ImageInput) -> ImageSource {
    ImageSource {
        kind: "base64",
        media_type: image.media_type.clone(),
        data: base64::engine::general_purpose::STANDARD.encode(&image.data),
    }
}

fn tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        name: &spec.name,
        description: spec.description.as_deref(),
        input_schema: &spec.parameters,
    }
}

/// See the module documentation: the budget wins; an effort alone becomes a budget.
fn thinking_budget((effort, budget): (Option<ReasoningEffort>, Option<u32>)) -> Option<u32> {
    let budget = match (effort, budget) {
        (_, Some(budget)) => budget,
        (Some(ReasoningEffort::Low), None) => 1024,
        (Some(ReasoningEffort::Medium), None) => 2048,
        (Some(ReasoningEffort::High), None) => 4096,
        (None, None) => return None,
    };
    Some(budget.max(MIN_THINKING_BUDGET))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tessera_models::{JsonSchemaFormat, ToolCall};

    use super::*;

    /// The bytes sent, read back (so `f32`s compare as written).
    fn wire(request: &ChatRequest) -> Value {
        serde_json::from_slice(
            &serde_json::to_vec(&WireRequest::new(request, 4096).unwrap()).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn a_minimal_request_streams_with_the_default_length() {
        let request = ChatRequest {
            model: "claude-sonnet-4-5".into(),
            messages: vec![ChatMessage::new(Role::User, "Hi")],
            ..ChatRequest::default()
        };
        assert_eq!(
            wire(&request),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 4096,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                "stream": true
            })
        );
    }

    #[test]
    fn system_tools_calls_results_and_images_take_their_blocks() {
        let request = ChatRequest {
            model: "claude".into(),
            messages: vec![
                ChatMessage::new(Role::System, "Be brief."),
                ChatMessage {
                    images: vec![ImageInput {
                        media_type: "image/png".into(),
                        data: Arc::from(&b"png"[..]),
                    }],
                    ..ChatMessage::new(Role::User, "Weather here and in Paris?")
                },
                ChatMessage {
                    tool_calls: vec![
                        ToolCall {
                            id: "toolu_1".into(),
                            name: "weather".into(),
                            arguments: r#"{"city":"Lyon"}"#.into(),
                        },
                        ToolCall {
                            id: "toolu_2".into(),
                            name: "weather".into(),
                            arguments: String::new(),
                        },
                    ],
                    ..ChatMessage::new(Role::Assistant, "Let me look.")
                },
                ChatMessage {
                    tool_call_id: Some("toolu_1".into()),
                    ..ChatMessage::new(Role::Tool, "rain")
                },
                ChatMessage {
                    tool_call_id: Some("toolu_2".into()),
                    ..ChatMessage::new(Role::Tool, "sun")
                },
                ChatMessage::new(Role::System, "Answer in French."),
            ],
            tools: vec![ToolSpec {
                name: "weather".into(),
                description: Some("The weather of a city".into()),
                parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            }],
            max_tokens: Some(300),
            temperature: Some(0.5),
            top_p: Some(0.9),
            seed: Some(7),
            stop: vec!["END".into()],
            ..ChatRequest::default()
        };
        assert_eq!(
            wire(&request),
            json!({
                "model": "claude",
                "max_tokens": 300,
                "system": "Be brief.\n\nAnswer in French.",
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "Weather here and in Paris?"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "cG5n"}}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Lyon"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sun"}
                    ]}
                ],
                "stream": true,
                "tools": [{
                    "name": "weather",
                    "description": "The weather of a city",
                    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}
                }],
                "temperature": 0.5,
                "top_p": 0.9,
                "stop_sequences": ["END"]
            })
        );
    }

    #[test]
    fn a_tool_choice_takes_the_messages_api_names_and_auto_is_left_to_its_default() {
        let with = |choice: ToolChoice| {
            wire(&ChatRequest {
                model: "claude".into(),
                messages: vec![ChatMessage::new(Role::User, "Weather?")],
                tools: vec![ToolSpec {
                    name: "weather".into(),
                    description: None,
                    parameters: json!({"type": "object"}),
                }],
                tool_choice: choice,
                ..ChatRequest::default()
            })
            .get("tool_choice")
            .cloned()
        };
        assert_eq!(with(ToolChoice::Auto), None);
        assert_eq!(with(ToolChoice::None), Some(json!({"type": "none"})));
        assert_eq!(with(ToolChoice::Required), Some(json!({"type": "any"})));
        assert_eq!(
            with(ToolChoice::Function("weather".into())),
            Some(json!({"type": "tool", "name": "weather"}))
        );
    }

    #[test]
    fn reasoning_is_extended_thinking_within_max_tokens_without_sampling_knobs() {
        let with = |reasoning, max_tokens| ChatRequest {
            model: "claude".into(),
            messages: vec![ChatMessage::new(Role::User, "Think.")],
            reasoning: Some(reasoning),
            max_tokens,
            temperature: Some(0.2),
            ..ChatRequest::default()
        };
        let sent = wire(&with((None, Some(3000)), Some(8000)));
        assert_eq!(
            sent["thinking"],
            json!({"type": "enabled", "budget_tokens": 3000})
        );
        assert_eq!(sent["max_tokens"], 8000);
        assert!(sent.get("temperature").is_none(), "{sent}");
        // Below the API's minimum, raised; at or above max_tokens, max_tokens grows.
        let sent = wire(&with((None, Some(100)), Some(500)));
        assert_eq!(sent["thinking"]["budget_tokens"], 1024);
        assert_eq!(sent["max_tokens"], 1524);
        let sent = wire(&with((Some(ReasoningEffort::Medium), None), None));
        assert_eq!(sent["thinking"]["budget_tokens"], 2048);
        assert_eq!(sent["max_tokens"], 4096);
        let sent = wire(&with((Some(ReasoningEffort::High), Some(5000)), None));
        assert_eq!(sent["thinking"]["budget_tokens"], 5000, "the budget wins");
        let sent = wire(&with((None, None), None));
        assert!(sent.get("thinking").is_none(), "{sent}");
        assert_eq!(sent["temperature"], 0.2);
    }

    #[test]
    fn what_the_messages_api_cannot_take_is_refused_clearly() {
        let mut request = ChatRequest {
            model: "claude".into(),
            messages: vec![ChatMessage {
                tool_calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "weather".into(),
                    arguments: "[1, 2]".into(),
                }],
                ..ChatMessage::new(Role::Assistant, "")
            }],
            ..ChatRequest::default()
        };
        let error = WireRequest::new(&request, 4096).unwrap_err();
        assert!(
            error.contains("toolu_1") && error.contains("not an object"),
            "{error}"
        );
        request.messages = vec![ChatMessage::new(Role::Tool, "orphan")];
        let error = WireRequest::new(&request, 4096).unwrap_err();
        assert!(error.contains("names no tool call"), "{error}");
        request.messages = vec![ChatMessage::new(Role::User, "JSON please")];
        request.response_format = Some(JsonSchemaFormat {
            name: "answer".into(),
            strict: true,
            schema: json!({"type": "object"}),
        });
        let error = WireRequest::new(&request, 4096).unwrap_err();
        assert!(error.contains("JSON-schema"), "{error}");
    }
}
