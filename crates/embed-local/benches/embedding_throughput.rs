//! Embedding throughput of the embedded encoder next to sentence-transformers (PyTorch on
//! the CPU, the reference implementation) on the same weights, the same texts, the same
//! batch size and the same number of threads, in the same run, for each embedded model:
//! all-MiniLM-L6-v2 and bge-small-en-v1.5 (the service's default for a new index).
//!
//! The texts are chunk-sized pieces (about 150 words) of this repository's own Markdown
//! documentation. Each side embeds them once to warm up, then 5 times (`TESSERA_BENCH_PASSES`); texts/s of
//! every pass are printed and the median is compared (sentence-transformers = 1.00×).
//! sentence-transformers reads each model from a Hugging Face checkpoint the crate writes
//! ([`LocalEmbeddingModel::write_checkpoint`]: bge-small's package ships an 8-bit ONNX file,
//! whose weights are dequantized exactly as the encoder loads them), with the model's own
//! token limit and pooling; the cosine of its vectors with Tessera's f32 ones shows both run
//! the same model. Tessera runs in f32 throughout, with its default precision (8-bit dense
//! layers on CPUs with AVX-512 VNNI or AVX2, decision 0021; f32 again elsewhere), and on
//! the AVX2 8-bit kernel forced (`int8-avx2`): on a VNNI machine that row approximates an
//! AVX2-only CPU of the same clock (only the dense layers run the AVX2 build there;
//! attention's f32 products and the softmax keep AVX-512). A precision whose kernel already
//! ran is not run again. `TESSERA_BENCH_PRECISIONS` (comma-separated, e.g. `int8-avx2`)
//! replaces the rows after f32, which runs first: each 8-bit row's vectors are compared
//! with its vectors (`TESSERA_BENCH_F32=0` skips it, to time or profile one kernel alone).
//! `TESSERA_BENCH_MODELS` (comma-separated model names) picks
//! the models. The CPU flags the kernels are chosen by are printed first.
//!
//! Then the cross-encoder (ms-marco-MiniLM-L-12-v2, the service's `rerank: true`) at its
//! default precision, as a search with the reranker pays it: one query's 20 candidates
//! (`RERANKED`; the corpus's texts) scored at a time, over `RERANK_QUERIES` queries, p50 and
//! the slowest in ms; its baseline is the service's default embedding model (bge-small-en-v1.5)
//! embedding the same 20 passages at the same precision in the same run (what ingesting them
//! cost once).
//! `TESSERA_BENCH_RERANK=0` skips it.
//!
//! The models are found under `TESSERA_MODELS_DIR` (default `~/.cache/tessera-models`,
//! filled by `just models`). Python comes from `TESSERA_BENCH_ST_PYTHON` (a venv with
//! `sentence-transformers`, set up by `just bench`); without it that row is skipped with the
//! reason printed. Threads: `RAYON_NUM_THREADS` if set, else every core, for both sides.
//! Nothing asserts on timings. The benchmark uses the allocator of the `tessera-api` binary
//! (mimalloc, decision 0021), as the service does.
//!
//! Run with `just bench`, or `cargo bench -p tessera-embed-local --bench embedding_throughput`.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context, bail};
use tessera_embed_local::{
    LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel, LocalReranker, LocalRerankerOptions,
    Precision, cpu_flags, find_reranker_dir,
};
use tessera_knowledge::{Embedder, Reranker};

/// The allocator of the `tessera-api` binary, which runs this encoder in production.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TEXTS: usize = 512;
const WORDS_PER_TEXT: usize = 150;
const BATCH: usize = 32;
/// Candidates the cross-encoder scores per query (issue 62's latency goal: ≤ 400 ms).
const RERANKED: usize = 20;
/// Queries the cross-encoder's latency is measured over.
const RERANK_QUERIES: usize = 9;
/// The queries, in turn.
const QUESTIONS: [&str; 3] = [
    "How is the embedding model chosen for a knowledge base?",
    "What does the benchmark measure against llama.cpp?",
    "Which errors does the service return for a bad upload?",
];

fn models_root() -> PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/tessera-models")
        },
        PathBuf::from,
    )
}

fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() && !name.starts_with('.') && name != "target" && name != "node_modules" {
            markdown_files(&path, found);
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// `TEXTS` pieces of about `WORDS_PER_TEXT` words of the repository's documentation.
fn corpus() -> anyhow::Result<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    markdown_files(&root.join("docs"), &mut files);
    files.push(root.join("README.md"));
    let mut words = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).with_context(|| file.display().to_string())?;
        words.extend(text.split_whitespace().map(str::to_owned));
    }
    if words.len() < WORDS_PER_TEXT {
        bail!("too little documentation to build the corpus");
    }
    Ok((0..TEXTS)
        .map(|i| {
            let start = (i * WORDS_PER_TEXT) % (words.len() - WORDS_PER_TEXT);
            words[start..start + WORDS_PER_TEXT].join(" ")
        })
        .collect())
}

fn threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Timed passes over the texts after the warm-up (the median is compared).
fn passes() -> usize {
    std::env::var("TESSERA_BENCH_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(5)
}

/// The comma-separated names in the variable `name`, parsed; `default` where it is unset.
fn names_in<T>(name: &str, default: Vec<T>) -> anyhow::Result<Vec<T>>
where
    T: std::str::FromStr<Err = String>,
{
    match std::env::var(name) {
        Ok(list) => list
            .split(',')
            .map(|name| name.trim().parse().map_err(anyhow::Error::msg))
            .collect(),
        Err(_) => Ok(default),
    }
}

/// The models measured, in order.
fn models() -> anyhow::Result<Vec<LocalEmbeddingModel>> {
    names_in("TESSERA_BENCH_MODELS", LocalEmbeddingModel::ALL.to_vec())
}

/// The precisions measured after f32.
fn precisions() -> anyhow::Result<Vec<Precision>> {
    names_in(
        "TESSERA_BENCH_PRECISIONS",
        vec![Precision::Auto, Precision::Int8Avx2],
    )
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Texts/s of each pass, and the vectors of the warm-up pass.
async fn tessera(
    model: LocalEmbeddingModel,
    dir: &Path,
    texts: &[String],
    precision: Precision,
) -> anyhow::Result<(Vec<f64>, Vec<Vec<f32>>)> {
    let embedder = LocalEmbedder::load(
        dir,
        LocalEmbedderOptions {
            model,
            batch_size: BATCH,
            precision,
            ..LocalEmbedderOptions::default()
        },
    )?;
    let vectors = embedder.embed(texts.to_vec()).await?;
    let mut rates = Vec::with_capacity(passes());
    for _ in 0..passes() {
        let started = Instant::now();
        let pass = embedder.embed(texts.to_vec()).await?;
        rates.push(pass.len() as f64 / started.elapsed().as_secs_f64());
    }
    Ok((rates, vectors))
}

const PYTHON: &str = r#"
import json, os, sys, time
os.environ["HF_HUB_OFFLINE"] = "1"
import torch
from sentence_transformers import SentenceTransformer, models
checkpoint, threads, batch, passes, max_tokens, pooling = sys.argv[1:7]
threads, batch, passes, max_tokens = int(threads), int(batch), int(passes), int(max_tokens)
torch.set_num_threads(threads)
texts = json.load(sys.stdin)
encoder = models.Transformer(checkpoint, max_seq_length=max_tokens)
pool = models.Pooling(encoder.get_word_embedding_dimension(), pooling_mode=pooling)
model = SentenceTransformer(modules=[encoder, pool, models.Normalize()], device="cpu")
first = model.encode(texts, batch_size=batch, normalize_embeddings=True)
rates = []
for _ in range(passes):
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=batch, normalize_embeddings=True)
    rates.append(len(vectors) / (time.perf_counter() - started))
print(json.dumps({"rates": rates, "threads": torch.get_num_threads(), "vectors": first.tolist()}))
"#;

/// What sentence-transformers measured: texts/s of each pass, its thread count, and the
/// vectors of its warm-up pass.
struct Baseline {
    rates: Vec<f64>,
    threads: u64,
    vectors: Vec<Vec<f32>>,
}

fn sentence_transformers(
    model: LocalEmbeddingModel,
    checkpoint: &Path,
    texts: &[String],
) -> anyhow::Result<Baseline> {
    let python = std::env::var("TESSERA_BENCH_ST_PYTHON")
        .context("TESSERA_BENCH_ST_PYTHON is not set (`just bench` sets up the venv)")?;
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(PYTHON)
        .arg(checkpoint)
        .arg(threads().to_string())
        .arg(BATCH.to_string())
        .arg(passes().to_string())
        .arg(model.max_tokens().to_string())
        .arg(match model {
            LocalEmbeddingModel::AllMiniLmL6V2 => "mean",
            LocalEmbeddingModel::BgeSmallEnV15 => "cls",
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {python}"))?;
    child
        .stdin
        .take()
        .context("no stdin")?
        .write_all(&serde_json::to_vec(texts)?)?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "sentence-transformers failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let numbers = |value: &serde_json::Value| -> Vec<f64> {
        value
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .filter_map(serde_json::Value::as_f64)
                    .collect()
            })
            .unwrap_or_default()
    };
    let vectors = answer["vectors"]
        .as_array()
        .context("no vectors")?
        .iter()
        .map(|vector| numbers(vector).into_iter().map(|v| v as f32).collect())
        .collect();
    Ok(Baseline {
        rates: numbers(&answer["rates"]),
        threads: answer["threads"].as_u64().unwrap_or(0),
        vectors,
    })
}

/// The cosines of unit vectors, text by text: mean, median and least, printed.
fn print_cosines(what: &str, a: &[Vec<f32>], b: &[Vec<f32>]) {
    let mut cosines: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| f64::from(x * y)).sum())
        .collect();
    let mean = cosines.iter().sum::<f64>() / cosines.len() as f64;
    let min = cosines.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "  cosine with {what}: mean {mean:.5}, median {:.5}, min {min:.5}",
        median(&mut cosines)
    );
}

fn row(name: &str, rates: &mut [f64], baseline: Option<f64>) -> f64 {
    let all: Vec<String> = rates.iter().map(|r| format!("{r:.1}")).collect();
    let median = median(rates);
    let ratio = baseline.map_or_else(|| "1.00×".to_owned(), |b| format!("{:.2}×", median / b));
    println!(
        "{name:<40} {median:>9.1} texts/s  {ratio:>7}   passes: {}",
        all.join(" ")
    );
    median
}

/// One model's rows: sentence-transformers, then Tessera at each precision.
async fn measure(model: LocalEmbeddingModel, root: &Path, texts: &[String]) -> anyhow::Result<()> {
    let name = model.name();
    let dir = model
        .find(root)
        .with_context(|| format!("no {name} under {}: run `just models`", root.display()))?;
    println!(
        "\n{name}: {TEXTS} texts of {WORDS_PER_TEXT} words ({}-token cut, batch {BATCH}), {} threads, median of {} passes",
        model.max_tokens(),
        threads(),
        passes()
    );
    let checkpoint = std::env::temp_dir().join(format!("tessera-bench-checkpoint-{name}"));
    std::fs::create_dir_all(&checkpoint)?;
    model.write_checkpoint(&dir, &checkpoint)?;
    let baseline = match sentence_transformers(model, &checkpoint, texts) {
        Ok(mut baseline) => Some((
            row(
                &format!("sentence-transformers ({} thr)", baseline.threads),
                &mut baseline.rates,
                None,
            ),
            baseline.vectors,
        )),
        Err(error) => {
            println!("sentence-transformers skipped: {error:#}");
            None
        }
    };
    std::fs::remove_dir_all(&checkpoint)?;
    let rate = baseline.as_ref().map(|(rate, _)| *rate);
    // f32 throughout first (the vectors the 8-bit ones are compared with), then the
    // default and the AVX2 kernel forced.
    let mut reference = None;
    if std::env::var("TESSERA_BENCH_F32").as_deref() != Ok("0") {
        let (mut rates, vectors) = tessera(model, &dir, texts, Precision::F32).await?;
        row("tessera-embed-local f32", &mut rates, rate);
        if let Some((_, baseline)) = &baseline {
            print_cosines("sentence-transformers' vectors", &vectors, baseline);
        }
        reference = Some(vectors);
    }
    let mut done = vec![Precision::F32.kernel_name()];
    for precision in precisions()? {
        let kernel = precision.kernel_name();
        if done.contains(&kernel) {
            println!("{precision:?} runs {kernel}, measured above");
            continue;
        }
        done.push(kernel);
        let (mut rates, vectors) = tessera(model, &dir, texts, precision).await?;
        row(&format!("tessera-embed-local {kernel}"), &mut rates, rate);
        if let Some(reference) = &reference {
            print_cosines("the f32 vectors", reference, &vectors);
        }
        if let Some((_, baseline)) = &baseline {
            print_cosines("sentence-transformers' vectors", &vectors, baseline);
        }
    }
    Ok(())
}

/// Milliseconds of each call of `run`, sorted.
async fn timed<F, T>(calls: usize, mut run: impl FnMut(usize) -> F) -> anyhow::Result<Vec<f64>>
where
    F: std::future::Future<Output = anyhow::Result<T>>,
{
    let mut times = Vec::with_capacity(calls);
    for call in 0..calls {
        let started = Instant::now();
        run(call).await?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}

/// The cross-encoder's time for one query's candidates, against embedding them.
async fn rerank_latency(root: &Path, texts: &[String]) -> anyhow::Result<()> {
    let dir = find_reranker_dir(root).with_context(|| {
        format!(
            "no cross-encoder under {}: run `just models`",
            root.display()
        )
    })?;
    let options = LocalRerankerOptions::default();
    println!(
        "\ncross-encoder {}: {RERANKED} candidates of {WORDS_PER_TEXT} words per query ({}-token cut, batch {}), {} threads, {RERANK_QUERIES} queries",
        options.name,
        options.max_tokens,
        options.batch_size,
        threads()
    );
    let reranker = LocalReranker::load(&dir, options)?;
    // The service's default for a new index.
    let model = LocalEmbeddingModel::BgeSmallEnV15;
    let embedder = LocalEmbedder::load(
        &model
            .find(root)
            .with_context(|| format!("no {}: run `just models`", model.name()))?,
        LocalEmbedderOptions {
            model,
            ..LocalEmbedderOptions::default()
        },
    )?;
    let candidates = |call: usize| -> Vec<String> {
        texts
            .iter()
            .cycle()
            .skip(call * RERANKED)
            .take(RERANKED)
            .cloned()
            .collect()
    };
    // Warm-up, then the measured calls.
    reranker.score(QUESTIONS[0], candidates(0)).await?;
    embedder.embed(candidates(0)).await?;
    let embedding = timed(RERANK_QUERIES, |call| {
        let embedder = embedder.clone();
        let passages = candidates(call + 1);
        async move { Ok(embedder.embed(passages).await?) }
    })
    .await?;
    let reranking = timed(RERANK_QUERIES, |call| {
        let reranker = reranker.clone();
        let passages = candidates(call + 1);
        async move {
            Ok(reranker
                .score(QUESTIONS[call % QUESTIONS.len()], passages)
                .await?)
        }
    })
    .await?;
    let p50 = |times: &[f64]| times[times.len() / 2];
    let slowest = |times: &[f64]| times[times.len() - 1];
    println!(
        "{:<40} {:>9.1} ms p50  {:>9.1} ms slowest   1.00×",
        format!("embedding them ({})", model.name()),
        p50(&embedding),
        slowest(&embedding)
    );
    println!(
        "{:<40} {:>9.1} ms p50  {:>9.1} ms slowest  {:>5.2}×",
        "reranking them (the cross-encoder)",
        p50(&reranking),
        slowest(&reranking),
        p50(&reranking) / p50(&embedding)
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let root = models_root();
    let texts = corpus()?;
    println!("CPU flags: {}", cpu_flags());
    for model in models()? {
        measure(model, &root, &texts).await?;
    }
    if std::env::var("TESSERA_BENCH_RERANK").as_deref() != Ok("0") {
        rerank_latency(&root, &texts).await?;
    }
    Ok(())
}
