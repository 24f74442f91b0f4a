//! Retrieval quality of every search mode on a BEIR-format set: the small set in
//! `benches/retrieval` (documents cut from this repository's docs, hand-written questions),
//! or a public BEIR set unpacked into `TESSERA_BENCH_BEIR_DIR` (`just bench` unpacks NFCorpus
//! from `../shared/data/beir/` at run time). With the real models (from `just models`) and
//! the embedded qdrant-edge index, for each embedding model: dense only and hybrid
//! (reciprocal-rank fusion with BM25); sparse only (BM25) once; and, on the first embedding
//! model's hybrid candidates, the cross-encoder (ms-marco-MiniLM-L-12-v2) reranking the top
//! 10 and 20, and late interaction (answerai-colbert-small-v1's token vectors cut to the
//! index's 128 values, computed for every passage when it is indexed and stored in the index
//! as a float16 multivector) reranking the top 20 and 40 with the engine's MaxSim, in the
//! index's own query (`VectorQuery::late`). Documents are cut into passages of at most
//! `PASSAGE_WORDS` words and ranked by their best passage.
//!
//! Measures, with trec_eval's definitions: nDCG@10 with graded gains (the judgement's grade,
//! discounted by log2(rank + 1)), recall@10 and recall@50 (of the documents judged
//! relevant). BM25 (sparse only) is the baseline the other rows are compared with; each
//! mode's time per query (query embedding and index, and the reranking) is printed as p50
//! and p99, and the ingestion's passages per second per model (and the index's upserts,
//! and its size on disk); for late interaction also its own cost per query (encoding the
//! query, and the index's reranked search beyond a plain one of the same depth), its
//! passages per second, and its storage per passage (tokens × 128 values × 2 bytes in
//! float16). The CPU's vector extensions are printed with the results.
//!
//! Settings: `TESSERA_BENCH_EMBEDDERS` (comma-separated model names, default
//! `bge-small-en-v1.5,all-MiniLM-L6-v2`), `TESSERA_BENCH_PRECISION` (`auto`, `f32`, `int8`),
//! `TESSERA_BENCH_PASSAGE_WORDS` (default 120).
//! Run with `just bench`, or `cargo bench -p tessera-vectors-qdrant --bench
//! retrieval_quality`. The models run with the service's allocator (mimalloc, decision
//! 0021), as the service runs them.

mod support;

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use support::models_root;
use tessera_embed_local::{
    LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel, LocalLateInteraction,
    LocalLateInteractionModel, LocalLateInteractionOptions, LocalReranker, LocalRerankerOptions,
    Precision, cpu_flags, find_reranker_dir,
};
use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    ChunkLocation, DatasetId, Embedder, FileId, IndexedChunk, LateInteraction, LateRerank,
    Reranker, ScoredChunk, SearchMode, TokenVectors, VectorIndex, VectorQuery,
};
use tessera_vectors_qdrant::{EdgeVectorIndex, LATE_DIMENSIONS};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Words per passage unless `TESSERA_BENCH_PASSAGE_WORDS` says otherwise.
const PASSAGE_WORDS: usize = 120;

fn passage_words() -> usize {
    std::env::var("TESSERA_BENCH_PASSAGE_WORDS")
        .ok()
        .and_then(|words| words.parse().ok())
        .filter(|&words| words > 0)
        .unwrap_or(PASSAGE_WORDS)
}
/// Passages asked of the index: enough for 50 distinct documents.
const CANDIDATES: usize = 150;
/// Hybrid candidates the cross-encoder reads, per row.
const RERANKED: [usize; 2] = [10, 20];
/// Hybrid candidates late interaction reorders, per row.
const LATE_RERANKED: [usize; 2] = [20, 40];
/// Passages upserted at a time.
const INDEX_BATCH: usize = 512;

/// The judged documents of each query, with their grades (> 0).
type Judgements = HashMap<String, HashMap<String, u32>>;

/// A BEIR-format set: corpus, the judged queries, judgements.
struct Collection {
    name: String,
    /// `(id, title and text)`.
    documents: Vec<(String, String)>,
    /// `(id, text)` of the queries that have judgements.
    queries: Vec<(String, String)>,
    judgements: Judgements,
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

/// The first of `names` under `dir` that exists (BEIR sets are packed in two layouts).
fn first_of(dir: &Path, names: &[&str]) -> anyhow::Result<PathBuf> {
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .with_context(|| format!("none of {names:?} under {}", dir.display()))
}

fn judgements(path: &Path) -> anyhow::Result<Judgements> {
    let mut judged: Judgements = HashMap::new();
    for line in std::fs::read_to_string(path)?.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        if let [query, doc, grade] = fields.as_slice()
            && let Ok(grade) = grade.trim().parse::<u32>()
            && grade > 0
        {
            judged
                .entry((*query).to_owned())
                .or_default()
                .insert((*doc).to_owned(), grade);
        }
    }
    Ok(judged)
}

impl Collection {
    fn load(dir: &Path) -> anyhow::Result<Self> {
        // NFCorpus as packed for the benchmark carries `corpus/human.jsonl` (and an LLM
        // rewrite beside it, which is not read).
        let corpus = first_of(dir, &["corpus.jsonl", "corpus/human.jsonl"])?;
        let judgements = judgements(&first_of(dir, &["qrels.tsv", "qrels/test.tsv"])?)?;
        let documents = jsonl(&corpus)?
            .iter()
            .map(|doc| {
                let body = format!("{}\n{}", text(doc, "title"), text(doc, "text"));
                (text(doc, "_id"), body)
            })
            .collect();
        let queries: Vec<(String, String)> = jsonl(&dir.join("queries.jsonl"))?
            .iter()
            .map(|query| (text(query, "_id"), text(query, "text")))
            .filter(|(id, _)| judgements.contains_key(id))
            .collect();
        if queries.is_empty() {
            bail!("no judged queries under {}", dir.display());
        }
        let name = (dir.file_name())
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
        Ok(Self {
            name,
            documents,
            queries,
            judgements,
        })
    }
}

/// nDCG@10 with graded gains, as trec_eval's `ndcg_cut.10`.
fn ndcg(ranked: &[String], judged: &HashMap<String, u32>) -> f64 {
    let discount = |rank: usize| 1.0 / (rank as f64 + 2.0).log2();
    let dcg: f64 = (ranked.iter().take(10).enumerate())
        .map(|(rank, doc)| f64::from(judged.get(doc).copied().unwrap_or(0)) * discount(rank))
        .sum();
    let mut grades: Vec<u32> = judged.values().copied().collect();
    grades.sort_unstable_by(|a, b| b.cmp(a));
    let ideal: f64 = (grades.iter().take(10).enumerate())
        .map(|(rank, &grade)| f64::from(grade) * discount(rank))
        .sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

fn recall(ranked: &[String], judged: &HashMap<String, u32>, cutoff: usize) -> f64 {
    let found = (ranked.iter().take(cutoff))
        .filter(|doc| judged.contains_key(*doc))
        .count();
    found as f64 / judged.len().max(1) as f64
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

/// The sums of one row's measures over the queries, and its times per query.
#[derive(Default)]
struct Row {
    name: String,
    ndcg: f64,
    recall_10: f64,
    recall_50: f64,
    times: Vec<Duration>,
    /// The reranking stage's own time per query (a reranked row's; the rest of `times` is
    /// the hybrid search's).
    stage: Vec<Duration>,
}

impl Row {
    fn named(name: String) -> Self {
        Self {
            name,
            ..Self::default()
        }
    }

    fn add(&mut self, ranked: &[String], judged: &HashMap<String, u32>, time: Duration) {
        self.ndcg += ndcg(ranked, judged);
        self.recall_10 += recall(ranked, judged, 10);
        self.recall_50 += recall(ranked, judged, 50);
        self.times.push(time);
    }

    /// A reranked query: its measures, and the search's and the stage's times.
    fn add_reranked(
        &mut self,
        ranked: &[String],
        judged: &HashMap<String, u32>,
        (searched, stage): (Duration, Duration),
    ) {
        self.add(ranked, judged, searched + stage);
        self.stage.push(stage);
    }
}

/// Loads the late-interaction model, its token vectors cut to the index's width.
fn late_encoder(root: &Path, precision: Precision) -> anyhow::Result<LocalLateInteraction> {
    let model = LocalLateInteractionModel::default();
    let dir = model.find(root).with_context(|| {
        format!(
            "no {model} under {} (package {}): run `just models`",
            root.display(),
            model.package()
        )
    })?;
    let options = LocalLateInteractionOptions {
        model,
        dims: LATE_DIMENSIONS,
        precision,
        ..LocalLateInteractionOptions::default()
    };
    Ok(LocalLateInteraction::load(&dir, options)?)
}

/// The collection's passages embedded by one model, in an index of their own.
struct Indexed {
    embedder: LocalEmbedder,
    index: EdgeVectorIndex,
    organization: OrganizationId,
    dataset: DatasetId,
    documents: HashMap<FileId, String>,
    _dir: tempfile::TempDir,
}

/// The bytes of the files under `dir`.
fn size_on_disk(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => size_on_disk(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Indexes the collection's passages with `embedder`'s vectors and, when `late` is given,
/// their token vectors; prints the rates and the storage. Returns the index, the number of
/// passages and the embedding's time.
async fn index_with(
    collection: &Collection,
    embedder: LocalEmbedder,
    late: Option<&LocalLateInteraction>,
) -> anyhow::Result<(Indexed, usize, Duration)> {
    // One file per document, one chunk per passage; the file id maps back to the document.
    let organization = OrganizationId::generate();
    let dataset = DatasetId::generate();
    let mut documents: HashMap<FileId, String> = HashMap::new();
    let mut chunks = Vec::new();
    for (id, body) in &collection.documents {
        let file = FileId::generate();
        documents.insert(file.clone(), id.clone());
        let words: Vec<&str> = body.split_whitespace().collect();
        for (ordinal, passage) in words.chunks(passage_words()).enumerate() {
            chunks.push((file.clone(), ordinal as u32, passage.join(" ")));
        }
    }
    let passages = chunks.len();
    let texts: Vec<String> = chunks.iter().map(|(_, _, text)| text.clone()).collect();
    let started = Instant::now();
    let vectors = embedder.embed(texts.clone()).await?;
    let embedding = started.elapsed();
    let (token_vectors, encoding): (Vec<Option<TokenVectors>>, Duration) = match late {
        Some(late) => {
            let started = Instant::now();
            let encoded = late.encode_documents(texts).await?;
            (encoded.into_iter().map(Some).collect(), started.elapsed())
        }
        None => (vec![None; passages], Duration::ZERO),
    };
    let lengths: Vec<usize> = (token_vectors.iter().flatten())
        .map(TokenVectors::len)
        .collect();
    let dir = tempfile::tempdir()?;
    let index = EdgeVectorIndex::open(dir.path(), embedder.dimensions()).await?;
    let mut indexed = (chunks.into_iter().zip(vectors).zip(token_vectors))
        .map(|(((file_id, ordinal, text), dense), late)| IndexedChunk {
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
            late,
        })
        .peekable();
    let mut upserting = Duration::ZERO;
    while indexed.peek().is_some() {
        let batch: Vec<IndexedChunk> = indexed.by_ref().take(INDEX_BATCH).collect();
        let started = Instant::now();
        index.upsert(batch).await?;
        upserting += started.elapsed();
    }
    let per_second = |took: Duration| passages as f64 / took.as_secs_f64();
    if let Some(late) = late {
        let model = late.model();
        println!(
            "{model}: {passages} passages encoded in {:.1} s ({:.1} passages/s)",
            encoding.as_secs_f64(),
            per_second(encoding)
        );
        let tokens: usize = lengths.iter().sum();
        let longest = lengths.iter().copied().max().unwrap_or(0);
        let mean = tokens as f64 / passages.max(1) as f64;
        println!(
            "{model}: {mean:.1} tokens per passage on average, {longest} at most; stored as \
             {LATE_DIMENSIONS} values in float16: {:.1} KiB per passage, {:.0} MiB for all",
            mean * LATE_DIMENSIONS as f64 * 2.0 / 1024.0,
            (tokens * LATE_DIMENSIONS * 2) as f64 / 1024.0 / 1024.0
        );
    }
    let bytes = size_on_disk(dir.path());
    println!(
        "index: {passages} passages upserted in {:.1} s ({:.1} passages/s); {:.0} MiB on \
         disk ({:.1} KiB per passage)",
        upserting.as_secs_f64(),
        per_second(upserting),
        bytes as f64 / 1024.0 / 1024.0,
        bytes as f64 / 1024.0 / passages.max(1) as f64
    );
    Ok((
        Indexed {
            embedder,
            index,
            organization,
            dataset,
            documents,
            _dir: dir,
        },
        passages,
        embedding,
    ))
}

impl Indexed {
    async fn search(&self, question: &str, mode: SearchMode) -> anyhow::Result<Vec<ScoredChunk>> {
        let dense = if mode == SearchMode::Sparse {
            Vec::new()
        } else {
            self.embedder.embed_query(question.to_owned()).await?
        };
        self.search_with(question, dense, mode, CANDIDATES, None)
            .await
    }

    /// The index's search alone, with the query's vector given.
    async fn search_with(
        &self,
        question: &str,
        dense: Vec<f32>,
        mode: SearchMode,
        limit: usize,
        late: Option<LateRerank>,
    ) -> anyhow::Result<Vec<ScoredChunk>> {
        Ok(self
            .index
            .search(VectorQuery {
                organization: self.organization.clone(),
                dataset: Some(self.dataset.clone()),
                files: None,
                text: question.to_owned(),
                dense,
                limit,
                mode,
                late,
            })
            .await?)
    }
}

fn embedding_models() -> anyhow::Result<Vec<LocalEmbeddingModel>> {
    let names = std::env::var("TESSERA_BENCH_EMBEDDERS")
        .unwrap_or_else(|_| "bge-small-en-v1.5,all-MiniLM-L6-v2".into());
    names
        .split(',')
        .map(|name| name.parse().map_err(anyhow::Error::msg))
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = std::env::var_os("TESSERA_BENCH_BEIR_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/retrieval"),
        PathBuf::from,
    );
    let collection = Collection::load(&dir)?;
    let precision: Precision = std::env::var("TESSERA_BENCH_PRECISION")
        .unwrap_or_else(|_| "auto".into())
        .parse()
        .map_err(anyhow::Error::msg)?;
    let root = models_root();
    let models = embedding_models()?;
    let reranker_dir = find_reranker_dir(&root).with_context(|| {
        format!(
            "no reranking model under {}: run `just models`",
            root.display()
        )
    })?;
    let reranker = LocalReranker::load(
        &reranker_dir,
        LocalRerankerOptions {
            precision,
            ..LocalRerankerOptions::default()
        },
    )?;
    println!(
        "{}: {} documents, {} judged queries; passages of at most {} words; \
         models in {} on {} threads; CPU flags: {}",
        collection.name,
        collection.documents.len(),
        collection.queries.len(),
        passage_words(),
        precision.kernel_name(),
        candle_core_threads(),
        cpu_flags()
    );

    let mut rows = Vec::new();
    for (position, model) in models.iter().enumerate() {
        let model_dir = model.find(&root).with_context(|| {
            format!(
                "no {model} under {} (package {}): run `just models`",
                root.display(),
                model.package()
            )
        })?;
        let options = LocalEmbedderOptions {
            model: *model,
            precision,
            ..LocalEmbedderOptions::default()
        };
        let embedder = LocalEmbedder::load(&model_dir, options)?;
        let reranks = position == 0;
        // Late interaction on the first model's index: its passages get token vectors.
        let late = if reranks {
            Some(late_encoder(&root, precision)?)
        } else {
            None
        };
        let (indexed, passages, took) = index_with(&collection, embedder, late.as_ref()).await?;
        println!(
            "{model}: {passages} passages embedded in {:.1} s ({:.1} passages/s)",
            took.as_secs_f64(),
            passages as f64 / took.as_secs_f64()
        );
        let mut modes = vec![
            (format!("dense only ({model})"), SearchMode::Dense),
            (format!("hybrid ({model} + BM25, RRF)"), SearchMode::Hybrid),
        ];
        if position == 0 {
            modes.insert(
                0,
                ("sparse only (BM25, baseline)".into(), SearchMode::Sparse),
            );
        }
        let mut reranked: Vec<Row> = RERANKED
            .iter()
            .map(|n| Row::named(format!("hybrid ({model}) + cross-encoder top {n}")))
            .collect();
        let mut late_rows: Vec<Row> = (LATE_RERANKED.iter())
            .map(|depth| {
                Row::named(format!(
                    "hybrid ({model}) + late interaction {LATE_DIMENSIONS}d top {depth}"
                ))
            })
            .collect();
        for (name, mode) in modes {
            let mut row = Row::named(name);
            for (id, question) in &collection.queries {
                let judged = &collection.judgements[id];
                let started = Instant::now();
                let hits = indexed.search(question, mode).await?;
                let searched = started.elapsed();
                row.add(&documents_of(&hits, &indexed.documents), judged, searched);
                if !(reranks && mode == SearchMode::Hybrid) {
                    continue;
                }
                // The cross-encoder orders the best candidates; the rest keep their order.
                for (row, &candidates) in reranked.iter_mut().zip(&RERANKED) {
                    let mut top: Vec<ScoredChunk> = hits.iter().take(candidates).cloned().collect();
                    let started = Instant::now();
                    let scores = reranker
                        .score(question, top.iter().map(|hit| hit.text.clone()).collect())
                        .await?;
                    let reranking = started.elapsed();
                    for (hit, score) in top.iter_mut().zip(scores) {
                        hit.score = score;
                    }
                    top.sort_by(|a, b| b.score.total_cmp(&a.score));
                    top.extend(hits.iter().skip(candidates).cloned());
                    let ranked = documents_of(&top, &indexed.documents);
                    row.add_reranked(&ranked, judged, (searched, reranking));
                }
                let Some(late) = &late else {
                    continue;
                };
                // Late interaction in the index: the query's token vectors against the best
                // candidates' stored ones, by the engine's MaxSim; the rest of the hybrid
                // ranking follows. Its stage: encoding the query, and the reranked search's
                // time beyond a plain one of the same depth.
                let started = Instant::now();
                let tokens = late.encode_query(question.clone()).await?;
                let encoding = started.elapsed();
                let started = Instant::now();
                let dense = indexed.embedder.embed_query(question.clone()).await?;
                let embedding = started.elapsed();
                for (row, &depth) in late_rows.iter_mut().zip(&LATE_RERANKED) {
                    let started = Instant::now();
                    indexed
                        .search_with(question, dense.clone(), SearchMode::Hybrid, depth, None)
                        .await?;
                    let plain = started.elapsed();
                    let rerank = LateRerank {
                        query: tokens.clone(),
                        candidates: depth,
                    };
                    let started = Instant::now();
                    let mut top = indexed
                        .search_with(
                            question,
                            dense.clone(),
                            SearchMode::Hybrid,
                            depth,
                            Some(rerank),
                        )
                        .await?;
                    let searched = started.elapsed();
                    let seen: HashSet<(FileId, u32)> = (top.iter())
                        .map(|hit| (hit.file_id.clone(), hit.ordinal))
                        .collect();
                    top.extend(
                        (hits.iter())
                            .filter(|hit| !seen.contains(&(hit.file_id.clone(), hit.ordinal)))
                            .cloned(),
                    );
                    let ranked = documents_of(&top, &indexed.documents);
                    let stage = encoding + searched.saturating_sub(plain);
                    row.add_reranked(
                        &ranked,
                        judged,
                        (embedding + encoding + searched - stage, stage),
                    );
                }
            }
            rows.push(row);
        }
        if reranks {
            rows.extend(reranked);
            rows.extend(late_rows);
        }
    }

    let n = collection.queries.len() as f64;
    let baseline = rows[0].ndcg / n;
    println!(
        "{:<58} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "mode", "nDCG@10", "×BM25", "R@10", "R@50", "p50 ms", "p99 ms"
    );
    for row in &rows {
        println!(
            "{:<58} {:>8.3} {:>7.2}× {:>8.3} {:>8.3} {:>9.1} {:>9.1}",
            row.name,
            row.ndcg / n,
            row.ndcg / n / baseline,
            row.recall_10 / n,
            row.recall_50 / n,
            percentile(&row.times, 0.5),
            percentile(&row.times, 0.99),
        );
    }
    println!(
        "the reranking stage alone (query encoding and the index's MaxSim beyond its plain \
         search, or the cross-encoder):"
    );
    for row in rows.iter().filter(|row| !row.stage.is_empty()) {
        println!(
            "{:<58} p50 {:>8.2} ms  p99 {:>8.2} ms",
            row.name,
            percentile(&row.stage, 0.5),
            percentile(&row.stage, 0.99),
        );
    }
    Ok(())
}
