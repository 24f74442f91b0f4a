//! A chat's second turn over HTTP (issue 63): time to the first streamed token of a turn
//! whose history is about 1,000 tokens, against the first turn's, with the embedded engine's
//! prefix reuse on (the default) and off (`models.prefix_cache_mib = 0`, the baseline,
//! measured in the same run).
//!
//! Each round is a new chat on `/openai/v1/chat/completions` (streamed, greedy, 32 tokens):
//! turn 1 sends a ~1,000-token passage with a question; turn 2 sends the same history, the
//! first answer and a short follow-up, as OpenAI clients do. Rounds use different passages,
//! so nothing is shared between rounds but the template. The real application runs on its
//! embedded defaults (SQLite, the SmolLM2 GGUF under `TESSERA_MODELS_DIR`, default
//! `~/.cache/tessera-models`, filled by `just models`). Threads: `CANDLE_NUM_THREADS`, else
//! every core. Nothing asserts on timings; it prints a table and the CPU's flags.
//!
//! Run with `just bench`, or `cargo bench -p tessera-api --bench second_turn`.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};

#[path = "support/mod.rs"]
mod support;

/// The allocator of the `tessera-api` binary (decision 0021), as the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MODEL: &str = "local/smollm2-135m-instruct";
const ROUNDS: usize = 3;
/// Words of each round's passage (about 1.3 tokens each).
const PASSAGE_WORDS: usize = 750;

/// A passage of `PASSAGE_WORDS` words from this repository's documentation, starting at a
/// different place for each round.
fn passage(words: &[String], round: usize) -> String {
    let start = (round * 2_011) % words.len().saturating_sub(PASSAGE_WORDS).max(1);
    words[start..(start + PASSAGE_WORDS).min(words.len())].join(" ")
}

fn documentation_words() -> anyhow::Result<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut words = Vec::new();
    for file in ["README.md", "docs/architecture.md"] {
        let text = std::fs::read_to_string(root.join(file)).context(file)?;
        words.extend(
            text.split_whitespace()
                .filter(|word| {
                    word.chars()
                        .all(|c| c.is_alphanumeric() || ".,;:'-".contains(c))
                })
                .map(str::to_owned),
        );
    }
    if words.len() < PASSAGE_WORDS * 2 {
        bail!("too little documentation text: {} words", words.len());
    }
    Ok(words)
}

/// One streamed turn: time to the first content token, the answer, and the usage.
struct Turn {
    first_token: Duration,
    answer: String,
    prompt_tokens: u64,
    cached_tokens: u64,
}

async fn turn(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    messages: &[Value],
) -> anyhow::Result<Turn> {
    let started = Instant::now();
    let mut response = client
        .post(format!("{base}/openai/v1/chat/completions"))
        .bearer_auth(token)
        .json(&json!({
            "model": MODEL,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0,
            "max_tokens": 32,
        }))
        .send()
        .await?
        .error_for_status()?;
    let (mut buffer, mut answer, mut first_token, mut usage) =
        (Vec::<u8>::new(), String::new(), None, None);
    while let Some(piece) = response.chunk().await? {
        buffer.extend_from_slice(&piece);
        while let Some(end) = buffer.windows(2).position(|pair| pair == b"\n\n") {
            let event: Vec<u8> = buffer.drain(..end + 2).collect();
            let event = std::str::from_utf8(&event)?;
            let Some(data) = event.trim().strip_prefix("data: ") else {
                continue;
            };
            if data == "[DONE]" {
                continue;
            }
            let chunk: Value = serde_json::from_str(data)?;
            if let Some(text) = chunk["choices"][0]["delta"]["content"].as_str()
                && !text.is_empty()
            {
                first_token.get_or_insert_with(|| started.elapsed());
                answer.push_str(text);
            }
            if chunk["usage"].is_object() {
                usage = Some(chunk["usage"].clone());
            }
        }
    }
    let usage = usage.ok_or_else(|| anyhow!("no usage chunk"))?;
    Ok(Turn {
        first_token: first_token.ok_or_else(|| anyhow!("no content was streamed"))?,
        answer,
        prompt_tokens: usage["prompt_tokens"].as_u64().unwrap_or_default(),
        cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or_default(),
    })
}

/// Every round's first and second turn on a fresh application with `prefix_cache_mib`,
/// keeping its data in `data_dir`.
async fn measure(
    prefix_cache_mib: usize,
    words: &[String],
    data_dir: &Path,
) -> anyhow::Result<Vec<(Turn, Turn)>> {
    let mut settings = support::settings(data_dir)?;
    settings.models.local_dir = Some(support::models_root());
    settings.models.prefix_cache_mib = prefix_cache_mib;
    let support::RunningApp {
        handle,
        client,
        base,
        token,
    } = support::start(settings, Duration::from_secs(600)).await?;

    let mut rounds = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let question = format!(
            "{}\n\nIn one sentence: what is the passage above about?",
            passage(words, round)
        );
        let mut messages = vec![json!({"role": "user", "content": question})];
        let first = turn(&client, &base, &token, &messages).await?;
        messages.push(json!({"role": "assistant", "content": first.answer}));
        messages.push(json!({"role": "user", "content": "Say it in fewer words."}));
        let second = turn(&client, &base, &token, &messages).await?;
        rounds.push((first, second));
    }
    handle.stop(true).await;
    Ok(rounds)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> anyhow::Result<()> {
    println!("CPU flags: {}", tessera_embed_local::cpu_flags());
    if tessera_llm_local::find_model_file(
        &support::models_root(),
        "SmolLM2-135M-Instruct.Q4_1.gguf",
    )
    .is_none()
    {
        eprintln!(
            "skipped: the SmolLM2 GGUF is not under {} (run `just models`)",
            support::models_root().display()
        );
        return Ok(());
    }
    let words = documentation_words()?;
    let runtime = tokio::runtime::Runtime::new()?;
    println!(
        "{:<16} {:>5} {:>10} {:>7} {:>10} {:>7} {:>7} {:>7}",
        "prefix reuse", "round", "turn 1 ms", "tokens", "turn 2 ms", "tokens", "reused", "ratio"
    );
    let mut ratios = Vec::new();
    // The embedded index flushes when the runtime drops the workers that hold it, so the
    // data folders must outlive the runtime.
    let mut data_dirs = Vec::new();
    for (label, mib) in [("off (baseline)", 0), ("on, 256 MiB", 256)] {
        let data_dir = tempfile::tempdir()?;
        let rounds = runtime.block_on(measure(mib, &words, data_dir.path()))?;
        data_dirs.push(data_dir);
        let mut ratio = Vec::new();
        for (round, (first, second)) in rounds.iter().enumerate() {
            let r = second.first_token.as_secs_f64() / first.first_token.as_secs_f64();
            ratio.push(r);
            println!(
                "{label:<16} {round:>5} {:>10.0} {:>7} {:>10.0} {:>7} {:>7} {:>6.2}×",
                first.first_token.as_secs_f64() * 1e3,
                first.prompt_tokens,
                second.first_token.as_secs_f64() * 1e3,
                second.prompt_tokens,
                second.cached_tokens,
                r
            );
        }
        ratios.push((label, median(ratio)));
    }
    drop(runtime);
    drop(data_dirs);
    for (label, ratio) in ratios {
        println!("median second turn ÷ first turn, reuse {label}: {ratio:.2}× (goal ≤ 0.20×)");
    }
    Ok(())
}
