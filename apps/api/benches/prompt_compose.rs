//! Composition latency of a 20-particle system prompt, and tiktoken counting throughput
//! next to OpenAI's Python `tiktoken` counting the same text in the same run.
//!
//! 1. `count composed text` (baseline for compose): counting the composed prompt's tokens
//!    alone with the shared o200k_base counter.
//! 2. `compose 20 particles`: `PromptService::compose` over the in-memory reference store
//!    (layout resolution, ordering, joining, counting): the domain's own cost, no database.
//! 3. Counting throughput on a ~100k-token text (the composed prompt repeated), Rust
//!    `tiktoken-rs` against Python `tiktoken` (baseline) on the same text, single thread.
//!
//! Python comes from `TESSERA_BENCH_PYTHON` (a venv with `tiktoken`, set up by `just bench`)
//! and reads the vocabulary from `TIKTOKEN_CACHE_DIR`; without them that row is skipped with
//! the reason printed. Nothing asserts on timings.
//!
//! Run with `just bench`, or `cargo bench -p tessera-api --bench prompt_compose`.

use std::{
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use tessera_kernel::{CursorCodec, OrganizationId, SystemClock};
use tessera_prompts::{
    Category, Content, Description, Name, NewAssociation, NewParticle, NewSystemPrompt,
    PromptService, TokenCounter, memory::InMemoryPromptStore,
};
use tessera_tokenizer::{Encoding, TiktokenCounter};

const PARTICLES_PER_CATEGORY: usize = 4;
const ITERATIONS: usize = 2_000;
/// Passes over the large text for throughput.
const PASSES: usize = 5;

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e6
}

fn particle_text(category: Category, index: usize) -> String {
    format!(
        "Particle {index} of the {category} category. Answer the customer's question about \
         their order with care: confirm the order number, check the delivery status, explain \
         any delay in plain words, and offer the next step. Never promise a refund the policy \
         does not allow; when unsure, say so and offer to escalate to a person."
    )
}

async fn timed<F, Fut>(mut run: F) -> anyhow::Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    for _ in 0..ITERATIONS / 10 {
        run().await?;
    }
    let mut samples = Vec::with_capacity(ITERATIONS);
    for _ in 0..ITERATIONS {
        let started = Instant::now();
        run().await?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples)
}

fn python_tokens_per_second(text: &str) -> anyhow::Result<(usize, f64)> {
    let python = std::env::var("TESSERA_BENCH_PYTHON")
        .context("TESSERA_BENCH_PYTHON is not set (run through `just bench`)")?;
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), text)?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/tiktoken_count.py");
    let output = Command::new(python)
        .arg(script)
        .arg(file.path())
        .arg(PASSES.to_string())
        .output()
        .context("running Python")?;
    if !output.status.success() {
        bail!("{}", String::from_utf8_lossy(&output.stderr).trim());
    }
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let tokens = result["tokens"].as_u64().context("tokens")? as usize;
    let seconds = result["seconds"].as_f64().context("seconds")?;
    Ok((tokens, (tokens * PASSES) as f64 / seconds))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let counter = TiktokenCounter::shared(Encoding::O200kBase)?;
    let store = Arc::new(InMemoryPromptStore::new());
    let service = PromptService::new(
        store.clone(),
        store,
        Arc::new(counter.clone()),
        Arc::new(SystemClock),
        CursorCodec::new([1; 32]),
    );
    let organization = OrganizationId::generate();
    let mut placements = Vec::new();
    for category in Category::ALL {
        for index in 0..PARTICLES_PER_CATEGORY {
            let particle = service
                .create_particle(
                    &organization,
                    NewParticle {
                        name: Name::parse(&format!("{category} {index}"))?,
                        category,
                        content: Content::parse(&particle_text(category, index))?,
                        description: Description::parse("")?,
                    },
                )
                .await?;
            placements.push(NewAssociation {
                particle_id: particle.id,
                order: u32::try_from(PARTICLES_PER_CATEGORY - index)?,
                pin: None,
            });
        }
    }
    let prompt = service
        .create_system_prompt(
            &organization,
            NewSystemPrompt {
                name: Name::parse("bench")?,
                description: Description::parse("")?,
                enabled: true,
                particles: placements,
            },
        )
        .await?;
    let composed = service
        .compose(&organization, &prompt.prompt.id, None)
        .await?;

    let text = composed.text.clone();
    let count_only = timed(|| {
        let counter = &counter;
        let text = &text;
        async move {
            std::hint::black_box(counter.count(text));
            Ok(())
        }
    })
    .await?;
    let compose = timed(|| {
        let service = &service;
        let organization = &organization;
        let id = &prompt.prompt.id;
        async move {
            std::hint::black_box(service.compose(organization, id, None).await?);
            Ok(())
        }
    })
    .await?;

    println!(
        "compose: {} particles, {} chars, {} tokens; {ITERATIONS} iterations each",
        composed.particles.len(),
        composed.text.len(),
        composed.total_tokens
    );
    println!("| target                 | p50 µs | p99 µs | p50 vs base |");
    println!("|:-----------------------|-------:|-------:|------------:|");
    let base_p50 = percentile_us(&count_only, 50.0);
    for (name, samples) in [
        ("count composed text", &count_only),
        ("compose 20 particles", &compose),
    ] {
        let p50 = percentile_us(samples, 50.0);
        println!(
            "| {name:<22} | {p50:>6.1} | {:>6.1} | {:>10.2}x |",
            percentile_us(samples, 99.0),
            p50 / base_p50
        );
    }

    let large = vec![composed.text.as_str(); 80].join("\n\n");
    let started = Instant::now();
    let mut rust_tokens = 0;
    for _ in 0..PASSES {
        rust_tokens = counter.count(&large) as usize;
    }
    let rust_rate = (rust_tokens * PASSES) as f64 / started.elapsed().as_secs_f64();
    println!();
    println!(
        "counting: {rust_tokens} tokens, {} chars, {PASSES} passes",
        large.len()
    );
    println!("| counter                | tokens/s   | vs Python |");
    println!("|:-----------------------|-----------:|----------:|");
    match python_tokens_per_second(&large) {
        Ok((python_tokens, python_rate)) => {
            if python_tokens != rust_tokens {
                bail!("token counts differ: Python {python_tokens}, Rust {rust_tokens}");
            }
            println!("| python tiktoken (base) | {python_rate:>10.0} |     1.00x |");
            println!(
                "| tiktoken-rs            | {rust_rate:>10.0} | {:>8.2}x |",
                rust_rate / python_rate
            );
        }
        Err(reason) => {
            println!("| python tiktoken (base) | skipped: {reason:#} |");
            println!("| tiktoken-rs            | {rust_rate:>10.0} |         – |");
        }
    }
    Ok(())
}
