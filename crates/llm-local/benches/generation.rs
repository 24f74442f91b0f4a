//! Local inference speed: prompt processing and generation tokens/s of the embedded engine
//! (`LocalEngine` on SmolLM2-135M-Instruct), side by side in the same run with llama.cpp
//! (through `llama-cpp-python`) on the same GGUF file, the same prompt tokens and the same
//! number of compute threads.
//!
//! Each engine answers the same two requests, greedily: a long prompt capped at one token
//! (prompt processing: prompt tokens over the time to the first token) and a short prompt
//! asking for a long answer (generation: tokens after the first over the time from the first
//! to the last). One warm-up, then `BENCH_RUNS` (default 5) measured runs; medians.
//!
//! Environment: `CANDLE_NUM_THREADS` (the engine's threads, `LocalEngineOptions::threads`;
//! llama.cpp is given the same number, default 1), `TESSERA_BENCH_LLAMA_PYTHON` (a Python
//! with `llama_cpp`; without it the llama.cpp rows say why they are missing),
//! `TESSERA_MODELS_DIR` (the model cache, as for the tests).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tessera_llm_local::{LocalEngine, LocalEngineOptions, testing};
use tessera_models::{ChatEvent, ChatMessage, ChatModel, ChatRequest, Role};

/// A fixed system prompt, so both engines see the same ChatML text (the engine would
/// otherwise insert the model's default one).
const SYSTEM: &str = "You are a helpful assistant.";
/// The generation request: a short prompt that asks for a long answer.
const STORY: &str = "Write a long, detailed story about a lighthouse keeper who finds a message in a bottle. Describe the sea, the weather and every day of his week.";
/// Tokens generated per generation run (the answer may end earlier on `<|im_end|>`).
const GENERATED: u32 = 128;

/// One engine's figures: medians over the measured runs.
#[derive(Debug, Clone, Copy)]
struct Figures {
    prompt_tokens: usize,
    prompt_per_s: f64,
    generated_tokens: usize,
    generated_per_s: f64,
}

fn main() -> Result<()> {
    let threads: usize = match std::env::var("CANDLE_NUM_THREADS") {
        Ok(text) => text
            .parse()
            .with_context(|| format!("CANDLE_NUM_THREADS must be a number, got `{text}`"))?,
        Err(_) => bail!("set CANDLE_NUM_THREADS (e.g. 1): llama.cpp gets the same thread count"),
    };
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .map(|t| t.parse())
        .transpose()
        .context("BENCH_RUNS must be a number")?
        .unwrap_or(5);
    let model = testing::model_path();
    let long_prompt = long_prompt();
    let prompts = Prompts {
        long: chatml(&long_prompt),
        story: chatml(STORY),
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let engine = LocalEngine::load(
        &model,
        LocalEngineOptions {
            threads: Some(threads),
            ..LocalEngineOptions::default()
        },
    )?;
    let tokens = engine.token_counter();
    let ours = runtime.block_on(measure_engine(&engine, &long_prompt, runs))?;
    // The ChatML the engine rendered must be the text llama.cpp is given.
    let rendered = tokens.encode(&prompts.long).len();
    if rendered != ours.prompt_tokens {
        bail!(
            "the engine's prompt has {} tokens, the bench's ChatML {rendered}: the templates differ",
            ours.prompt_tokens
        );
    }
    drop(engine);

    let llama = match std::env::var_os("TESSERA_BENCH_LLAMA_PYTHON").filter(|p| !p.is_empty()) {
        Some(python) => measure_llama_cpp(
            Path::new(&python),
            &model,
            threads,
            runs,
            &prompts,
            ours.generated_tokens,
        )
        .map_err(|e| format!("{e:#}")),
        None => {
            Err("TESSERA_BENCH_LLAMA_PYTHON is not set: llama-cpp-python is not installed".into())
        }
    };

    print_table(&model, threads, runs, ours, llama);
    Ok(())
}

struct Prompts {
    long: String,
    story: String,
}

/// The ChatML text of the system prompt and one user turn, as the engine renders it.
fn chatml(user: &str) -> String {
    format!(
        "<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    )
}

/// About 450 tokens of plain prose.
fn long_prompt() -> String {
    let sentence = "The harbour town woke slowly, with fishermen mending nets while gulls circled above the grey water and the bakery filled the street with the smell of bread. ";
    let mut text = String::from("Summarise the following text in one sentence. ");
    for _ in 0..14 {
        text.push_str(sentence);
    }
    text
}

fn request(user: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: "smollm2".into(),
        messages: vec![
            ChatMessage::new(Role::System, SYSTEM),
            ChatMessage::new(Role::User, user),
        ],
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
        ..ChatRequest::default()
    }
}

/// One streamed answer: prompt tokens, generated tokens, time to the first delta, time from
/// the first delta to the finish.
async fn answer(
    engine: &LocalEngine,
    request: ChatRequest,
) -> Result<(usize, usize, Duration, Duration)> {
    let started = Instant::now();
    let mut stream = engine.stream(request).await?;
    let mut first = None;
    while let Some(event) = stream.next().await {
        match event? {
            ChatEvent::TextDelta(_) => {
                first.get_or_insert_with(Instant::now);
            }
            ChatEvent::Finish { usage, .. } => {
                let first = first.unwrap_or_else(Instant::now);
                return Ok((
                    usage.input_tokens as usize,
                    usage.output_tokens as usize,
                    first - started,
                    first.elapsed(),
                ));
            }
            other => bail!("unexpected event {other:?}"),
        }
    }
    bail!("the stream ended without a finish event")
}

async fn measure_engine(engine: &LocalEngine, long_prompt: &str, runs: usize) -> Result<Figures> {
    let (mut prompt_rates, mut generation_rates) = (Vec::new(), Vec::new());
    let (mut prompt_tokens, mut generated_tokens) = (0, 0);
    for run in 0..=runs {
        let (input, _, to_first, _) = answer(engine, request(long_prompt, 1)).await?;
        let (_, output, _, rest) = answer(engine, request(STORY, GENERATED)).await?;
        if output < 2 {
            bail!("the generation request produced {output} tokens");
        }
        if run == 0 {
            continue; // warm-up
        }
        prompt_tokens = input;
        generated_tokens = output;
        prompt_rates.push(input as f64 / to_first.as_secs_f64());
        generation_rates.push((output - 1) as f64 / rest.as_secs_f64());
    }
    Ok(Figures {
        prompt_tokens,
        prompt_per_s: median(prompt_rates),
        generated_tokens,
        generated_per_s: median(generation_rates),
    })
}

/// llama.cpp's figures from `llama_cpp_peer.py` (one JSON object on standard output).
fn measure_llama_cpp(
    python: &Path,
    model: &Path,
    threads: usize,
    runs: usize,
    prompts: &Prompts,
    generated: usize,
) -> Result<Figures> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/llama_cpp_peer.py");
    let input = json!({
        "model": model,
        "threads": threads,
        "runs": runs,
        "long_prompt": prompts.long,
        "story_prompt": prompts.story,
        "generated": generated,
    });
    let output = Command::new(python)
        .arg(&script)
        .arg(input.to_string())
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !output.status.success() {
        bail!(
            "llama_cpp_peer.py failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let figures: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "llama_cpp_peer.py printed {:?}",
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    let number = |key: &str| {
        figures[key]
            .as_f64()
            .with_context(|| format!("llama_cpp_peer.py gave no `{key}`: {figures}"))
    };
    Ok(Figures {
        prompt_tokens: number("prompt_tokens")? as usize,
        prompt_per_s: number("prompt_per_s")?,
        generated_tokens: number("generated_tokens")? as usize,
        generated_per_s: number("generated_per_s")?,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn print_table(
    model: &Path,
    threads: usize,
    runs: usize,
    ours: Figures,
    llama: Result<Figures, String>,
) {
    println!(
        "\nlocal generation: {} ({threads} thread{}; medians of {runs} runs, greedy)\n",
        model.file_name().map_or_else(
            || model.display().to_string(),
            |n| n.to_string_lossy().into_owned()
        ),
        if threads == 1 { "" } else { "s" }
    );
    println!(
        "| engine           | prompt tokens | prompt tokens/s | generated | generation tokens/s |"
    );
    println!(
        "|:-----------------|--------------:|----------------:|----------:|--------------------:|"
    );
    let row = |name: &str, f: &Figures| {
        println!(
            "| {name:<16} | {:>13} | {:>15.1} | {:>9} | {:>19.1} |",
            f.prompt_tokens, f.prompt_per_s, f.generated_tokens, f.generated_per_s
        );
    };
    row("tessera", &ours);
    match llama {
        Ok(llama) => {
            row("llama.cpp", &llama);
            println!(
                "\ntessera / llama.cpp: prompt processing {:.2}×, generation {:.2}× (goal: generation ≥ {:.2}×, i.e. within 1.3×)",
                ours.prompt_per_s / llama.prompt_per_s,
                ours.generated_per_s / llama.generated_per_s,
                1.0 / 1.3
            );
        }
        Err(why) => println!("\nllama.cpp: not measured ({why})"),
    }
}
