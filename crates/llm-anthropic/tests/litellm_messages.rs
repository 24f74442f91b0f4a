//! The adapter against a real server that speaks the Messages API: the LiteLLM proxy's
//! `/v1/messages`, in front of a loopback stub that answers as an OpenAI-compatible server
//! (LiteLLM's `hosted_vllm` provider). LiteLLM does the Anthropic side: it reads our
//! Messages requests (system, tool-use and tool-result blocks, images, thinking) and streams
//! its own Messages events back, so a shape we got wrong fails here.
//!
//! The proxy comes from `tessera_llm_openai::testing` (installed when missing, killed at the
//! end); when it cannot be installed or started, the test FAILS with the reason. Everything
//! lives in one test so one proxy (about 10 s to start) serves every check, the `ChatModel`
//! contract's (`tessera_models::contract::chat_model`) included.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tessera_llm_anthropic::{AnthropicChatModel, AnthropicConfig, RetryPolicy, UpstreamSettings};
use tessera_llm_openai::testing::{LiteLlm, read_http_request};
use tessera_models::{
    Capabilities, ChatEvent, ChatMessage, ChatModel, ChatRequest, FinishReason, ImageInput,
    ProviderError, Role, ToolCall, ToolSpec, Usage, complete,
    contract::chat_model::{Backend, ChatModelUnderTest, check_chat_model},
};
use tokio::{
    io::AsyncWriteExt,
    net::{TcpListener, TcpStream},
};

const TEXT_PIECES: [&str; 3] = ["Hello from ", "the stub, ", "café ☕."];
const THINKING: [&str; 2] = ["Let me think. ", "Done thinking."];

/// The OpenAI-compatible upstream behind LiteLLM: what it answers depends on the request
/// (a model named `broken` fails with 500; with tools and no tool result yet it calls
/// `get_weather`; with a reasoning effort it reasons first), and it keeps every body.
#[derive(Clone, Default)]
struct Stub {
    requests: Arc<Mutex<Vec<Value>>>,
}

impl Stub {
    async fn start(&self) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let stub = self.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(stub.clone().serve(socket));
            }
        });
        port
    }

    fn last_request(&self) -> Value {
        self.requests
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("a request reached the stub")
    }

    async fn serve(self, mut socket: TcpStream) {
        let Some((_, body)) = read_http_request(&mut socket).await else {
            return;
        };
        // Anything but a chat completion (LiteLLM's own probes) is not found.
        let response = match serde_json::from_slice::<Value>(&body) {
            Ok(body) => {
                self.requests.lock().unwrap().push(body.clone());
                answer(&body)
            }
            Err(_) => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_owned(),
        };
        let _ = socket.write_all(response.as_bytes()).await;
        let _ = socket.shutdown().await;
    }
}

/// The stub's HTTP response to one chat-completions request.
fn answer(body: &Value) -> String {
    if body["model"] == "broken" {
        let error = json!({"error": {"message": "the stub is broken", "type": "server_error"}});
        return format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{error}",
            error.to_string().len()
        );
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = Vec::new();
    if body.get("reasoning_effort").is_some() {
        for piece in THINKING {
            chunks.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    let answered = body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool");
    if body.get("tools").is_some() && !answered {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in ["{\"city\": ", "\"Paris\"}"] {
            chunks.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
        chunks.push(chunk(json!({}), json!("tool_calls")));
    } else {
        for piece in TEXT_PIECES {
            chunks.push(chunk(json!({"content": piece}), Value::Null));
        }
        chunks.push(chunk(json!({}), json!("stop")));
    }
    chunks.push(
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1,
        "model": body["model"], "choices": [],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                  "prompt_tokens_details": {"cached_tokens": 4}}}),
    );
    let mut events: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    events.push_str("data: [DONE]\n\n");
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{events}",
        events.len()
    )
}

fn config(stub_port: u16) -> String {
    let model = |name: &str, upstream: &str| {
        format!(
            "  - model_name: {name}\n    litellm_params:\n      model: hosted_vllm/{upstream}\n      \
             api_base: http://127.0.0.1:{stub_port}/v1\n      api_key: sk-fake\n    model_info:\n      \
             supports_reasoning: true\n      supports_function_calling: true\n      supports_vision: true\n"
        )
    };
    format!(
        "model_list:\n{}{}litellm_settings:\n  num_retries: 0\n  telemetry: false\n",
        model("claude-stub", "stub-model"),
        model("claude-broken", "broken")
    )
}

fn request(model: &str, messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages,
        max_tokens: Some(256),
        ..ChatRequest::default()
    }
}

fn hello() -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(Role::System, "Answer briefly."),
        ChatMessage::new(Role::User, "Say hello."),
    ]
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: Some("The weather of a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}),
    }
}

async fn events(model: &AnthropicChatModel, request: ChatRequest) -> Vec<ChatEvent> {
    let stream = model.stream(request).await.expect("a streamed answer");
    tokio::time::timeout(Duration::from_secs(60), stream.collect::<Vec<_>>())
        .await
        .expect("the stream ended")
        .into_iter()
        .map(|item| item.expect("no error in the stream"))
        .collect()
}

/// LiteLLM reports 11 prompt tokens as 7 plus 4 read from the cache; the adapter adds them,
/// and the 4 are the cached input.
const USAGE: Usage = Usage {
    input_tokens: 11,
    output_tokens: 7,
    reasoning_tokens: 0,
    cached_input_tokens: 4,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_messages_api_plain_streamed_tools_thinking_images_and_errors() {
    let stub = Stub::default();
    let port = stub.start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("litellm.yaml");
    std::fs::write(&path, config(port)).unwrap();
    // The proxy has a master key: every answer below proves `x-api-key` carried ours.
    let proxy = LiteLlm::start(&path).await;
    let model = AnthropicChatModel::new(
        AnthropicConfig::new(format!("{}/v1", proxy.base_url))
            .with_api_key(proxy.master_key.as_str())
            .with_transport(UpstreamSettings {
                first_byte_timeout: Duration::from_secs(30),
                idle_timeout: Duration::from_secs(30),
                retry: RetryPolicy::none(),
                ..UpstreamSettings::default()
            }),
    )
    .expect("the adapter");

    eprintln!("messages: a plain (folded) answer");
    let completion = complete(&model, request("claude-stub", hello()))
        .await
        .expect("a plain answer");
    assert_eq!(completion.content, TEXT_PIECES.concat());
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert_eq!(completion.usage, USAGE);
    let sent = stub.last_request();
    assert_eq!(
        sent["messages"],
        json!([{"role": "system", "content": "Answer briefly."},
               {"role": "user", "content": [{"type": "text", "text": "Say hello."}]}]),
        "LiteLLM read our system prompt and message: {sent}"
    );
    assert_eq!(sent["max_tokens"], 256);

    eprintln!("messages: a streamed answer");
    let streamed = events(&model, request("claude-stub", hello())).await;
    let deltas: Vec<&str> = streamed
        .iter()
        .filter_map(|event| match event {
            ChatEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, TEXT_PIECES, "streamed piece by piece");
    let finishes = streamed
        .iter()
        .filter(|event| matches!(event, ChatEvent::Finish { .. }))
        .count();
    assert_eq!(finishes, 1, "{streamed:?}");
    assert_eq!(
        streamed.last(),
        Some(&ChatEvent::Finish {
            reason: FinishReason::Stop,
            usage: USAGE
        })
    );

    eprintln!("messages: a tool round trip");
    let mut asking = request(
        "claude-stub",
        vec![ChatMessage::new(Role::User, "Weather in Paris?")],
    );
    asking.tools = vec![weather_tool()];
    let called = complete(&model, asking.clone()).await.expect("a tool call");
    assert_eq!(called.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(called.tool_calls.len(), 1, "{called:?}");
    let call = &called.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_1", "get_weather")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&call.arguments).unwrap(),
        json!({"city": "Paris"})
    );
    let sent = stub.last_request();
    assert_eq!(
        sent["tools"][0]["function"]["name"], "get_weather",
        "{sent}"
    );
    assert_eq!(
        sent["tools"][0]["function"]["parameters"],
        weather_tool().parameters
    );
    let mut answering = asking;
    answering.messages.push(ChatMessage {
        tool_calls: vec![ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        }],
        ..ChatMessage::new(Role::Assistant, "")
    });
    answering.messages.push(ChatMessage {
        tool_call_id: Some(call.id.clone()),
        ..ChatMessage::new(Role::Tool, "Sunny, 21 °C")
    });
    let answered = complete(&model, answering).await.expect("the answer");
    assert_eq!(answered.content, TEXT_PIECES.concat());
    assert_eq!(answered.finish_reason, Some(FinishReason::Stop));
    let sent = stub.last_request();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{sent}");
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        serde_json::from_str::<Value>(
            messages[1]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        )
        .unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "call_1");
    assert!(
        messages[2]["content"].to_string().contains("Sunny, 21 °C"),
        "{sent}"
    );

    eprintln!("messages: extended thinking as reasoning");
    let mut thinking = request("claude-stub", hello());
    thinking.reasoning = Some((None, Some(1024)));
    let streamed = events(&model, thinking).await;
    let reasoning: String = streamed
        .iter()
        .filter_map(|event| match event {
            ChatEvent::ReasoningDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, THINKING.concat());
    let first_text = streamed
        .iter()
        .position(|event| matches!(event, ChatEvent::TextDelta(_)))
        .unwrap();
    let last_reasoning = streamed
        .iter()
        .rposition(|event| matches!(event, ChatEvent::ReasoningDelta(_)))
        .unwrap();
    assert!(
        last_reasoning < first_text,
        "thinking comes first: {streamed:?}"
    );
    let sent = stub.last_request();
    assert_eq!(
        sent["reasoning_effort"], "low",
        "a 1,024-token budget: {sent}"
    );

    eprintln!("messages: an image");
    let mut looking = request(
        "claude-stub",
        vec![ChatMessage {
            images: vec![ImageInput {
                media_type: "image/png".into(),
                data: Arc::from(&b"\x89PNG\r\n"[..]),
            }],
            ..ChatMessage::new(Role::User, "What is this?")
        }],
    );
    looking.max_tokens = None;
    complete(&model, looking).await.expect("an answer");
    let sent = stub.last_request();
    assert_eq!(
        sent["messages"][0]["content"],
        json!([{"type": "text", "text": "What is this?"},
               {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}]),
        "{sent}"
    );
    assert_eq!(sent["max_tokens"], 4096, "the default answer length");

    eprintln!("messages: an unknown model");
    match model.stream(request("no-such-model", hello())).await.err() {
        Some(ProviderError::InvalidRequest(message)) => {
            assert!(message.contains("no-such-model"), "{message}");
        }
        other => panic!("expected InvalidRequest with LiteLLM's message, got {other:?}"),
    }

    eprintln!("messages: an upstream failure");
    match model.stream(request("claude-broken", hello())).await.err() {
        Some(ProviderError::Upstream { status, message }) => {
            assert_eq!(status, Some(500), "{message}");
            assert!(message.contains("the stub is broken"), "{message}");
        }
        other => panic!("expected an upstream failure with the stub's message, got {other:?}"),
    }

    eprintln!("messages: the ChatModel contract");
    // The stub answers its text whatever the limit or stop strings, and calls the weather
    // tool (the contract's) when offered tools; JSON schema is not this adapter's.
    let contracted = AnthropicChatModel::new(
        AnthropicConfig::new(format!("{}/v1", proxy.base_url))
            .with_api_key(proxy.master_key.as_str())
            .with_capabilities(Capabilities {
                streaming: true,
                tools: true,
                ..Capabilities::default()
            })
            .with_transport(UpstreamSettings {
                first_byte_timeout: Duration::from_secs(30),
                idle_timeout: Duration::from_secs(30),
                retry: RetryPolicy::none(),
                ..UpstreamSettings::default()
            }),
    )
    .expect("the adapter");
    let backend = Backend {
        unknown_model: Some("no-such-model".into()),
        ..Backend::scripted()
    };
    let subject = ChatModelUnderTest::new(Arc::new(contracted), "claude-stub", backend);
    check_chat_model(
        &subject,
        &[
            "a_prompt_beyond_the_context_window_is_an_invalid_request",
            "max_tokens_cuts_the_answer_with_reason_length",
            "a_stop_sequence_ends_the_answer_just_before_it",
            "a_json_schema_answer_is_a_conforming_document",
        ],
    )
    .await;
}
