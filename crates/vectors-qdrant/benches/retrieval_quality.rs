//! Retrieval quality on the small BEIR-format set in `benches/retrieval` (documents cut from
//! this repository's docs, hand-written questions and judgements): nDCG@10 and recall@10 of
//! dense-only, sparse-only (BM25) and hybrid (reciprocal-rank fusion) search, and hybrid
//! with its top candidates reranked by the cross-encoder (ms-marco-MiniLM-L-12-v2), with the
//! real models (from `just models`) and the embedded qdrant-edge index. Documents are cut
//! into passages of at most `PASSAGE_WORDS` words and ranked by their best passage. BM25
//! (sparse-only) is the baseline the other rows are compared with; the reranking's time per
//! query is compared with the hybrid search's (query embedding and index), measured alike.
//!
//! Run with `just bench`, or `cargo bench -p tessera-vectors-qdrant --bench retrieval_quality`.
//! The models run with the service's allocator (mimalloc, decision 0021), as the service
//! runs them: with glibc's, their large activations are page-faulted back on every batch.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use tessera_embed_local::{
    LocalEmbedder, LocalEmbedderOptions, LocalReranker, LocalRerankerOptions, Precision,
    find_model_dir, find_reranker_dir,
};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    ChunkLocation, DatasetId, Embedder, FileId, IndexedChunk, Reranker, ScoredChunk, SearchMode,
    VectorIndex, VectorQuery,
};
use tessera_vectors_qdrant::EdgeVectorIndex;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PASSAGE_WORDS: usize = 120;
const CANDIDATES: usize = 100;
const CUTOFF: usize = 10;
/// Hybrid candidates the cross-encoder reads, per row.
const RERANKED: [usize; 3] = [10, 20, 50];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/retrieval")
}

fn jsonl(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    std::fs::read_to_string(path)
        .with_context(|| path.display().to_string())?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).context("a JSON line"))
        .collect()
}

fn text(value: &serde_json::Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

/// Relevant documents per query.
fn qrels(path: &Path) -> anyhow::Result<HashMap<String, HashSet<String>>> {
    let mut relevant: HashMap<String, HashSet<String>> = HashMap::new();
    for line in std::fs::read_to_string(path)?.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        if let [query, doc, score] = fields.as_slice()
            && score.trim().parse::<u32>().unwrap_or(0) > 0
        {
            relevant
                .entry((*query).to_owned())
                .or_default()
                .insert((*doc).to_owned());
        }
    }
    Ok(relevant)
}

fn ndcg(ranked: &[String], relevant: &HashSet<String>) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(CUTOFF)
        .enumerate()
        .filter(|(_, doc)| relevant.contains(*doc))
        .map(|(rank, _)| 1.0 / (rank as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(CUTOFF))
        .map(|rank| 1.0 / (rank as f64 + 2.0).log2())
        .sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

fn recall(ranked: &[String], relevant: &HashSet<String>) -> f64 {
    let found = ranked
        .iter()
        .take(CUTOFF)
        .filter(|doc| relevant.contains(*doc))
        .count();
    found as f64 / relevant.len().max(1) as f64
}

/// The threads the models' matrix products run on (`CANDLE_NUM_THREADS`, else every core).
fn candle_core_threads() -> usize {
    std::env::var("CANDLE_NUM_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Documents in the order of their best passage.
fn documents_of(hits: &[ScoredChunk], documents: &HashMap<FileId, String>) -> Vec<String> {
    let mut seen = HashSet::new();
    hits.iter()
        .filter_map(|hit| documents.get(&hit.file_id).cloned())
        .filter(|doc| seen.insert(doc.clone()))
        .collect()
}

/// The nearest-rank percentile of some durations, in milliseconds.
fn percentile(times: &[Duration], share: f64) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort();
    let rank = ((share * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let data = data_dir();
    let corpus = jsonl(&data.join("corpus.jsonl"))?;
    let queries = jsonl(&data.join("queries.jsonl"))?;
    let relevant = qrels(&data.join("qrels.tsv"))?;
    let root = std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/tessera-models")
        },
        PathBuf::from,
    );
    let model = find_model_dir(&root).with_context(|| {
        format!(
            "no all-MiniLM-L6-v2 under {}: run `just models`",
            root.display()
        )
    })?;
    let embedder = LocalEmbedder::load(&model, LocalEmbedderOptions::default())?;
    let reranker_dir = find_reranker_dir(&root).with_context(|| {
        format!(
            "no reranking model under {}: run `just models`",
            root.display()
        )
    })?;
    let reranker = LocalReranker::load(&reranker_dir, LocalRerankerOptions::default())?;

    // One file per document, one chunk per passage; the file id maps back to the document.
    let organization = OrganizationId::generate();
    let dataset = DatasetId::generate();
    let mut documents: HashMap<FileId, String> = HashMap::new();
    let mut chunks = Vec::new();
    for document in &corpus {
        let file = FileId::generate();
        documents.insert(file.clone(), text(document, "_id"));
        let body = format!("{}\n{}", text(document, "title"), text(document, "text"));
        let words: Vec<&str> = body.split_whitespace().collect();
        for (ordinal, passage) in words.chunks(PASSAGE_WORDS).enumerate() {
            chunks.push((file.clone(), ordinal as u32, passage.join(" ")));
        }
    }
    let passages = chunks.len();
    let vectors = embedder
        .embed(chunks.iter().map(|(_, _, text)| text.clone()).collect())
        .await?;
    let dir = tempfile::tempdir()?;
    let index = EdgeVectorIndex::open(dir.path(), embedder.dimensions()).await?;
    index
        .upsert(
            chunks
                .into_iter()
                .zip(vectors)
                .map(|((file_id, ordinal, text), dense)| IndexedChunk {
                    organization: organization.clone(),
                    file_id,
                    ordinal,
                    datasets: vec![dataset.clone()],
                    location: ChunkLocation {
                        page: None,
                        section: None,
                        char_start: 0,
                        char_end: text.chars().count() as u64,
                    },
                    text,
                    dense,
                })
                .collect(),
        )
        .await?;
    if queries.is_empty() {
        bail!("no queries");
    }
    println!(
        "{} documents ({} passages of at most {PASSAGE_WORDS} words), {} queries, all-MiniLM-L6-v2 \
         and ms-marco-MiniLM-L-12-v2 in {} on {} threads",
        corpus.len(),
        passages,
        queries.len(),
        Precision::Auto.kernel_name(),
        candle_core_threads()
    );

    let mut rows = Vec::new();
    // Per query: the hybrid search's time, and each reranking's.
    let mut search_times = Vec::new();
    let mut rerank_times: Vec<Vec<Duration>> = vec![Vec::new(); RERANKED.len()];
    let mut reranked_sums = vec![(0.0, 0.0); RERANKED.len()];
    for (name, mode) in [
        ("sparse only (BM25, baseline)", SearchMode::Sparse),
        ("dense only (all-MiniLM-L6-v2)", SearchMode::Dense),
        ("hybrid (RRF of both)", SearchMode::Hybrid),
    ] {
        let (mut ndcg_sum, mut recall_sum) = (0.0, 0.0);
        for query in &queries {
            let id = text(query, "_id");
            let question = text(query, "text");
            let started = Instant::now();
            let dense = embedder.embed(vec![question.clone()]).await?.remove(0);
            let hits = index
                .search(VectorQuery {
                    organization: organization.clone(),
                    dataset: Some(dataset.clone()),
                    files: None,
                    text: question.clone(),
                    dense,
                    limit: CANDIDATES,
                    mode,
                })
                .await?;
            let wanted = relevant.get(&id).cloned().unwrap_or_default();
            let ranked = documents_of(&hits, &documents);
            ndcg_sum += ndcg(&ranked, &wanted);
            recall_sum += recall(&ranked, &wanted);
            if mode != SearchMode::Hybrid {
                continue;
            }
            search_times.push(started.elapsed());
            // The cross-encoder orders the best candidates; the rest keep their fused order.
            for (row, &candidates) in RERANKED.iter().enumerate() {
                let mut top: Vec<ScoredChunk> = hits.iter().take(candidates).cloned().collect();
                let started = Instant::now();
                let scores = reranker
                    .score(&question, top.iter().map(|hit| hit.text.clone()).collect())
                    .await?;
                rerank_times[row].push(started.elapsed());
                for (hit, score) in top.iter_mut().zip(scores) {
                    hit.score = score;
                }
                top.sort_by(|a, b| b.score.total_cmp(&a.score));
                top.extend(hits.iter().skip(candidates).cloned());
                let ranked = documents_of(&top, &documents);
                reranked_sums[row].0 += ndcg(&ranked, &wanted);
                reranked_sums[row].1 += recall(&ranked, &wanted);
            }
        }
        let n = queries.len() as f64;
        rows.push((name.to_owned(), ndcg_sum / n, recall_sum / n));
    }
    let n = queries.len() as f64;
    for (&candidates, (ndcg_sum, recall_sum)) in RERANKED.iter().zip(&reranked_sums) {
        rows.push((
            format!("hybrid + rerank top {candidates}"),
            ndcg_sum / n,
            recall_sum / n,
        ));
    }
    let baseline = rows[0].1;
    for (name, ndcg, recall) in rows {
        println!(
            "{name:<32} nDCG@10 {ndcg:.3}  recall@10 {recall:.3}  {:.2}× the baseline's nDCG",
            ndcg / baseline
        );
    }
    let (search_p50, search_p99) = (
        percentile(&search_times, 0.5),
        percentile(&search_times, 0.99),
    );
    println!(
        "time per query: hybrid search (embedding and index, baseline) p50 {search_p50:.1} ms, p99 {search_p99:.1} ms"
    );
    for (&candidates, times) in RERANKED.iter().zip(&rerank_times) {
        let (p50, p99) = (percentile(times, 0.5), percentile(times, 0.99));
        println!(
            "  reranking {candidates} candidates: p50 {p50:.1} ms ({:.1}×), p99 {p99:.1} ms ({:.1}×)",
            p50 / search_p50,
            p99 / search_p99
        );
    }
    Ok(())
}
