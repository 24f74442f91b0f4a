//! Interactive chats while a batch runs (issue 64): `POST /v1/chats` latency with a
//! 1,000-line batch of chat completions in progress, against the same load without it
//! (the baseline, measured first in the same run).
//!
//! Both go through one real application (embedded SQLite, the batch runner on its defaults:
//! one runner, one line at a time) whose model `bench/stub` is an OpenAI-compatible stub on
//! 127.0.0.1 (actix-web inside this process, plain HTTP, a fixed answer after
//! `STUB_DELAY`). `CLIENTS` clients send chats one after another for `WINDOW` without the
//! batch; then the batch's input is uploaded (`purpose: batch`), the batch created, and the
//! same load runs while it is in progress. The batch is then let finish and its lines per
//! second printed. Nothing asserts on timings; it prints a table and the CPU's flags.
//!
//! Run with `just bench`, or `cargo bench -p tessera-api --bench batch_priority`.

use std::{
    net::TcpListener,
    time::{Duration, Instant},
};

use actix_web::{App, HttpResponse, HttpServer, web};
use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};

#[path = "support/mod.rs"]
mod support;

/// The allocator of the `tessera-api` binary (decision 0021), as the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MODEL: &str = "bench/stub";
/// Lines in the batch.
const LINES: usize = 1_000;
/// Interactive clients, each sending its next chat when the last is answered.
const CLIENTS: usize = 2;
/// How long each load is measured (the batch must still run at its end).
const WINDOW: Duration = Duration::from_secs(20);
/// The stub's time to answer, as a fast hosted model's.
const STUB_DELAY: Duration = Duration::from_millis(20);

/// The stub's answer to every chat completion.
async fn stub_completion(body: web::Json<Value>) -> HttpResponse {
    tokio::time::sleep(STUB_DELAY).await;
    HttpResponse::Ok().json(json!({
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": "A short answer from the stub."},
            "finish_reason": "stop",
        }],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    }))
}

/// Starts the stub on 127.0.0.1:0; its `/v1` base URL.
fn start_stub() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let server = HttpServer::new(|| {
        App::new().route("/v1/chat/completions", web::post().to(stub_completion))
    })
    .workers(1)
    .listen(listener)?
    .run();
    tokio::spawn(server);
    Ok(format!("http://127.0.0.1:{port}/v1"))
}

fn catalog(stub: &str) -> String {
    format!(
        r#"[providers.stub]
kind = "openai"
base_url = "{stub}"

[[models]]
id = "{MODEL}"
display_name = "Benchmark stub"
provider = "stub"
model_name = "stub-model"
context_window = 128000
max_tokens_per_request = 1024
capabilities = {{ streaming = true }}
credit_multiplier = 1
"#
    )
}

/// `CLIENTS` clients chatting for `WINDOW`; every latency, sorted.
async fn chat_load(app: &support::RunningApp) -> anyhow::Result<Vec<Duration>> {
    let end = Instant::now() + WINDOW;
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (http, url, token) = (
            app.client.clone(),
            format!("{}/v1/chats", app.base),
            app.token.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut turn = 0;
            while Instant::now() < end {
                let body = json!({
                    "modelId": MODEL,
                    "messages": [{"role": "user", "content": format!("Question {turn} of client {client}?")}],
                });
                let sent = Instant::now();
                let response = http.post(&url).bearer_auth(&token).json(&body).send().await?;
                let status = response.status();
                let answer = response.bytes().await?;
                if !status.is_success() {
                    bail!("/v1/chats answered {status}: {}", String::from_utf8_lossy(&answer));
                }
                latencies.push(sent.elapsed());
                turn += 1;
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut latencies = Vec::new();
    for client in clients {
        latencies.extend(client.await.context("a client stopped")??);
    }
    latencies.sort_unstable();
    Ok(latencies)
}

/// The batch's input uploaded as `purpose: batch`, then the batch created; its id.
async fn create_batch(app: &support::RunningApp) -> anyhow::Result<String> {
    let lines: Vec<String> = (0..LINES)
        .map(|line| {
            json!({
                "custom_id": format!("line-{line}"),
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": MODEL, "messages": [{"role": "user", "content": format!("Item {line}?")}]},
            })
            .to_string()
        })
        .collect();
    let form = reqwest::multipart::Form::new()
        .text("purpose", "batch")
        .part(
            "file",
            reqwest::multipart::Part::bytes(lines.join("\n").into_bytes()).file_name("lines.jsonl"),
        );
    let file: Value = app
        .client
        .post(format!("{}/openai/v1/files", app.base))
        .bearer_auth(&app.token)
        .multipart(form)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let batch: Value = app
        .client
        .post(format!("{}/openai/v1/batches", app.base))
        .bearer_auth(&app.token)
        .json(&json!({
            "input_file_id": file["id"],
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        }))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    batch["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no batch id in {batch}"))
}

async fn batch_state(app: &support::RunningApp, id: &str) -> anyhow::Result<Value> {
    Ok(app
        .client
        .get(format!("{}/openai/v1/batches/{id}", app.base))
        .bearer_auth(&app.token)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?)
}

/// Nearest-rank percentile, in milliseconds.
fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e3
}

async fn run(data_dir: &std::path::Path) -> anyhow::Result<()> {
    let stub = start_stub()?;
    let catalog_file = data_dir.join("catalog.toml");
    std::fs::write(&catalog_file, catalog(&stub))?;
    let mut settings = support::settings(data_dir)?;
    settings.models.catalog_file = Some(catalog_file);
    settings.models.local_dir = None;
    let app = support::start(settings, Duration::from_secs(60)).await?;

    let alone = chat_load(&app).await?;
    let id = create_batch(&app).await?;
    let with_batch = chat_load(&app).await?;
    let during = batch_state(&app, &id).await?;
    let completed_during = during["request_counts"]["completed"].as_u64().unwrap_or(0);
    if during["status"] != "in_progress" {
        println!(
            "warning: the batch was {} before the load ended: widen WINDOW or add lines",
            during["status"]
        );
    }
    let batch_started = Instant::now();
    let done = loop {
        let state = batch_state(&app, &id).await?;
        if !matches!(
            state["status"].as_str(),
            Some("validating" | "in_progress" | "finalizing")
        ) {
            break state;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let rest = batch_started.elapsed();
    if done["status"] != "completed" || done["request_counts"]["failed"] != 0 {
        bail!("the batch did not complete cleanly: {done}");
    }
    let remaining = LINES as u64 - completed_during;

    println!(
        "{:<34} {:>9} {:>9} {:>9} {:>9}",
        "POST /v1/chats, 2 clients", "requests", "p50 ms", "p99 ms", "p99 ÷ base"
    );
    let base_p99 = percentile_ms(&alone, 99.0);
    for (label, latencies) in [
        ("without a batch (baseline)", &alone),
        ("with a 1,000-line batch running", &with_batch),
    ] {
        println!(
            "{label:<34} {:>9} {:>9.2} {:>9.2} {:>8.2}×",
            latencies.len(),
            percentile_ms(latencies, 50.0),
            percentile_ms(latencies, 99.0),
            percentile_ms(latencies, 99.0) / base_p99,
        );
    }
    println!(
        "batch lines answered during the load: {completed_during} in {:.0} s; the other {remaining} alone in {:.1} s ({:.1} lines/s)",
        WINDOW.as_secs_f64(),
        rest.as_secs_f64(),
        remaining as f64 / rest.as_secs_f64().max(1e-3),
    );
    println!(
        "verdict: p99 with the batch {:.2}× without (goal ≤ 1.20×)",
        percentile_ms(&with_batch, 99.0) / base_p99
    );
    app.handle.stop(true).await;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    println!("CPU flags: {}", tessera_embed_local::cpu_flags());
    let data_dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run(data_dir.path()))?;
    // The embedded index flushes when the runtime drops the workers that hold it, so the
    // data folder must outlive the runtime.
    drop(runtime);
    drop(data_dir);
    Ok(())
}
