//! The response cache (issue 66 item 2, decision 0063): what a hit costs against the model
//! call it stands in for, and how its semantic threshold separates paraphrases from other
//! questions.
//!
//! Like with like: a hit replaces the completion's first model call, so the baseline is
//! that call at its fastest — the OpenAI-compatible adapter streaming one answer (eight
//! content deltas, a finish and a usage chunk) from a stub on loopback that answers at once
//! (keep-alive HTTP/1.1, one write, on a thread of its own). Measured against it in the same
//! run, on the same request: an exact hit (the request's key, the in-memory store's lookup
//! among `ENTRIES` answers, the replay drained) and a semantic hit (the same, plus the
//! question embedded by the embedded embedder and its partition scanned). Nothing the two
//! share (authentication, the chat's storage, the HTTP answer) is in either figure.
//!
//! The threshold table embeds the pairs of `PAIRS` (questions a user could send twice,
//! written for this benchmark: paraphrases, and near misses that differ in the one word that
//! changes the answer) with both embedded models and gives, per threshold, the precision
//! (hits that were paraphrases) and recall (paraphrases that hit). It is no public corpus:
//! none is among the benchmark data yet (see docs/benchmarks.md).
//!
//! Environment: `BENCH_REQUESTS` (default 2000 per row), `TESSERA_MODELS_DIR`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/mod.rs"]
#[allow(dead_code, reason = "only where the models are is needed here")]
mod support;

use std::{net::SocketAddr, sync::Arc, time::Instant};

use chrono::{Duration, Utc};
use futures_util::StreamExt;
use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel, cpu_flags};
use tessera_kernel::OrganizationId;
use tessera_knowledge::Embedder;
use tessera_llm_openai::{OpenAiChatModel, OpenAiConfig, RetryPolicy};
use tessera_models::{ChatEvent, ChatMessage, ChatModel, ChatRequest, Role};
use tessera_response_cache::{
    CacheScope, CachedAnswer, ExactKey, InMemoryResponseCache, Partition, Question,
    ResponseCacheStore, normalised,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WARM_UP: usize = 200;
/// Answers the store holds besides the measured one.
const ENTRIES: usize = 5_000;
/// Content deltas of the stub's answer.
const CHUNKS: usize = 8;

/// Labelled pairs: `true` when the second asks the same as the first.
const PAIRS: &[(&str, &str, bool)] = &[
    (
        "What is the capital of France?",
        "What's the capital of France?",
        true,
    ),
    (
        "What is the capital of France?",
        "Which city is the capital of France?",
        true,
    ),
    (
        "What is the capital of France?",
        "What is the capital of Germany?",
        false,
    ),
    (
        "How do I reset my password?",
        "How can I reset my password?",
        true,
    ),
    (
        "How do I reset my password?",
        "How do I change my username?",
        false,
    ),
    (
        "How many legs does a spider have?",
        "How many legs do spiders have?",
        true,
    ),
    (
        "How many legs does a spider have?",
        "How many legs does an ant have?",
        false,
    ),
    (
        "Convert 10 miles to kilometres",
        "Convert ten miles to kilometers",
        true,
    ),
    (
        "Convert 10 miles to kilometres",
        "Convert 20 miles to kilometres",
        false,
    ),
    (
        "What is the boiling point of water?",
        "At what temperature does water boil?",
        true,
    ),
    (
        "What is the boiling point of water?",
        "What is the freezing point of water?",
        false,
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Who is the author of Pride and Prejudice?",
        true,
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Who wrote Sense and Sensibility?",
        false,
    ),
    (
        "Translate 'good morning' into Spanish",
        "How do you say good morning in Spanish?",
        true,
    ),
    (
        "Translate 'good morning' into Spanish",
        "Translate 'good morning' into Italian",
        false,
    ),
    (
        "What time zone is Tokyo in?",
        "Which time zone does Tokyo use?",
        true,
    ),
    (
        "What time zone is Tokyo in?",
        "What time zone is Sydney in?",
        false,
    ),
    (
        "Summarise the refund policy",
        "Give me a summary of the refund policy",
        true,
    ),
    (
        "Summarise the refund policy",
        "Summarise the privacy policy",
        false,
    ),
    (
        "Is Python dynamically typed?",
        "Is Python a dynamically typed language?",
        true,
    ),
    (
        "Is Python dynamically typed?",
        "Is Rust dynamically typed?",
        false,
    ),
    (
        "List three benefits of exercise",
        "Name three benefits of exercise",
        true,
    ),
    (
        "List three benefits of exercise",
        "List three risks of exercise",
        false,
    ),
    (
        "How far is the Moon from Earth?",
        "What is the distance between the Earth and the Moon?",
        true,
    ),
    (
        "How far is the Moon from Earth?",
        "How far is Mars from Earth?",
        false,
    ),
];

const THRESHOLDS: [f32; 5] = [0.85, 0.9, 0.93, 0.95, 0.97];

fn main() {
    let requests: usize = std::env::var("BENCH_REQUESTS")
        .ok()
        .map(|t| t.parse().expect("BENCH_REQUESTS must be a number"))
        .unwrap_or(2000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "\nResponse cache: a hit against the model call it replaces ({requests} sequential calls per row)"
    );
    println!("CPU: {}\n", cpu_flags());
    runtime.block_on(async {
        let models = support::models_root();
        let minilm = load(&models, LocalEmbeddingModel::AllMiniLmL6V2).await;
        let bge = load(&models, LocalEmbeddingModel::BgeSmallEnV15).await;
        latency(requests, &minilm).await;
        for (name, embedder) in [("all-MiniLM-L6-v2", &minilm), ("bge-small-en-v1.5", &bge)] {
            thresholds(name, embedder).await;
        }
    });
}

async fn load(models: &std::path::Path, model: LocalEmbeddingModel) -> Arc<LocalEmbedder> {
    let dir = model.find(models).unwrap_or_else(|| {
        panic!(
            "{} is not under {} (run `just models`)",
            model.name(),
            models.display()
        )
    });
    let options = LocalEmbedderOptions {
        model,
        ..LocalEmbedderOptions::default()
    };
    Arc::new(
        tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir, options))
            .await
            .unwrap()
            .unwrap(),
    )
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "stub".into(),
        messages: vec![
            ChatMessage::new(
                Role::System,
                "You answer questions about geography briefly.",
            ),
            ChatMessage::new(Role::User, "What is the capital of France?"),
        ],
        max_tokens: Some(64),
        temperature: Some(0.0),
        ..ChatRequest::default()
    }
}

async fn latency(requests: usize, embedder: &Arc<LocalEmbedder>) {
    let address = start_stub();
    let config = OpenAiConfig::new(format!("http://{address}/v1"))
        .with_api_key("sk-bench")
        .with_retry(RetryPolicy::none());
    let model = OpenAiChatModel::new(config).unwrap();
    let organization: OrganizationId = "bench".parse().unwrap();
    let scope = CacheScope {
        organization: &organization,
        model_id: "stub/model",
        principal: None,
    };
    let now = Utc::now();
    let store = InMemoryResponseCache::new(ENTRIES * 2, 512 << 20);
    // The stored answer is what the upstream streams.
    let events = drain(&model, request()).await;
    for i in 0..ENTRIES {
        let mut other = request();
        other.messages[1].content = format!("Question number {i}?");
        let (partition, _) = Partition::of(&scope, &other).unwrap();
        let question = Question {
            partition,
            embedding: normalised(vec![(i % 7) as f32, 1.0, (i % 11) as f32]),
        };
        let answer = CachedAnswer::of(events.clone(), now, now + Duration::hours(1)).unwrap();
        store
            .put(ExactKey::of(&scope, &other), Some(question), answer)
            .await
            .unwrap();
    }
    let asked = request();
    let (partition, question) = Partition::of(&scope, &asked).unwrap();
    let embedding = normalised(embedder.embed_query(question.to_owned()).await.unwrap());
    let answer = CachedAnswer::of(events.clone(), now, now + Duration::hours(1)).unwrap();
    let stored = Question {
        partition: partition.clone(),
        embedding: embedding.clone(),
    };
    store
        .put(ExactKey::of(&scope, &asked), Some(stored), answer)
        .await
        .unwrap();

    let upstream = measure(requests, || async {
        drain(&model, request()).await;
    })
    .await;
    let exact = measure(requests, || async {
        let request = request();
        let key = ExactKey::of(&scope, &request);
        let hit = store.exact(&key, now).await.unwrap().unwrap();
        replay(hit).await;
    })
    .await;
    let semantic = measure(requests / 4, || async {
        let request = request();
        let (partition, question) = Partition::of(&scope, &request).unwrap();
        let embedding = normalised(embedder.embed_query(question.to_owned()).await.unwrap());
        let (hit, _) = store
            .nearest(&partition, &embedding, 0.95, now)
            .await
            .unwrap()
            .unwrap();
        replay(hit).await;
    })
    .await;
    let (up50, up99) = percentiles(upstream);
    let (ex50, ex99) = percentiles(exact);
    let (se50, se99) = percentiles(semantic);
    println!("| answered by | p50 µs | p99 µs | × faster than the upstream (p50) |");
    println!("|:--|--:|--:|--:|");
    println!(
        "| the stub upstream, through the OpenAI adapter (baseline) | {up50:.1} | {up99:.1} | 1.0× |"
    );
    println!(
        "| an exact hit ({ENTRIES} answers held) | {ex50:.1} | {ex99:.1} | {:.1}× |",
        up50 / ex50
    );
    println!(
        "| a semantic hit (question embedded by all-MiniLM-L6-v2) | {se50:.1} | {se99:.1} | {:.2}× |",
        up50 / se50
    );
    println!();
}

async fn thresholds(name: &str, embedder: &Arc<LocalEmbedder>) {
    let mut scored = Vec::with_capacity(PAIRS.len());
    for (first, second, same) in PAIRS {
        let a = normalised(embedder.embed_query((*first).to_owned()).await.unwrap());
        let b = normalised(embedder.embed_query((*second).to_owned()).await.unwrap());
        let similarity: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        scored.push((similarity, *same));
    }
    let paraphrases = scored.iter().filter(|(_, same)| *same).count();
    println!(
        "Semantic threshold, {name}: {} labelled pairs ({paraphrases} paraphrases)\n",
        scored.len()
    );
    println!("| threshold | hits | precision | recall |");
    println!("|--:|--:|--:|--:|");
    for threshold in THRESHOLDS {
        let hits: Vec<bool> = (scored.iter())
            .filter(|(similarity, _)| *similarity >= threshold)
            .map(|(_, same)| *same)
            .collect();
        let right = hits.iter().filter(|same| **same).count();
        let precision = if hits.is_empty() {
            1.0
        } else {
            right as f64 / hits.len() as f64
        };
        let recall = right as f64 / paraphrases as f64;
        println!(
            "| {threshold:.2} | {} | {precision:.3} | {recall:.3} |",
            hits.len()
        );
    }
    let worst = (scored.iter())
        .filter(|(_, same)| !same)
        .map(|(similarity, _)| *similarity)
        .fold(f32::MIN, f32::max);
    println!("\nThe most similar pair that asks something else: {worst:.3}\n");
}

async fn drain(model: &OpenAiChatModel, request: ChatRequest) -> Vec<ChatEvent> {
    let mut stream = model.stream(request).await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    events
}

async fn replay(answer: CachedAnswer) {
    let mut stream = futures_util::stream::iter(answer.events.into_iter().map(Ok::<_, ()>));
    while let Some(event) = stream.next().await {
        std::hint::black_box(event.unwrap());
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
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// The stub upstream: answers every POST at once with the same streamed answer, keeping
/// the connection alive.
fn start_stub() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let chunk = serde_json::json!({"id": "chatcmpl-stub", "object": "chat.completion.chunk",
            "created": 0, "model": "stub", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut body: String = (0..CHUNKS)
        .map(|i| chunk(serde_json::json!({"content": format!("word{i} ")}), None))
        .collect();
    body.push_str(&chunk(serde_json::json!({}), Some("stop")));
    body.push_str(&format!(
        "data: {}\n\n",
        serde_json::json!({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
            "model": "stub", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}})
    ));
    body.push_str("data: [DONE]\n\n");
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((mut socket, _)) = listener.accept().await {
                socket.set_nodelay(true).unwrap();
                let response = response.clone();
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let mut read = [0u8; 8192];
                    loop {
                        // One request: its head, then as many body bytes as it declares.
                        let end = loop {
                            if let Some(end) = find(&buffer, b"\r\n\r\n") {
                                break end + 4;
                            }
                            match socket.read(&mut read).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buffer.extend_from_slice(&read[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                        let length: usize = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .map_or(0, |value| value.trim().parse().unwrap_or(0));
                        while buffer.len() < end + length {
                            match socket.read(&mut read).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buffer.extend_from_slice(&read[..n]),
                            }
                        }
                        buffer.drain(..end + length);
                        if socket.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
    });
    address
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
