//! Local inference speed: prompt processing and generation tokens/s of the embedded engine
//! (`LocalEngine` on SmolLM2-135M-Instruct), side by side in the same run with llama.cpp
//! (through `llama-cpp-python`) on the same GGUF file, the same prompt tokens and the same
//! number of compute threads.
//!
//! Each engine answers the same requests, greedily: prompts of about 500, 1,500 and 4,000
//! tokens (a system prompt, retrieved passages and history are that size), each capped at
//! one token (prompt processing: prompt tokens over the time to the first token), and a short
//! prompt asking for a long answer (generation: tokens after the first over the time from the
//! first to the last). One warm-up, then `BENCH_RUNS` (default 3) measured runs; medians.
//! The engine's prefix reuse is off: every prompt is read whole, as llama.cpp's is. On a
//! CPU with AVX-512 the engine is measured twice, with its AVX-512 kernels (the default
//! there) and with its AVX2 ones (what AVX2-only CPUs run): the baseline in the same run.
//!
//! Environment: `CANDLE_NUM_THREADS` (the engine's threads, `LocalEngineOptions::threads`;
//! llama.cpp is given the same number, default 1), `TESSERA_BENCH_LLAMA_PYTHON` (a Python
//! with `llama_cpp`; without it the llama.cpp rows say why they are missing),
//! `TESSERA_BENCH_PROMPTS` (the prompt sizes, e.g. `500,1500`), `TESSERA_MODELS_DIR` (the
//! model cache, as for the tests).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tessera_llm_local::{
    InstructionSet, LocalEngine, LocalEngineOptions, LocalTokenCounter, testing,
};
use tessera_models::{ChatEvent, ChatMessage, ChatModel, ChatRequest, Role};

/// A fixed system prompt, so both engines see the same ChatML text (the engine would
/// otherwise insert the model's default one).
const SYSTEM: &str = "You are a helpful assistant.";
/// The generation request: a short prompt that asks for a long answer.
const STORY: &str = "Write a long, detailed story about a lighthouse keeper who finds a message in a bottle. Describe the sea, the weather and every day of his week.";
/// Tokens generated per generation run (the answer may end earlier on `<|im_end|>`).
const GENERATED: u32 = 128;
/// Prompt sizes measured by default, in tokens of the rendered ChatML.
const PROMPT_SIZES: [usize; 3] = [500, 1_500, 4_000];
/// The context both engines are given: the longest prompt and its answer fit.
const CONTEXT: usize = 4_608;

/// One prompt's processing rate (a median over the measured runs).
#[derive(Debug, Clone, Copy)]
struct PromptFigure {
    tokens: usize,
    per_s: f64,
}

/// One engine's figures.
#[derive(Debug, Clone)]
struct Figures {
    prompts: Vec<PromptFigure>,
    /// llama.cpp's own account of the instruction sets its build uses.
    system_info: Option<String>,
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
        .unwrap_or(3);
    let sizes: Vec<usize> = match std::env::var("TESSERA_BENCH_PROMPTS") {
        Ok(list) => list
            .split(',')
            .map(|size| size.trim().parse())
            .collect::<Result<_, _>>()
            .with_context(|| format!("TESSERA_BENCH_PROMPTS must list numbers, got `{list}`"))?,
        Err(_) => PROMPT_SIZES.to_vec(),
    };
    let model = testing::model_path();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The widest kernels this CPU has, and on an AVX-512 CPU the AVX2 ones too: the path
    // AVX2-only CPUs run, and the baseline the AVX-512 kernels are measured against.
    let widest = InstructionSet::widest(None);
    let mut kernels = vec![widest];
    if widest == InstructionSet::Avx512 {
        kernels.push(InstructionSet::Avx2);
    }
    let mut measured = Vec::new();
    let mut rendered = Vec::new();
    for isa in kernels {
        let engine = LocalEngine::load(
            &model,
            LocalEngineOptions {
                threads: Some(threads),
                context_length: Some(CONTEXT),
                // Every run reads its prompt whole: a reused prefix would measure the cache.
                prefix_cache_bytes: 0,
                max_instruction_set: Some(isa),
                ..LocalEngineOptions::default()
            },
        )?;
        let tokens = engine.token_counter();
        let users: Vec<String> = sizes.iter().map(|&size| user_text(&tokens, size)).collect();
        let figures = runtime.block_on(measure_engine(&engine, &users, runs))?;
        // The ChatML the engine rendered must be the text llama.cpp is given.
        rendered = users.iter().map(|user| chatml(user)).collect();
        for (text, figure) in rendered.iter().zip(&figures.prompts) {
            let count = tokens.encode(text).len();
            if count != figure.tokens {
                bail!(
                    "the engine's prompt has {} tokens, the bench's ChatML {count}: the templates differ",
                    figure.tokens
                );
            }
        }
        measured.push((isa, figures));
    }
    let ours = &measured[0].1;

    let llama = match std::env::var_os("TESSERA_BENCH_LLAMA_PYTHON").filter(|p| !p.is_empty()) {
        Some(python) => measure_llama_cpp(
            Path::new(&python),
            &model,
            threads,
            runs,
            &rendered,
            &chatml(STORY),
            ours.generated_tokens,
        )
        .map_err(|e| format!("{e:#}")),
        None => {
            Err("TESSERA_BENCH_LLAMA_PYTHON is not set: llama-cpp-python is not installed".into())
        }
    };

    print_table(&model, threads, runs, &measured, llama);
    Ok(())
}

/// The ChatML text of the system prompt and one user turn, as the engine renders it.
fn chatml(user: &str) -> String {
    format!(
        "<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    )
}

/// Plain prose whose ChatML is `size` tokens or just over: an instruction, then sentences
/// of varied passages until the size is reached.
fn user_text(tokens: &LocalTokenCounter, size: usize) -> String {
    const SENTENCES: [&str; 6] = [
        "The harbour town woke slowly, with fishermen mending nets while gulls circled above the grey water. ",
        "Invoices are sent on the first day of each month and are payable within thirty days of receipt. ",
        "A cold front moved across the valley overnight, bringing rain to the vineyards on the southern slopes. ",
        "The committee reviewed the proposal twice before it agreed to fund the new library wing. ",
        "Engineers measured the bridge's cables each spring, recording the tension of every strand. ",
        "Visitors must sign in at the front desk and wear their badge for the whole of their stay. ",
    ];
    let mut text = String::from("Summarise the following notes in one sentence. ");
    let mut next = 0;
    while tokens.encode(&chatml(&text)).len() < size {
        text.push_str(SENTENCES[next % SENTENCES.len()]);
        next += 1;
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

async fn measure_engine(engine: &LocalEngine, users: &[String], runs: usize) -> Result<Figures> {
    let mut prompts = Vec::new();
    for user in users {
        let (mut rates, mut tokens) = (Vec::new(), 0);
        for run in 0..=runs {
            let (input, _, to_first, _) = answer(engine, request(user, 1)).await?;
            if run == 0 {
                continue; // warm-up
            }
            tokens = input;
            rates.push(input as f64 / to_first.as_secs_f64());
        }
        prompts.push(PromptFigure {
            tokens,
            per_s: median(rates),
        });
    }
    let (mut rates, mut generated_tokens) = (Vec::new(), 0);
    for run in 0..=runs {
        let (_, output, _, rest) = answer(engine, request(STORY, GENERATED)).await?;
        if output < 2 {
            bail!("the generation request produced {output} tokens");
        }
        if run == 0 {
            continue; // warm-up
        }
        generated_tokens = output;
        rates.push((output - 1) as f64 / rest.as_secs_f64());
    }
    Ok(Figures {
        prompts,
        system_info: None,
        generated_tokens,
        generated_per_s: median(rates),
    })
}

/// llama.cpp's figures from `llama_cpp_peer.py` (one JSON object on standard output).
fn measure_llama_cpp(
    python: &Path,
    model: &Path,
    threads: usize,
    runs: usize,
    prompts: &[String],
    story: &str,
    generated: usize,
) -> Result<Figures> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/llama_cpp_peer.py");
    let input = json!({
        "model": model,
        "threads": threads,
        "runs": runs,
        "context": CONTEXT,
        "prompts": prompts,
        "story_prompt": story,
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
    let number = |value: &Value, key: &str| {
        value[key]
            .as_f64()
            .with_context(|| format!("llama_cpp_peer.py gave no `{key}`: {figures}"))
    };
    let prompts = figures["prompts"]
        .as_array()
        .with_context(|| format!("llama_cpp_peer.py gave no `prompts`: {figures}"))?
        .iter()
        .map(|prompt| {
            Ok(PromptFigure {
                tokens: number(prompt, "tokens")? as usize,
                per_s: number(prompt, "per_s")?,
            })
        })
        .collect::<Result<_>>()?;
    Ok(Figures {
        prompts,
        system_info: figures["system_info"].as_str().map(str::to_owned),
        generated_tokens: number(&figures, "generated_tokens")? as usize,
        generated_per_s: number(&figures, "generated_per_s")?,
    })
}

/// The CPU features the engine's kernels and llama.cpp's build choose from.
fn cpu_flags() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        [
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("f16c", std::arch::is_x86_feature_detected!("f16c")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            (
                "avx512_vnni",
                std::arch::is_x86_feature_detected!("avx512vnni"),
            ),
        ]
        .iter()
        .map(|(name, present)| format!("{name} {}", if *present { "yes" } else { "no" }))
        .collect::<Vec<_>>()
        .join(", ")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        format!("{} (no x86 kernels)", std::env::consts::ARCH)
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn print_table(
    model: &Path,
    threads: usize,
    runs: usize,
    measured: &[(InstructionSet, Figures)],
    llama: Result<Figures, String>,
) {
    println!(
        "\nlocal generation: {} ({threads} thread{}; medians of {runs} runs, greedy)\nCPU: {}\n",
        model.file_name().map_or_else(
            || model.display().to_string(),
            |n| n.to_string_lossy().into_owned()
        ),
        if threads == 1 { "" } else { "s" },
        cpu_flags()
    );
    let llama = match llama {
        Ok(llama) => {
            if let Some(info) = &llama.system_info {
                println!("llama.cpp: {info}\n");
            }
            Some(llama)
        }
        Err(why) => {
            println!("llama.cpp: not measured ({why})\n");
            None
        }
    };
    let (widest, ours) = (measured[0].0, &measured[0].1);
    let others = &measured[1..];
    let mut header = format!(
        "| measure | tokens | tessera ({}) tokens/s |",
        widest.name()
    );
    let mut rule = String::from("|:--|--:|--:|");
    for (isa, _) in others {
        header += &format!(
            " tessera ({}) tokens/s | {} ÷ {} |",
            isa.name(),
            widest.name(),
            isa.name()
        );
        rule += "--:|--:|";
    }
    println!(
        "{header} llama.cpp tokens/s | tessera ({}) / llama.cpp |",
        widest.name()
    );
    println!("{rule}--:|--:|");
    let row = |name: &str, tokens: usize, pick: &dyn Fn(&Figures) -> Option<f64>| {
        let Some(value) = pick(ours) else { return };
        let mut line = format!("| {name} | {tokens} | {value:.1} |");
        for (_, figures) in others {
            match pick(figures) {
                Some(other) => line += &format!(" {other:.1} | {:.2}× |", value / other),
                None => line += " – | – |",
            }
        }
        match llama.as_ref().and_then(pick) {
            Some(theirs) => line += &format!(" {theirs:.1} | {:.2}× |", value / theirs),
            None => line += " – | – |",
        }
        println!("{line}");
    };
    for (index, prompt) in ours.prompts.iter().enumerate() {
        if let Some(theirs) = llama.as_ref().and_then(|l| l.prompts.get(index))
            && theirs.tokens != prompt.tokens
        {
            println!("(llama.cpp read {} tokens of this prompt)", theirs.tokens);
        }
        row("prompt processing", prompt.tokens, &|f: &Figures| {
            f.prompts.get(index).map(|p| p.per_s)
        });
    }
    row("generation", ours.generated_tokens, &|f: &Figures| {
        Some(f.generated_per_s)
    });
    println!("\ngoal (issue 63): every tessera / llama.cpp ratio ≥ 1.00×");
}
