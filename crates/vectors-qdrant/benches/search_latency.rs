//! Hybrid search latency of the embedded qdrant-edge index at 100 000 chunks, next to an
//! exact brute-force scan of the same dense vectors in plain Rust (the baseline, = 1.00×).
//!
//! 100 000 chunks of 384-dimensional unit vectors (the embedding model's width) and 40-word
//! texts drawn from a 2 000-word vocabulary, in two organizations (90% / 10%) and, in the
//! larger one, two datasets. Each query is a random unit vector plus three vocabulary words,
//! limited to one organization and one dataset, top 10: the engine filters, runs the dense
//! (HNSW) and BM25 rankings and fuses them; the baseline only scans and ranks the dense
//! vectors of the same dataset. Ingestion (upserts of 500 through the port, each flushed)
//! is reported too. Then the service's default search as a caller meets it: the question
//! embedded by the default model (bge-small-en-v1.5 at the default precision, which is 8-bit
//! on CPUs with AVX-512 VNNI or AVX2), then the same hybrid search with that vector; the
//! embedding alone is reported beside it. Those rows need `just models` (the models under
//! `TESSERA_MODELS_DIR`, default `~/.cache/tessera-models`) and are skipped with the reason
//! otherwise. The CPU flags the embedder's kernels are chosen by are printed first.
//! Nothing asserts on timings.
//!
//! Run with `just bench`, or `cargo bench -p tessera-vectors-qdrant --bench search_latency`.

mod support;

use std::time::{Duration, Instant};

use support::models_root;
use tessera_embed_local::{
    LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel, Precision, cpu_flags,
};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    ChunkLocation, DatasetId, Embedder, FileId, IndexedChunk, SearchMode, VectorIndex, VectorQuery,
};
use tessera_vectors_qdrant::EdgeVectorIndex;

/// The index's size and the queries timed; `TESSERA_BENCH_CHUNKS` and `TESSERA_BENCH_QUERIES`
/// change them (a smaller run compares two builds in minutes, not the quarter hour of this one).
const CHUNKS: usize = 100_000;
const DIMENSIONS: usize = 384;
const CHUNKS_PER_FILE: usize = 50;
const BATCH: usize = 500;
const QUERIES: usize = 1_000;
const VOCABULARY: usize = 2_000;
const WORDS_PER_CHUNK: usize = 40;
/// The questions the default search embeds, in turn: a user's question is a sentence.
const QUESTIONS: [&str; 8] = [
    "How long does the warranty last for a refurbished laptop?",
    "Which vitamins help the body absorb calcium from food?",
    "What is the notice period for ending a rental contract early?",
    "how to rotate the signing keys without downtime",
    "Does intermittent fasting lower blood pressure in older adults?",
    "When are invoices due and what happens after a late payment?",
    "steps to reset two-factor authentication on a lost phone",
    "Is the cross-encoder worth its latency on short documents?",
];

/// xorshift64: the same corpus and queries on every run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit_vector(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIMENSIONS)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }

    fn words(&mut self, vocabulary: &[String], count: usize) -> String {
        (0..count)
            .map(|_| vocabulary[self.below(vocabulary.len())].as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn vocabulary() -> Vec<String> {
    let syllables = [
        "ka", "lo", "mi", "ser", "tan", "vu", "ro", "ne", "pi", "dal",
    ];
    (0..VOCABULARY)
        .map(|i| {
            format!(
                "{}{}{}",
                syllables[i % 10],
                syllables[(i / 10) % 10],
                syllables[(i / 100) % 10]
            ) + &(i / 1000).to_string()
        })
        .collect()
}

/// A positive count from the environment, or the default when unset.
fn setting(name: &str, default: usize) -> anyhow::Result<usize> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(value) => match value.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => anyhow::bail!("{name} must be a positive whole number, got {value:?}"),
        },
    }
}

fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e3
}

struct Corpus {
    chunks: Vec<IndexedChunk>,
    big: OrganizationId,
    dataset: DatasetId,
}

fn corpus(random: &mut Random, vocabulary: &[String], size: usize) -> Corpus {
    let big = OrganizationId::generate();
    let small = OrganizationId::generate();
    let (first, second) = (DatasetId::generate(), DatasetId::generate());
    let mut chunks = Vec::with_capacity(size);
    let mut file = FileId::generate();
    for i in 0..size {
        if i % CHUNKS_PER_FILE == 0 {
            file = FileId::generate();
        }
        let (organization, dataset) = match i % 10 {
            0 => (small.clone(), DatasetId::generate()),
            1..=5 => (big.clone(), first.clone()),
            _ => (big.clone(), second.clone()),
        };
        chunks.push(IndexedChunk {
            organization,
            file_id: file.clone(),
            ordinal: (i % CHUNKS_PER_FILE) as u32,
            datasets: vec![dataset],
            text: random.words(vocabulary, WORDS_PER_CHUNK),
            location: ChunkLocation {
                page: None,
                section: None,
                char_start: 0,
                char_end: 300,
            },
            dense: random.unit_vector(),
            late: None,
        });
    }
    Corpus {
        chunks,
        big,
        dataset: first,
    }
}

/// Exact top-10 by dot product over the dataset's vectors.
fn brute_force(vectors: &[&[f32]], query: &[f32]) -> Vec<usize> {
    let mut scored: Vec<(f32, usize)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (v.iter().zip(query).map(|(a, b)| a * b).sum(), i))
        .collect();
    let top = 10.min(scored.len());
    scored.select_nth_unstable_by(top - 1, |a, b| b.0.total_cmp(&a.0));
    scored.truncate(top);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, i)| i).collect()
}

fn report(name: &str, samples: &mut [Duration], baseline_p50: Option<f64>) -> f64 {
    samples.sort();
    let (p50, p99) = (percentile_ms(samples, 50.0), percentile_ms(samples, 99.0));
    let ratio = baseline_p50.map_or_else(|| "1.00×".to_owned(), |b| format!("{:.2}×", p50 / b));
    println!("{name:<44} p50 {p50:>7.2} ms  p99 {p99:>7.2} ms  {ratio:>7} (p50 vs baseline)");
    p50
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    println!("CPU flags: {}", cpu_flags());
    let mut random = Random(0x5EED_1234_ABCD_0001);
    let vocabulary = vocabulary();
    let chunks = setting("TESSERA_BENCH_CHUNKS", CHUNKS)?;
    let queries = setting("TESSERA_BENCH_QUERIES", QUERIES)?;
    let corpus = corpus(&mut random, &vocabulary, chunks);
    let dir = tempfile::tempdir()?;
    let index = EdgeVectorIndex::open(dir.path(), DIMENSIONS).await?;

    let started = Instant::now();
    for batch in corpus.chunks.chunks(BATCH) {
        index.upsert(batch.to_vec()).await?;
    }
    let ingest = started.elapsed();
    println!(
        "ingested {chunks} chunks ({DIMENSIONS} dims + BM25) in {:.1} s: {:.0} chunks/s (upserts of {BATCH}, each flushed)",
        ingest.as_secs_f64(),
        chunks as f64 / ingest.as_secs_f64()
    );

    let count = queries;
    let queries: Vec<(Vec<f32>, String)> = (0..count)
        .map(|_| (random.unit_vector(), random.words(&vocabulary, 3)))
        .collect();
    let in_dataset: Vec<&[f32]> = corpus
        .chunks
        .iter()
        .filter(|c| c.organization == corpus.big && c.datasets[0] == corpus.dataset)
        .map(|c| c.dense.as_slice())
        .collect();
    println!(
        "{count} queries, top 10, within one organization and a dataset of {} chunks",
        in_dataset.len()
    );

    let mut exact = Vec::with_capacity(count);
    for (dense, _) in &queries {
        let started = Instant::now();
        std::hint::black_box(brute_force(&in_dataset, dense));
        exact.push(started.elapsed());
    }
    let baseline = report("exact dense scan in Rust (baseline)", &mut exact, None);

    // Warm the engine's caches before timing.
    for (dense, text) in queries.iter().take(50) {
        index.search(query(&corpus, dense, text)).await?;
    }
    let mut hybrid = Vec::with_capacity(count);
    let mut empty = 0;
    for (dense, text) in &queries {
        let started = Instant::now();
        let hits = index.search(query(&corpus, dense, text)).await?;
        hybrid.push(started.elapsed());
        empty += usize::from(hits.is_empty());
    }
    report(
        "qdrant-edge hybrid (HNSW + BM25, RRF)",
        &mut hybrid,
        Some(baseline),
    );
    if empty > 0 {
        println!("warning: {empty} queries found nothing");
    }
    default_search(&index, &corpus, &queries, baseline).await
}

/// The default search: each question embedded as search embeds a query, then the hybrid
/// search of the row above with that vector (and the same words for BM25).
async fn default_search(
    index: &EdgeVectorIndex,
    corpus: &Corpus,
    queries: &[(Vec<f32>, String)],
    baseline: f64,
) -> anyhow::Result<()> {
    let model = LocalEmbeddingModel::BgeSmallEnV15;
    let root = models_root();
    let Some(dir) = model.find(&root) else {
        println!(
            "default search skipped: no {} under {} (run `just models`)",
            model.name(),
            root.display()
        );
        return Ok(());
    };
    let options = LocalEmbedderOptions {
        model,
        ..LocalEmbedderOptions::default()
    };
    let embedder = LocalEmbedder::load(&dir, options)?;
    for question in QUESTIONS {
        embedder.embed_query(question.to_owned()).await?;
    }
    let mut embedding = Vec::with_capacity(queries.len());
    let mut searches = Vec::with_capacity(queries.len());
    for (i, (_, text)) in queries.iter().enumerate() {
        let started = Instant::now();
        let dense = embedder
            .embed_query(QUESTIONS[i % QUESTIONS.len()].to_owned())
            .await?;
        embedding.push(started.elapsed());
        index.search(query(corpus, &dense, text)).await?;
        searches.push(started.elapsed());
    }
    let kernel = Precision::Auto.kernel_name();
    report(
        &format!("query embedding alone ({}, {kernel})", model.name()),
        &mut embedding,
        Some(baseline),
    );
    report(
        "default search: query embedding + hybrid",
        &mut searches,
        Some(baseline),
    );
    Ok(())
}

fn query(corpus: &Corpus, dense: &[f32], text: &str) -> VectorQuery {
    VectorQuery {
        organization: corpus.big.clone(),
        dataset: Some(corpus.dataset.clone()),
        files: None,
        text: text.to_owned(),
        dense: dense.to_vec(),
        limit: 10,
        mode: SearchMode::Hybrid,
        late: None,
    }
}
