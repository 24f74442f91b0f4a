//! What the OpenAI-compatible adapter adds per streamed chunk: the same SSE answer read from
//! a local upstream stub by the adapter (`OpenAiChatModel::stream`, every event parsed into
//! `ChatEvent`s) and, as the baseline measured in the same run, by a bare `reqwest` client
//! that only reads the body to its end.
//!
//! The stub is a keep-alive HTTP/1.1 server on loopback, on a thread of its own, answering
//! every POST at once with `CHUNKS` content deltas, a finish chunk, a usage chunk and
//! `data: [DONE]`, in one write. One client sends requests one after another: `WARM_UP`
//! requests, then `BENCH_REQUESTS` (default 3000) measured, for each of two answer lengths.
//! Added latency per chunk is (adapter − baseline) / chunks, at the median.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{net::SocketAddr, time::Instant};

use futures_util::StreamExt;
use serde_json::json;
use tessera_llm_openai::{OpenAiChatModel, OpenAiConfig, RetryPolicy};
use tessera_models::{ChatEvent, ChatMessage, ChatModel, ChatRequest, Role};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

const WARM_UP: usize = 300;
/// Answer lengths, in content deltas.
const CHUNKS: [usize; 2] = [8, 64];

fn main() {
    let requests: usize = std::env::var("BENCH_REQUESTS")
        .ok()
        .map(|t| t.parse().expect("BENCH_REQUESTS must be a number"))
        .unwrap_or(3000);
    println!(
        "\nOpenAI-compatible adapter: added latency per streamed chunk ({requests} sequential requests per row, medians)\n"
    );
    println!("| chunks | client   |  p50 µs |  p99 µs | added p50 µs | added per chunk µs |");
    println!("|-------:|:---------|--------:|--------:|-------------:|-------------------:|");
    for chunks in CHUNKS {
        let address = start_stub(chunks);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (raw, adapter) = runtime.block_on(async {
            let client = reqwest::Client::builder()
                .tcp_nodelay(true)
                .build()
                .unwrap();
            let config = OpenAiConfig::new(format!("http://{address}/v1"))
                .with_api_key("sk-bench")
                .with_retry(RetryPolicy::none());
            let model = OpenAiChatModel::new(config).unwrap();
            let raw = measure(requests, || raw_request(&client, address)).await;
            let adapter = measure(requests, || adapter_request(&model, chunks)).await;
            (raw, adapter)
        });
        let (raw_p50, raw_p99) = percentiles(raw);
        let (adapter_p50, adapter_p99) = percentiles(adapter);
        let added = adapter_p50 - raw_p50;
        println!(
            "| {chunks:>6} | reqwest  | {raw_p50:>7.1} | {raw_p99:>7.1} |            – |                  – |"
        );
        println!(
            "| {chunks:>6} | adapter  | {adapter_p50:>7.1} | {adapter_p99:>7.1} | {added:>12.1} | {:>18.2} |",
            added / (chunks as f64 + 3.0)
        );
    }
}

/// Times `requests` calls after the warm-up; microseconds each.
async fn measure<F, Fut>(requests: usize, mut call: F) -> Vec<f64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut times = Vec::with_capacity(requests);
    for i in 0..WARM_UP + requests {
        let started = Instant::now();
        call().await;
        if i >= WARM_UP {
            times.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    times
}

fn percentiles(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    (at(0.5), at(0.99))
}

fn request_body() -> serde_json::Value {
    json!({"model": "stub", "stream": true, "stream_options": {"include_usage": true},
           "messages": [{"role": "user", "content": "Say something."}]})
}

/// The baseline: the same POST, the body read to its end and nothing parsed.
async fn raw_request(client: &reqwest::Client, address: SocketAddr) {
    let response = client
        .post(format!("http://{address}/v1/chat/completions"))
        .json(&request_body())
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let mut body = response.bytes_stream();
    let mut read = 0;
    while let Some(bytes) = body.next().await {
        read += bytes.unwrap().len();
    }
    assert!(read > 0);
}

/// The adapter: every event parsed; the text must be whole.
async fn adapter_request(model: &OpenAiChatModel, chunks: usize) {
    let request = ChatRequest {
        model: "stub".into(),
        messages: vec![ChatMessage::new(Role::User, "Say something.")],
        ..ChatRequest::default()
    };
    let mut stream = model.stream(request).await.unwrap();
    let (mut deltas, mut finished) = (0, false);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            ChatEvent::TextDelta(_) => deltas += 1,
            ChatEvent::Finish { .. } => finished = true,
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert!(
        finished && deltas == chunks,
        "{deltas} deltas, finished: {finished}"
    );
}

/// The SSE answer of `chunks` deltas, as one HTTP/1.1 keep-alive response.
fn answer(chunks: usize) -> Vec<u8> {
    let mut body = String::new();
    let event = |value: serde_json::Value| format!("data: {value}\n\n");
    for i in 0..chunks {
        body.push_str(&event(json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
            "created": 1, "model": "stub",
            "choices": [{"index": 0, "delta": {"content": format!("word{i} ")}, "finish_reason": null}]})));
    }
    body.push_str(&event(
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
        "created": 1, "model": "stub",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ));
    body.push_str(&event(
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
        "created": 1, "model": "stub", "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": chunks, "total_tokens": chunks + 5}}),
    ));
    body.push_str("data: [DONE]\n\n");
    let mut response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body.as_bytes());
    response
}

/// Starts the stub on its own thread; its address.
fn start_stub(chunks: usize) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let answer = answer(chunks);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener).unwrap();
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, answer.clone()));
            }
        });
    });
    address
}

/// Answers every request on one connection until the client closes it.
async fn serve(mut socket: TcpStream, answer: Vec<u8>) {
    socket.set_nodelay(true).unwrap();
    let mut data = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let Some(head_end) = data
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| at + 4)
        else {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => data.extend_from_slice(&buffer[..read]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&data[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().unwrap());
        while data.len() < head_end + length {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => data.extend_from_slice(&buffer[..read]),
            }
        }
        data.drain(..head_end + length);
        if socket.write_all(&answer).await.is_err() {
            return;
        }
    }
}
