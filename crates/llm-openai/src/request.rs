//! `ChatRequest` → the body of `POST /chat/completions`.
//!
//! Choices worth knowing:
//! - The upstream is always asked to stream (`stream: true`) with the usage in a last chunk
//!   (`stream_options.include_usage`); non-streaming answers are the folded stream.
//! - `max_tokens` is sent as `max_tokens`, which every OpenAI-compatible server understands
//!   (OpenAI's reasoning models want `max_completion_tokens`; reach those through a proxy
//!   such as LiteLLM, which translates).
//! - Reasoning: an effort is sent as `reasoning_effort` (`low`/`medium`/`high`). A token
//!   budget has no OpenAI-compatible parameter: when an effort is given, the budget is not
//!   sent at all; when only a budget is given, it is turned into the nearest effort
//!   (below 2,048 tokens `low`, below 4,096 `medium`, else `high` — the budgets LiteLLM maps
//!   those efforts to), because an unknown parameter is an error on strict servers.
//!   `reasoning: Some((None, None))` sends nothing: the model's default.
//! - Tools go with the request's `tool_choice` (`auto`, `none`, `required`, or
//!   `{"type": "function", "function": {"name"}}`); without tools, no `tool_choice`.
//! - An assistant message with tool calls and no text has `content: null`.
//! - A user message with images has `content` as parts: the text, then each image as an
//!   `image_url` part holding a `data:` URL (base64), which OpenAI, vLLM, Ollama and
//!   llama.cpp's server all accept; no upstream fetches a URL of ours.

use base64::Engine as _;
use serde::Serialize;
use tessera_models::{
    ChatMessage, ChatRequest, ImageInput, JsonSchemaStyle, ReasoningEffort, Role, ToolChoice,
    ToolSpec,
};

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    /// Whenever there are tools: the request's choice, `auto` (OpenAI's own default) said
    /// out loud because some servers (the llama-cpp-python server) ignore tools without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<WireResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

/// `"auto"`, `"none"`, `"required"` or `{"type": "function", "function": {"name": …}}`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireToolChoice<'a> {
    Mode(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        function: WireFunctionName<'a>,
    },
}

#[derive(Debug, Serialize)]
struct WireFunctionName<'a> {
    name: &'a str,
}

fn tool_choice(choice: &ToolChoice) -> WireToolChoice<'_> {
    match choice {
        ToolChoice::Auto => WireToolChoice::Mode("auto"),
        ToolChoice::None => WireToolChoice::Mode("none"),
        ToolChoice::Required => WireToolChoice::Mode("required"),
        ToolChoice::Function(name) => WireToolChoice::Function {
            kind: "function",
            function: WireFunctionName { name },
        },
    }
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Option<WireContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// Text alone, or parts when images go with it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(&'a str),
    Parts(Vec<WirePart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: WireImageUrl },
}

#[derive(Debug, Serialize)]
struct WireImageUrl {
    url: String,
}

fn data_url(image: &ImageInput) -> String {
    format!(
        "data:{};base64,{}",
        image.media_type,
        base64::engine::general_purpose::STANDARD.encode(&image.data)
    )
}

#[derive(Debug, Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a serde_json::Value,
}

/// `{"type": "json_schema", "json_schema": {…}}` or `{"type": "json_object", "schema": …}`
/// (see [`JsonSchemaStyle`]).
#[derive(Debug, Serialize)]
struct WireResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    json_schema: Option<WireJsonSchema<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<&'a serde_json::Value>,
}

#[derive(Debug, Serialize)]
struct WireJsonSchema<'a> {
    name: &'a str,
    strict: bool,
    schema: &'a serde_json::Value,
}

impl<'a> WireRequest<'a> {
    pub(crate) fn new(request: &'a ChatRequest, style: JsonSchemaStyle) -> Self {
        Self {
            model: &request.model,
            messages: request.messages.iter().map(message).collect(),
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tools: request.tools.iter().map(tool).collect(),
            tool_choice: (!request.tools.is_empty()).then(|| tool_choice(&request.tool_choice)),
            response_format: request.response_format.as_ref().map(|format| match style {
                JsonSchemaStyle::JsonSchema => WireResponseFormat {
                    kind: "json_schema",
                    json_schema: Some(WireJsonSchema {
                        name: &format.name,
                        strict: format.strict,
                        schema: &format.schema,
                    }),
                    schema: None,
                },
                JsonSchemaStyle::JsonObject => WireResponseFormat {
                    kind: "json_object",
                    json_schema: None,
                    schema: Some(&format.schema),
                },
            }),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
            stop: &request.stop,
            reasoning_effort: request.reasoning.and_then(reasoning_effort),
        }
    }
}

fn message(message: &ChatMessage) -> WireMessage<'_> {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let tool_calls: Vec<_> = if message.role == Role::Assistant {
        message
            .tool_calls
            .iter()
            .map(|call| WireToolCall {
                id: &call.id,
                kind: "function",
                function: WireFunctionCall {
                    name: &call.name,
                    arguments: &call.arguments,
                },
            })
            .collect()
    } else {
        Vec::new()
    };
    let content = if !message.images.is_empty() {
        let text = (!message.content.is_empty()).then(|| WirePart::Text {
            text: &message.content,
        });
        let images = message.images.iter().map(|image| WirePart::ImageUrl {
            image_url: WireImageUrl {
                url: data_url(image),
            },
        });
        Some(WireContent::Parts(text.into_iter().chain(images).collect()))
    } else if message.content.is_empty() && !tool_calls.is_empty() {
        None
    } else {
        Some(WireContent::Text(&message.content))
    };
    WireMessage {
        role,
        content,
        tool_calls,
        tool_call_id: match message.role {
            Role::Tool => message.tool_call_id.as_deref(),
            _ => None,
        },
    }
}

fn tool(spec: &ToolSpec) -> WireTool<'_> {
    WireTool {
        kind: "function",
        function: WireFunction {
            name: &spec.name,
            description: spec.description.as_deref(),
            parameters: &spec.parameters,
        },
    }
}

/// See the module documentation: the effort wins; a lone budget becomes an effort.
fn reasoning_effort(
    (effort, budget): (Option<ReasoningEffort>, Option<u32>),
) -> Option<&'static str> {
    let effort = match (effort, budget) {
        (Some(effort), _) => effort,
        (None, Some(budget)) if budget < 2048 => ReasoningEffort::Low,
        (None, Some(budget)) if budget < 4096 => ReasoningEffort::Medium,
        (None, Some(_)) => ReasoningEffort::High,
        (None, None) => return None,
    };
    Some(match effort {
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tessera_models::{JsonSchemaFormat, ToolCall};

    use super::*;

    /// The bytes sent, read back (so `f32`s compare as written: `0.7`, not `0.699999988`).
    fn wire(request: &ChatRequest) -> Value {
        serde_json::from_slice(
            &serde_json::to_vec(&WireRequest::new(request, JsonSchemaStyle::JsonSchema)).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn a_minimal_request_streams_with_usage_and_sends_nothing_unset() {
        let request = ChatRequest {
            model: "gpt-4o-mini".into(),
            messages: vec![ChatMessage::new(Role::User, "Hi")],
            ..ChatRequest::default()
        };
        assert_eq!(
            wire(&request),
            json!({
                "model": "gpt-4o-mini",
                "messages": [{"role": "user", "content": "Hi"}],
                "stream": true,
                "stream_options": {"include_usage": true}
            })
        );
    }

    #[test]
    fn every_field_maps_to_its_openai_name() {
        let request = ChatRequest {
            model: "qwen3".into(),
            messages: vec![
                ChatMessage::new(Role::System, "Be brief."),
                ChatMessage::new(Role::User, "Weather in Paris?"),
                ChatMessage {
                    role: Role::Assistant,
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "weather".into(),
                        arguments: "{\"city\":\"Paris\"}".into(),
                    }],
                    tool_call_id: None,
                    images: Vec::new(),
                },
                ChatMessage {
                    role: Role::Tool,
                    content: "18°C".into(),
                    tool_calls: Vec::new(),
                    tool_call_id: Some("call_1".into()),
                    images: Vec::new(),
                },
                ChatMessage {
                    role: Role::Assistant,
                    content: "It is 18°C.".into(),
                    tool_calls: vec![ToolCall {
                        id: "call_2".into(),
                        name: "log".into(),
                        arguments: "{}".into(),
                    }],
                    tool_call_id: None,
                    images: Vec::new(),
                },
            ],
            tools: vec![
                ToolSpec {
                    name: "weather".into(),
                    description: Some("Current weather".into()),
                    parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                },
                ToolSpec {
                    name: "log".into(),
                    description: None,
                    parameters: json!({"type": "object"}),
                },
            ],
            response_format: Some(JsonSchemaFormat {
                name: "answer".into(),
                strict: true,
                schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            }),
            max_tokens: Some(256),
            temperature: Some(0.7),
            top_p: Some(0.9),
            seed: Some(42),
            stop: vec!["END".into(), "\n\n".into()],
            tool_choice: ToolChoice::Auto,
            reasoning: Some((Some(ReasoningEffort::High), Some(1000))),
            // Tessera's own: never sent upstream.
            cache_scope: Some("org_1".into()),
        };
        assert_eq!(
            wire(&request),
            json!({
                "model": "qwen3",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}
                    ]},
                    {"role": "tool", "content": "18°C", "tool_call_id": "call_1"},
                    {"role": "assistant", "content": "It is 18°C.", "tool_calls": [
                        {"id": "call_2", "type": "function",
                         "function": {"name": "log", "arguments": "{}"}}
                    ]}
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [
                    {"type": "function", "function": {
                        "name": "weather", "description": "Current weather",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
                    {"type": "function", "function": {"name": "log", "parameters": {"type": "object"}}}
                ],
                "tool_choice": "auto",
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "answer", "strict": true,
                    "schema": {"type": "object", "properties": {"text": {"type": "string"}}}}},
                "max_tokens": 256,
                "temperature": 0.7,
                "top_p": 0.9,
                "seed": 42,
                "stop": ["END", "\n\n"],
                "reasoning_effort": "high"
            })
        );
    }

    #[test]
    fn the_tool_choice_is_sent_as_openai_spells_it() {
        let with = |choice: ToolChoice| {
            wire(&ChatRequest {
                model: "m".into(),
                messages: vec![ChatMessage::new(Role::User, "x")],
                tools: vec![ToolSpec {
                    name: "weather".into(),
                    description: None,
                    parameters: json!({"type": "object"}),
                }],
                tool_choice: choice,
                ..ChatRequest::default()
            })["tool_choice"]
                .clone()
        };
        assert_eq!(with(ToolChoice::Auto), json!("auto"));
        assert_eq!(with(ToolChoice::None), json!("none"));
        assert_eq!(with(ToolChoice::Required), json!("required"));
        assert_eq!(
            with(ToolChoice::Function("weather".into())),
            json!({"type": "function", "function": {"name": "weather"}})
        );
    }

    #[test]
    fn the_json_object_style_sends_the_schema_beside_its_type() {
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::new(Role::User, "x")],
            response_format: Some(JsonSchemaFormat {
                name: "answer".into(),
                strict: true,
                schema: json!({"type": "object"}),
            }),
            ..ChatRequest::default()
        };
        let wire: Value = serde_json::from_slice(
            &serde_json::to_vec(&WireRequest::new(&request, JsonSchemaStyle::JsonObject)).unwrap(),
        )
        .unwrap();
        assert_eq!(
            wire["response_format"],
            json!({"type": "json_object", "schema": {"type": "object"}})
        );
        assert!(
            wire.get("tool_choice").is_none(),
            "no tools, no tool_choice"
        );
    }

    #[test]
    fn a_tool_call_id_is_sent_only_on_tool_messages_and_tool_calls_only_on_assistant_ones() {
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage {
                role: Role::User,
                content: "x".into(),
                tool_calls: vec![ToolCall {
                    id: "c".into(),
                    name: "n".into(),
                    arguments: "{}".into(),
                }],
                tool_call_id: Some("c".into()),
                images: Vec::new(),
            }],
            ..ChatRequest::default()
        };
        assert_eq!(
            wire(&request)["messages"],
            json!([{"role": "user", "content": "x"}])
        );
    }

    #[test]
    fn images_make_the_content_parts_with_data_urls_after_the_text() {
        let image = |media_type: &str, data: &[u8]| ImageInput {
            media_type: media_type.into(),
            data: data.into(),
        };
        let mut with_text = ChatMessage::new(Role::User, "What is this?");
        with_text.images = vec![image("image/png", b"\x89PNG"), image("image/webp", b"RIFF")];
        let mut without_text = ChatMessage::new(Role::User, "");
        without_text.images = vec![image("image/jpeg", &[0xff, 0xd8, 0xff])];
        let request = ChatRequest {
            messages: vec![with_text, without_text],
            ..ChatRequest::default()
        };
        assert_eq!(
            wire(&request)["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
                    {"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGRg=="}},
                ]},
                {"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
                ]},
            ])
        );
    }

    #[test]
    fn reasoning_sends_an_effort_and_turns_a_lone_budget_into_one() {
        let effort = |reasoning| {
            let request = ChatRequest {
                reasoning,
                ..ChatRequest::default()
            };
            wire(&request).get("reasoning_effort").cloned()
        };
        assert_eq!(effort(None), None);
        assert_eq!(effort(Some((None, None))), None);
        assert_eq!(
            effort(Some((Some(ReasoningEffort::Low), Some(100_000)))),
            Some(json!("low"))
        );
        assert_eq!(
            effort(Some((Some(ReasoningEffort::Medium), None))),
            Some(json!("medium"))
        );
        assert_eq!(effort(Some((None, Some(1024)))), Some(json!("low")));
        assert_eq!(effort(Some((None, Some(2048)))), Some(json!("medium")));
        assert_eq!(effort(Some((None, Some(4096)))), Some(json!("high")));
        // Nothing but the effort is ever sent for reasoning.
        let request = ChatRequest {
            reasoning: Some((None, Some(50_000))),
            ..ChatRequest::default()
        };
        let body = wire(&request);
        let mut keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "messages",
                "model",
                "reasoning_effort",
                "stream",
                "stream_options"
            ]
        );
    }
}
