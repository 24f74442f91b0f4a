//! The adapter against a recorded upstream: a tiny HTTP/1.1 server on loopback that writes
//! exactly the bytes each test scripts (status lines, chunked SSE bodies split anywhere,
//! pauses, silences), so every odd stream shape a real provider produces can be replayed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tessera_llm_openai::{OpenAiChatModel, OpenAiConfig, RetryPolicy};
use tessera_models::{
    ChatEvent, ChatMessage, ChatModel, ChatRequest, FinishReason, ProviderError, Role, ToolCall,
    Usage, complete,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

// ---------------------------------------------------------------------------------------
// The recorded upstream.

#[derive(Clone)]
enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
}

/// One request as the upstream received it.
#[derive(Debug, Clone)]
struct Received {
    head: String,
    body: Value,
}

struct Upstream {
    base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Upstream {
    /// Serves one script per connection, in order; the last one again for any further
    /// connection.
    async fn start(scripts: Vec<Vec<Step>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        tokio::spawn(async move {
            let mut served = 0;
            while let Ok((socket, _)) = listener.accept().await {
                let script = scripts[served.min(scripts.len() - 1)].clone();
                served += 1;
                tokio::spawn(serve(socket, script, Arc::clone(&log)));
            }
        });
        Self {
            base_url: format!("http://{address}/v1"),
            received,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn serve(mut socket: TcpStream, script: Vec<Step>, log: Arc<Mutex<Vec<Received>>>) {
    socket.set_nodelay(true).unwrap();
    let mut data = Vec::new();
    let mut buffer = [0u8; 8192];
    let head_end = loop {
        let read = socket.read(&mut buffer).await.unwrap();
        assert!(read > 0, "the client closed before sending a request");
        data.extend_from_slice(&buffer[..read]);
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or(0);
    while data.len() < head_end + length {
        let read = socket.read(&mut buffer).await.unwrap();
        assert!(read > 0, "the client closed mid-body");
        data.extend_from_slice(&buffer[..read]);
    }
    let body = serde_json::from_slice(&data[head_end..head_end + length]).unwrap_or(Value::Null);
    log.lock().unwrap().push(Received { head, body });
    for step in script {
        match step {
            Step::Write(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    return; // the client hung up (e.g. after a timeout)
                }
                let _ = socket.flush().await;
            }
            Step::Sleep(duration) => tokio::time::sleep(duration).await,
        }
    }
    let _ = socket.shutdown().await;
}

// Script pieces.

fn sse_head() -> Step {
    Step::Write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
          Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            .to_vec(),
    )
}

/// One HTTP chunk carrying `bytes`.
fn chunk(bytes: &[u8]) -> Step {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    Step::Write(out)
}

/// One HTTP chunk carrying `bytes`, written in two halves split at byte `at` with a pause
/// between them, so the client reads them separately.
fn split_chunk(bytes: &[u8], at: usize) -> Vec<Step> {
    let mut first = format!("{:x}\r\n", bytes.len()).into_bytes();
    first.extend_from_slice(&bytes[..at]);
    let mut second = bytes[at..].to_vec();
    second.extend_from_slice(b"\r\n");
    vec![
        Step::Write(first),
        Step::Sleep(Duration::from_millis(30)),
        Step::Write(second),
    ]
}

fn data(chunk_json: &Value) -> Step {
    chunk(format!("data: {chunk_json}\n\n").as_bytes())
}

fn done() -> Step {
    chunk(b"data: [DONE]\n\n")
}

/// The end of a chunked body.
fn end() -> Step {
    Step::Write(b"0\r\n\r\n".to_vec())
}

fn delta(delta: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn usage(prompt: u32, completion: u32, reasoning: u32) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [],
           "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                     "total_tokens": prompt + completion,
                     "completion_tokens_details": {"reasoning_tokens": reasoning}}})
}

/// A complete non-streamed HTTP response.
fn response(status: &str, headers: &[(&str, &str)], body: &str) -> Step {
    let mut text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    Step::Write(text.into_bytes())
}

// ---------------------------------------------------------------------------------------
// The adapter under test.

const IDLE: Duration = Duration::from_millis(400);

fn model(upstream: &Upstream) -> OpenAiChatModel {
    model_with(upstream, 3)
}

fn model_with(upstream: &Upstream, attempts: u32) -> OpenAiChatModel {
    OpenAiChatModel::new(
        OpenAiConfig::new(&upstream.base_url)
            .with_api_key("sk-test-key")
            .with_timeouts(Duration::from_secs(2), IDLE)
            .with_retry(RetryPolicy {
                max_attempts: attempts,
                backoff_base: Duration::from_millis(20),
                max_delay: Duration::from_millis(500),
            }),
    )
    .unwrap()
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages: vec![ChatMessage::new(Role::User, "Hi")],
        ..ChatRequest::default()
    }
}

/// Every item of the stream, with a guard against hanging.
async fn collect(
    model: &OpenAiChatModel,
) -> Result<Vec<Result<ChatEvent, ProviderError>>, ProviderError> {
    let stream = model.stream(request()).await?;
    Ok(
        tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
            .await
            .expect("the stream never ended"),
    )
}

// ---------------------------------------------------------------------------------------
// Streams.

#[tokio::test]
async fn utf8_split_across_network_reads_is_reassembled() {
    let first = delta(json!({"role": "assistant", "content": "Café 👍"}));
    let first = format!("data: {first}\n\n").into_bytes();
    // Split inside "é" (2 bytes) and inside "👍" (4 bytes).
    let e_acute = first.windows(2).position(|w| w == "é".as_bytes()).unwrap() + 1;
    let thumbs = first.windows(4).position(|w| w == "👍".as_bytes()).unwrap() + 2;
    let second = format!("data: {}\n\n", delta(json!({"content": " ナイス"}))).into_bytes();
    let mut script = vec![sse_head()];
    // "é" split inside one HTTP chunk; "👍" split across two HTTP chunks.
    script.extend(split_chunk(&first[..thumbs], e_acute));
    script.push(Step::Sleep(Duration::from_millis(30)));
    script.push(chunk(&first[thumbs..]));
    // One multi-byte character per write.
    let split_at = second
        .windows(3)
        .position(|w| w == "ナ".as_bytes())
        .unwrap()
        + 1;
    script.extend(split_chunk(&second, split_at));
    script.extend([data(&finish("stop")), data(&usage(3, 4, 0)), done(), end()]);
    let upstream = Upstream::start(vec![script.clone(), script]).await;
    let model = model(&upstream);

    // The fixture is what it claims: an HTTP client reads pieces that are not UTF-8 alone.
    let mut body = reqwest::Client::new()
        .post(format!("{}/chat/completions", upstream.base_url))
        .body("{}")
        .send()
        .await
        .unwrap()
        .bytes_stream();
    let mut broken_pieces = 0;
    while let Some(piece) = body.next().await {
        broken_pieces += usize::from(std::str::from_utf8(&piece.unwrap()).is_err());
    }
    assert!(
        broken_pieces >= 2,
        "{broken_pieces} pieces split a character"
    );

    let completion = complete(&model, request()).await.unwrap();
    assert_eq!(completion.content, "Café 👍 ナイス");
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert_eq!(completion.usage.total_tokens(), 7);
}

#[tokio::test]
async fn empty_deltas_are_skipped_and_usage_comes_from_the_final_chunk() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"role": "assistant", "content": ""}))),
        data(&delta(json!({}))),
        data(&delta(json!({"content": null}))),
        data(&delta(json!({"content": "Hi"}))),
        chunk(b": keep-alive comment\n\n"),
        data(&delta(json!({"content": ""}))),
        data(&delta(json!({"content": "!"}))),
        data(&finish("length")),
        data(&usage(12, 2, 0)),
        done(),
        end(),
    ]])
    .await;
    let items = collect(&model(&upstream)).await.unwrap();
    assert_eq!(
        items,
        [
            Ok(ChatEvent::TextDelta("Hi".into())),
            Ok(ChatEvent::TextDelta("!".into())),
            Ok(ChatEvent::Finish {
                reason: FinishReason::Length,
                usage: Usage {
                    input_tokens: 12,
                    output_tokens: 2,
                    reasoning_tokens: 0,
                    cached_input_tokens: 0
                }
            })
        ]
    );
    // The request that went out.
    let received = upstream.received();
    assert_eq!(received.len(), 1);
    let head = received[0].head.to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/chat/completions http/1.1"),
        "{head}"
    );
    assert!(head.contains("authorization: bearer sk-test-key"), "{head}");
    assert_eq!(received[0].body["stream"], json!(true));
    assert_eq!(
        received[0].body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(
        received[0].body["messages"],
        json!([{"role": "user", "content": "Hi"}])
    );
}

#[tokio::test]
async fn a_stream_without_done_finishes_when_a_finish_reason_was_seen() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"content": "ok"}))),
        data(&finish("stop")),
        end(),
    ]])
    .await;
    let items = collect(&model(&upstream)).await.unwrap();
    assert_eq!(
        items,
        [
            Ok(ChatEvent::TextDelta("ok".into())),
            // No usage was streamed: the adapter's estimate (3 tokens of message framing
            // and "Hi"; "ok").
            Ok(ChatEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 4,
                    output_tokens: 1,
                    reasoning_tokens: 0,
                    cached_input_tokens: 0
                }
            })
        ]
    );
}

#[tokio::test]
async fn a_stream_with_neither_done_nor_finish_reason_is_an_upstream_failure() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"content": "trunc"}))),
        end(),
    ]])
    .await;
    let items = collect(&model(&upstream)).await.unwrap();
    assert_eq!(items[0], Ok(ChatEvent::TextDelta("trunc".into())));
    assert!(
        matches!(&items[1], Err(ProviderError::Upstream { status: None, message }) if message.contains("ended")),
        "{items:?}"
    );
    assert_eq!(items.len(), 2);
}

#[tokio::test]
async fn a_connection_cut_mid_stream_is_an_upstream_failure_without_retry() {
    // No terminating chunk: the socket just closes.
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"content": "half"}))),
    ]])
    .await;
    let items = collect(&model(&upstream)).await.unwrap();
    assert_eq!(items[0], Ok(ChatEvent::TextDelta("half".into())));
    assert!(
        matches!(items[1], Err(ProviderError::Upstream { .. })),
        "{items:?}"
    );
    assert_eq!(
        upstream.received().len(),
        1,
        "never retried after the first byte"
    );
}

#[tokio::test]
async fn an_error_object_mid_stream_is_an_error_item() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"content": "par"}))),
        data(
            &json!({"error": {"message": "The server had an error while processing your request.",
                               "type": "server_error", "param": null, "code": null}}),
        ),
        data(&delta(json!({"content": "never seen"}))),
        done(),
        end(),
    ]])
    .await;
    let items = collect(&model(&upstream)).await.unwrap();
    assert_eq!(
        items,
        [
            Ok(ChatEvent::TextDelta("par".into())),
            Err(ProviderError::Upstream {
                status: None,
                message: "The server had an error while processing your request.".into()
            })
        ]
    );
}

#[tokio::test]
async fn an_error_before_any_event_comes_back_from_stream() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&json!({"error": {"message": "context length exceeded", "code": 400}})),
        end(),
    ]])
    .await;
    assert_eq!(
        model(&upstream).stream(request()).await.err(),
        Some(ProviderError::Upstream {
            status: Some(400),
            message: "context length exceeded".into()
        })
    );
}

#[tokio::test]
async fn tool_call_deltas_become_calls_with_their_arguments() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(
            json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": 0, "id": "call_w", "type": "function",
             "function": {"name": "weather", "arguments": ""}}]}),
        )),
        data(&delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]}),
        )),
        data(&delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\":\"Paris\"}"}}]}),
        )),
        data(&delta(json!({"tool_calls": [
            {"index": 1, "id": "call_t", "type": "function",
             "function": {"name": "time", "arguments": "{\"tz\":\"CET\"}"}}]}))),
        data(&finish("tool_calls")),
        data(&usage(40, 20, 0)),
        done(),
        end(),
    ]])
    .await;
    let items = collect(&model(&upstream)).await.unwrap();
    let events: Vec<_> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        events[0],
        ChatEvent::ToolCallStart {
            index: 0,
            id: "call_w".into(),
            name: "weather".into()
        }
    );
    assert_eq!(
        &events[events.len() - 3..],
        [
            ChatEvent::ToolCallEnd { index: 0 },
            ChatEvent::ToolCallEnd { index: 1 },
            ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input_tokens: 40,
                    output_tokens: 20,
                    reasoning_tokens: 0,
                    cached_input_tokens: 0
                }
            }
        ]
    );
    let mut completion = tessera_models::Completion::default();
    events.into_iter().for_each(|event| completion.apply(event));
    assert_eq!(
        completion.tool_calls,
        [
            ToolCall {
                id: "call_w".into(),
                name: "weather".into(),
                arguments: "{\"city\":\"Paris\"}".into()
            },
            ToolCall {
                id: "call_t".into(),
                name: "time".into(),
                arguments: "{\"tz\":\"CET\"}".into()
            }
        ]
    );
}

#[tokio::test]
async fn reasoning_content_and_reasoning_are_reasoning_deltas() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(
            json!({"role": "assistant", "reasoning_content": "Let me think"}),
        )),
        data(&delta(json!({"reasoning_content": "…", "content": null}))),
        data(&delta(json!({"reasoning": " more."}))),
        data(&delta(json!({"content": "42"}))),
        data(&finish("stop")),
        data(&usage(5, 30, 25)),
        done(),
        end(),
    ]])
    .await;
    let completion = complete(&model(&upstream), request()).await.unwrap();
    assert_eq!(completion.reasoning, "Let me think… more.");
    assert_eq!(completion.content, "42");
    assert_eq!(
        completion.usage,
        Usage {
            input_tokens: 5,
            output_tokens: 30,
            reasoning_tokens: 25,
            cached_input_tokens: 0
        }
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_as_one_answer() {
    let body = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 1}});
    let upstream = Upstream::start(vec![vec![response("200 OK", &[], &body.to_string())]]).await;
    let completion = complete(&model(&upstream), request()).await.unwrap();
    assert_eq!(completion.content, "whole");
    assert_eq!(completion.usage.total_tokens(), 3);
}

/// OpenAI's usage with a prompt-cache hit (`prompt_tokens_details.cached_tokens`, part of
/// `prompt_tokens`), streamed in its final chunk and in a whole answer alike.
#[tokio::test]
async fn cached_prompt_tokens_reach_the_usage_streamed_or_not() {
    let usage = json!({"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}});
    let expected = Usage {
        input_tokens: 2006,
        output_tokens: 300,
        reasoning_tokens: 0,
        cached_input_tokens: 1920,
    };
    let mut last = finish("stop");
    last["usage"] = Value::Null;
    let mut usage_chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
        "created": 1, "model": "m", "choices": []});
    usage_chunk["usage"] = usage.clone();
    let streamed = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"role": "assistant", "content": "Cached."}))),
        data(&last),
        data(&usage_chunk),
        done(),
        end(),
    ]])
    .await;
    let completion = complete(&model(&streamed), request()).await.unwrap();
    assert_eq!(completion.content, "Cached.");
    assert_eq!(completion.usage, expected);

    let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
        "model": "m", "choices": [{"index": 0, "message": {"role": "assistant",
        "content": "Cached.", "refusal": null}, "logprobs": null, "finish_reason": "stop"}],
        "usage": usage});
    let whole = Upstream::start(vec![vec![response("200 OK", &[], &body.to_string())]]).await;
    let completion = complete(&model(&whole), request()).await.unwrap();
    assert_eq!(completion.content, "Cached.");
    assert_eq!(completion.usage, expected);
}

// ---------------------------------------------------------------------------------------
// Failures before the first byte, and retries.

const RATE_LIMITED: &str = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#;

#[tokio::test]
async fn a_429_is_retried_after_retry_after_then_succeeds() {
    let upstream = Upstream::start(vec![
        vec![response(
            "429 Too Many Requests",
            &[("Retry-After", "0.2")],
            RATE_LIMITED,
        )],
        vec![
            sse_head(),
            data(&delta(json!({"content": "finally"}))),
            data(&finish("stop")),
            done(),
            end(),
        ],
    ])
    .await;
    let started = Instant::now();
    let completion = complete(&model(&upstream), request()).await.unwrap();
    assert_eq!(completion.content, "finally");
    assert_eq!(upstream.received().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(190),
        "Retry-After was honoured: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retry_after_is_capped() {
    let upstream = Upstream::start(vec![
        vec![response(
            "503 Service Unavailable",
            &[("Retry-After", "3600")],
            "",
        )],
        vec![sse_head(), data(&finish("stop")), done(), end()],
    ])
    .await;
    let started = Instant::now();
    complete(&model(&upstream), request()).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_500_forever_is_an_upstream_failure_after_every_attempt() {
    let upstream = Upstream::start(vec![vec![response(
        "500 Internal Server Error",
        &[],
        r#"{"error":{"message":"The model crashed","type":"server_error"}}"#,
    )]])
    .await;
    let error = model(&upstream).stream(request()).await.err();
    assert_eq!(
        error,
        Some(ProviderError::Upstream {
            status: Some(500),
            message: "The model crashed".into()
        })
    );
    assert_eq!(upstream.received().len(), 3);
}

#[tokio::test]
async fn a_429_forever_is_unavailable_with_the_retry_after() {
    let upstream = Upstream::start(vec![vec![response(
        "429 Too Many Requests",
        &[("Retry-After", "1")],
        RATE_LIMITED,
    )]])
    .await;
    let error = model_with(&upstream, 2).stream(request()).await.err();
    assert_eq!(
        error,
        Some(ProviderError::Unavailable {
            message: "Rate limit reached for requests".into(),
            retry_after: Some(Duration::from_secs(1))
        })
    );
    assert_eq!(upstream.received().len(), 2);
}

#[tokio::test]
async fn a_400_is_an_invalid_request_without_retry() {
    let upstream = Upstream::start(vec![vec![response(
        "400 Bad Request",
        &[],
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    )]])
    .await;
    assert_eq!(
        model(&upstream).stream(request()).await.err(),
        Some(ProviderError::InvalidRequest(
            "This model's maximum context length is 8192 tokens".into()
        ))
    );
    assert_eq!(upstream.received().len(), 1);
}

#[tokio::test]
async fn a_404_and_a_422_are_invalid_requests() {
    for (status, body, message) in [
        (
            "404 Not Found",
            r#"{"error":"model \"m\" not found, try pulling it first"}"#,
            "model \"m\" not found, try pulling it first",
        ),
        (
            "422 Unprocessable Entity",
            r#"{"detail":"temperature must be <= 2"}"#,
            "temperature must be <= 2",
        ),
    ] {
        let upstream = Upstream::start(vec![vec![response(status, &[], body)]]).await;
        assert_eq!(
            model(&upstream).stream(request()).await.err(),
            Some(ProviderError::InvalidRequest(message.into())),
            "{status}"
        );
        assert_eq!(upstream.received().len(), 1);
    }
}

#[tokio::test]
async fn a_401_says_the_credentials_were_rejected() {
    let upstream = Upstream::start(vec![vec![response(
        "401 Unauthorized",
        &[],
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )]])
    .await;
    let error = model(&upstream).stream(request()).await.err().unwrap();
    match error {
        ProviderError::Upstream { status, message } => {
            assert_eq!(status, Some(401));
            assert!(message.contains("rejected the credentials"), "{message}");
            assert!(message.contains("Incorrect API key provided"), "{message}");
            assert!(!message.contains("sk-test-key"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(upstream.received().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let model = OpenAiChatModel::new(
        OpenAiConfig::new(format!("http://{address}/v1")).with_retry(RetryPolicy {
            max_attempts: 2,
            backoff_base: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        }),
    )
    .unwrap();
    let error = model.stream(request()).await.err().unwrap();
    assert!(
        matches!(&error, ProviderError::Unavailable { message, retry_after: None } if message.contains("connect")),
        "{error:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Timeouts: nothing hangs.

#[tokio::test]
async fn headers_that_never_come_are_a_timeout() {
    let upstream = Upstream::start(vec![vec![Step::Sleep(Duration::from_secs(30))]]).await;
    let model = OpenAiChatModel::new(
        OpenAiConfig::new(&upstream.base_url).with_timeouts(Duration::from_millis(300), IDLE),
    )
    .unwrap();
    let started = Instant::now();
    assert_eq!(
        model.stream(request()).await.err(),
        Some(ProviderError::Timeout)
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(upstream.received().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn a_stream_that_goes_silent_times_out() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"content": "slow"}))),
        Step::Sleep(Duration::from_secs(30)),
    ]])
    .await;
    let started = Instant::now();
    let items = collect(&model(&upstream)).await.unwrap();
    assert_eq!(
        items,
        [
            Ok(ChatEvent::TextDelta("slow".into())),
            Err(ProviderError::Timeout)
        ]
    );
    let waited = started.elapsed();
    assert!(
        waited >= IDLE && waited < Duration::from_secs(3),
        "{waited:?}"
    );
}

#[tokio::test]
async fn silence_before_the_first_event_is_a_timeout_from_stream() {
    let upstream =
        Upstream::start(vec![vec![sse_head(), Step::Sleep(Duration::from_secs(30))]]).await;
    assert_eq!(
        model(&upstream).stream(request()).await.err(),
        Some(ProviderError::Timeout)
    );
}

#[tokio::test]
async fn keep_alive_comments_and_slow_but_steady_chunks_do_not_time_out() {
    // Each pause is shorter than the idle timeout; together they are much longer.
    let pause = IDLE / 2;
    let mut script = vec![sse_head()];
    for _ in 0..4 {
        script.push(Step::Sleep(pause));
        script.push(chunk(b": still thinking\n\n"));
    }
    // Half an event, then the rest after a pause.
    let event = format!("data: {}\n\n", delta(json!({"content": "awake"})));
    script.extend(split_chunk(event.as_bytes(), 10));
    script.push(Step::Sleep(pause));
    script.extend([data(&finish("stop")), done(), end()]);
    let upstream = Upstream::start(vec![script]).await;
    let completion = complete(&model(&upstream), request()).await.unwrap();
    assert_eq!(completion.content, "awake");
}

#[tokio::test]
async fn silence_after_the_finish_reason_finishes_normally() {
    let upstream = Upstream::start(vec![vec![
        sse_head(),
        data(&delta(json!({"content": "done"}))),
        data(&finish("stop")),
        data(&usage(1, 1, 0)),
        Step::Sleep(Duration::from_secs(30)),
    ]])
    .await;
    let completion = complete(&model(&upstream), request()).await.unwrap();
    assert_eq!(completion.content, "done");
    assert_eq!(completion.usage.total_tokens(), 2);
}
