//! BEIR NFCorpus through the real service (issue 62): every corpus document uploaded over
//! HTTP as a `.txt` file (title, blank line, text) into one dataset, processed by the
//! application's own workers (chunking, embedding, token vectors, indexing), then every
//! judged test query searched over HTTP in each mode, ranked by document (a document ranks
//! at its best chunk).
//!
//! Measures, with trec_eval's definitions: nDCG@10 with graded gains (the judgement's
//! grade, discounted by log2(rank + 1); the ideal from every judged document of the query),
//! recall@10 and recall@50 (relevant documents retrieved over those judged relevant); each
//! mode's search time through HTTP (p50, p99; the queries run one after another); and the
//! ingestion end to end, first upload to last file `ready` (documents/s, chunks/s).
//!
//! The application runs on its embedded defaults (SQLite, qdrant-edge, bge-small-en-v1.5)
//! with late interaction on (`knowledge.late_interaction`: answerai-colbert-small-v1 token
//! vectors computed for every chunk at ingestion) and the cross-encoder loaded
//! (`knowledge.rerank`, not by default, 20 candidates). The modes: sparse (BM25), dense,
//! hybrid, and hybrid with late interaction, with the cross-encoder, at the search limit
//! each is asked with (the service reorders at least `limit` candidates: late interaction
//! `max(20, limit)`, the cross-encoder `max(20, limit)`; so the rows at limit 20 have the
//! same top 10 as a search at the default limit 10, and their recall@50 counts only the 20
//! chunks returned). A second application on a fresh data folder then ingests the corpus
//! with the default models only (late interaction off, the setting's default), for the
//! issue's ingestion goal; `TESSERA_BENCH_DEFAULT_INGESTION=0` skips it.
//!
//! Settings: `TESSERA_BENCH_BEIR_DIR` (the unpacked set; `just bench` unpacks
//! `../shared/data/beir/nfcorpus.zip` there; without it the benchmark is skipped),
//! `TESSERA_MODELS_DIR` (default `~/.cache/tessera-models`, filled by `just models`),
//! `TESSERA_BENCH_QUERIES` (the first N judged queries, for every mode; default all),
//! `TESSERA_BENCH_DOCUMENTS` (the first N documents only: for timing the ingestion; the
//! quality figures then mean little), `TESSERA_BENCH_SEARCH=0` (the default ingestion only:
//! no late interaction, no searches), `TESSERA_BENCH_WORKERS` (`knowledge.workers`: files
//! processed at once; default the setting's), `CANDLE_NUM_THREADS` (default every core).
//! Nothing asserts on timings; it fails only when a file does not end `ready` or a request
//! fails.
//!
//! Baseline of the ingestion, measured in the same run on the same texts: the embedding
//! model alone (`LocalEmbedder::embed`, batches of 32) over the chunks the document
//! processor cuts from the same files with the same settings.
//!
//! Run with `just bench`, or `TESSERA_BENCH_BEIR_DIR=… cargo bench -p tessera-api --bench
//! nfcorpus_api`.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, anyhow, bail};
use futures_util::{StreamExt, TryStreamExt, stream};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tessera_api::config::Settings;
use tessera_api::config::{EmbeddingPrecision, Switch};
use tessera_documents::DocumentChunker;
use tessera_embed_local::{LocalEmbedder, LocalEmbeddingModel, Precision, cpu_flags};
use tessera_knowledge::{ChunkTokens, DocumentProcessor, Embedder, FileFormat, ignore_progress};

#[path = "support/beir.rs"]
mod beir;
#[path = "support/mod.rs"]
mod support;

use beir::{Collection, ndcg_at_10, percentile, recall};

/// The allocator of the `tessera-api` binary (decision 0021), as the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Uploads in flight at once.
const UPLOADS_IN_FLIGHT: usize = 8;
/// Candidates the cross-encoder reads (`knowledge.rerank_candidates`).
const RERANK_CANDIDATES: usize = 20;
/// Published BM25 nDCG@10 on NFCorpus's test split (BEIR paper, Elasticsearch).
const BM25_ANCHOR: f64 = 0.325;
/// Published bge-small-en-v1.5 nDCG@10 on NFCorpus (MTEB), for orientation.
const BGE_SMALL_ANCHOR: f64 = 0.34;
/// The most characters a search query may have.
const MAX_QUERY_CHARS: usize = 2_000;

/// One search configuration, as a request asks for it.
struct Mode {
    name: &'static str,
    mode: &'static str,
    limit: usize,
    rerank: bool,
    late_interaction: bool,
}

const MODES: [Mode; 6] = [
    Mode {
        name: "sparse (BM25)",
        mode: "sparse",
        limit: 50,
        rerank: false,
        late_interaction: false,
    },
    Mode {
        name: "dense (bge-small-en-v1.5)",
        mode: "dense",
        limit: 50,
        rerank: false,
        late_interaction: false,
    },
    Mode {
        name: "hybrid (RRF)",
        mode: "hybrid",
        limit: 50,
        rerank: false,
        late_interaction: false,
    },
    Mode {
        name: "hybrid + late interaction (top 50)",
        mode: "hybrid",
        limit: 50,
        rerank: false,
        late_interaction: true,
    },
    Mode {
        name: "hybrid + late interaction (top 20)",
        mode: "hybrid",
        limit: 20,
        rerank: false,
        late_interaction: true,
    },
    Mode {
        name: "hybrid + cross-encoder (top 20)",
        mode: "hybrid",
        limit: RERANK_CANDIDATES,
        rerank: true,
        late_interaction: false,
    },
];

/// The sums of one mode's measures over the queries, and its times per search.
#[derive(Default)]
struct Row {
    ndcg: f64,
    recall_10: f64,
    recall_50: f64,
    /// Distinct documents returned, summed over the queries.
    documents: usize,
    times: Vec<Duration>,
}

/// One ingestion through the API.
struct Ingestion {
    documents: usize,
    chunks: u64,
    /// First upload to the last upload (and its association) answered.
    uploads: Duration,
    /// First upload to the last file `ready`.
    total: Duration,
    /// The system's load averages when it ended.
    load: String,
}

impl Ingestion {
    fn print(&self, label: &str) {
        let seconds = self.total.as_secs_f64();
        println!(
            "{label:<50} {:>6} docs {:>6} chunks {:>8.1} s {:>8.2} docs/s {:>8.2} chunks/s \
             (uploads done at {:.1} s; load averages at the end {})",
            self.documents,
            self.chunks,
            seconds,
            self.documents as f64 / seconds,
            self.chunks as f64 / seconds,
            self.uploads.as_secs_f64(),
            self.load
        );
    }
}

/// A request's JSON answer; any status but success is an error naming the body.
async fn answer(request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
    let response = request.send().await?;
    let status = response.status();
    let body = response.text().await?;
    if !status.is_success() {
        bail!("HTTP {status}: {body}");
    }
    Ok(serde_json::from_str(&body)?)
}

fn id_of(value: &Value) -> anyhow::Result<String> {
    value["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no id in {value}"))
}

/// Uploads every document into a new dataset and waits until every file is processed.
/// Returns the dataset's id, the corpus id of each file id, and the ingestion's figures.
async fn ingest(
    app: &support::RunningApp,
    collection: &Collection,
) -> anyhow::Result<(String, HashMap<String, String>, Ingestion)> {
    let support::RunningApp {
        client,
        base,
        token,
        ..
    } = app;
    let dataset = id_of(
        &answer(
            client
                .post(format!("{base}/v1/datasets"))
                .bearer_auth(token)
                .json(&json!({ "name": collection.name })),
        )
        .await?,
    )?;

    let started = Instant::now();
    let uploaded: Vec<(String, String)> = stream::iter(&collection.documents)
        .map(|document| {
            let dataset = &dataset;
            async move {
                let body = format!("{}\n\n{}", document.title, document.text);
                let form = Form::new().part(
                    "file",
                    Part::bytes(body.into_bytes()).file_name(format!("{}.txt", document.id)),
                );
                let file = id_of(
                    &answer(
                        client
                            .post(format!("{base}/v1/files"))
                            .bearer_auth(token)
                            .multipart(form),
                    )
                    .await
                    .with_context(|| format!("uploading {}", document.id))?,
                )?;
                answer(
                    client
                        .post(format!("{base}/v1/files/{file}/associations"))
                        .bearer_auth(token)
                        .json(&json!({ "datasetId": dataset })),
                )
                .await
                .with_context(|| format!("adding {} to the dataset", document.id))?;
                anyhow::Ok((file, document.id.clone()))
            }
        })
        .buffer_unordered(UPLOADS_IN_FLIGHT)
        .try_collect()
        .await?;
    let uploads = started.elapsed();
    eprintln!(
        "{} files uploaded in {:.1} s; processing",
        uploaded.len(),
        uploads.as_secs_f64()
    );

    let mut reported = Instant::now();
    loop {
        let page = answer(
            client
                .get(format!("{base}/v1/files?status=processing&limit=1"))
                .bearer_auth(token),
        )
        .await?;
        if page["items"].as_array().is_none_or(Vec::is_empty) {
            break;
        }
        if reported.elapsed() >= Duration::from_secs(30) {
            reported = Instant::now();
            let left = page["totalCount"]
                .as_u64()
                .map_or_else(|| "some".to_owned(), |n| n.to_string());
            eprintln!(
                "  {:.0} s: {left} files still processing",
                started.elapsed().as_secs_f64()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let total = started.elapsed();
    eprintln!("every file processed in {:.1} s", total.as_secs_f64());

    // Every file of the organization (only this benchmark's): each must be ready.
    let mut chunks = 0;
    let mut ready = HashSet::new();
    let mut failed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{base}/v1/files?limit=100");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let page = answer(client.get(url).bearer_auth(token)).await?;
        for file in page["items"].as_array().into_iter().flatten() {
            match file["status"].as_str() {
                Some("ready") => {
                    chunks += file["chunkCount"].as_u64().unwrap_or(0);
                    ready.insert(id_of(file)?);
                }
                _ => failed.push(format!(
                    "{} ({}): {}",
                    file["name"], file["status"], file["error"]
                )),
            }
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() || page["hasMore"] == Value::Bool(false) {
            break;
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} files did not end ready: {}",
            failed.len(),
            failed.join("; ")
        );
    }
    if let Some((file, document)) = uploaded.iter().find(|(file, _)| !ready.contains(file)) {
        bail!("file {file} ({document}) is not in the list of ready files");
    }
    Ok((
        dataset,
        uploaded.into_iter().collect(),
        Ingestion {
            documents: collection.documents.len(),
            chunks,
            uploads,
            total,
            load: load_average(),
        },
    ))
}

/// Searches every query in `mode`, one after another, and sums the measures.
async fn measure(
    app: &support::RunningApp,
    dataset: &str,
    documents: &HashMap<String, String>,
    collection: &Collection,
    queries: &[(String, String)],
    mode: &Mode,
) -> anyhow::Result<Row> {
    let search = |query: &str| {
        let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
        app.client
            .post(format!("{}/v1/datasets/{dataset}/search", app.base))
            .bearer_auth(&app.token)
            .json(&json!({
                "query": query,
                "limit": mode.limit,
                "mode": mode.mode,
                "rerank": mode.rerank,
                "lateInteraction": mode.late_interaction,
            }))
    };
    // One search first, not counted: the first of a mode loads what it needs.
    if let Some((_, question)) = queries.first() {
        answer(search(question)).await.context(mode.name)?;
    }
    let mut row = Row::default();
    for (id, question) in queries {
        let started = Instant::now();
        let found = answer(search(question))
            .await
            .with_context(|| format!("{}: query {id}", mode.name))?;
        row.times.push(started.elapsed());
        let mut seen = HashSet::new();
        let mut ranked = Vec::new();
        for hit in found["items"].as_array().into_iter().flatten() {
            let file = hit["fileId"]
                .as_str()
                .ok_or_else(|| anyhow!("no fileId in {hit}"))?;
            let document = documents
                .get(file)
                .ok_or_else(|| anyhow!("a hit of an unknown file {file}"))?;
            if seen.insert(document) {
                ranked.push(document.clone());
            }
        }
        let judged = &collection.judgements[id];
        row.ndcg += ndcg_at_10(&ranked, judged);
        row.recall_10 += recall(&ranked, judged, 10);
        row.recall_50 += recall(&ranked, judged, 50);
        row.documents += ranked.len();
    }
    Ok(row)
}

/// The application's settings for this benchmark: the embedded defaults with the models
/// under `models`, the cross-encoder loaded, late interaction as `late_interaction` says.
fn settings(
    data_dir: &Path,
    models: &Path,
    late_interaction: Switch,
) -> anyhow::Result<tessera_api::config::Settings> {
    let mut settings = support::settings(data_dir)?;
    let knowledge = &mut settings.knowledge;
    knowledge.embedding_model_dir = Some(models.to_path_buf());
    knowledge.rerank_model_dir = Some(models.to_path_buf());
    knowledge.rerank = Switch::On;
    knowledge.rerank_by_default = false;
    knowledge.rerank_candidates = RERANK_CANDIDATES;
    knowledge.late_interaction = late_interaction;
    knowledge.poll_secs = 1;
    if let Some(workers) = env_number("TESSERA_BENCH_WORKERS") {
        knowledge.workers = workers.max(1);
    }
    Ok(settings)
}

/// Runs `body` on a runtime of its own with a fresh data folder, which outlives the
/// runtime: the embedded index flushes when the runtime drops the workers that hold it.
fn on_fresh_runtime<T>(body: impl AsyncFnOnce(&Path) -> anyhow::Result<T>) -> anyhow::Result<T> {
    let data_dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(body(data_dir.path()));
    drop(runtime);
    drop(data_dir);
    result
}

/// The system's load averages (1, 5, 15 minutes), to tell a run that shared the machine.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

fn candle_threads() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match std::env::var("CANDLE_NUM_THREADS") {
        Ok(threads) => format!("CANDLE_NUM_THREADS={threads} ({cores} cores)"),
        Err(_) => format!("CANDLE_NUM_THREADS unset: every core ({cores})"),
    }
}

/// A whole-number setting of this benchmark from the environment.
fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|n| n.parse().ok())
}

/// The default embedding model alone over the chunks the service cuts from `documents` (as
/// uploaded: title, blank line, text): its seconds over all of them at once (batches of 32,
/// longest first: the model's best), its seconds one file's chunks per call (as the service
/// embeds them), the seconds the document processor takes to cut them, and how many chunks.
struct ModelAlone {
    chunking: f64,
    /// The same cutting with every candidate counted by the tokenizer whole (the counting
    /// before word counts were remembered): the chunker's baseline in the same run.
    chunking_whole_texts: f64,
    all_at_once: f64,
    per_file: f64,
    chunks: usize,
}

/// Every document's chunk texts as the service cuts them (title, blank line, text).
async fn cut(
    chunker: &DocumentChunker,
    collection: &Collection,
) -> anyhow::Result<Vec<Vec<String>>> {
    let mut files = Vec::new();
    for document in &collection.documents {
        let body = format!("{}\n\n{}", document.title, document.text);
        let chunks = chunker
            .chunks(
                FileFormat::Txt,
                body.into_bytes(),
                support::default_chunking(),
                ignore_progress(),
            )
            .await
            .map_err(|e| anyhow!("chunking {}: {e}", document.id))?;
        files.push(chunks.into_iter().map(|chunk| chunk.text).collect());
    }
    Ok(files)
}

/// The default model's word pieces counted by encoding each text whole with its tokenizer.
#[derive(Debug)]
struct WholeTexts {
    tokenizer: tokenizers::Tokenizer,
    window: usize,
}

impl WholeTexts {
    fn of_default_model(models: &Path, embedder: &LocalEmbedder) -> anyhow::Result<Self> {
        let dir = LocalEmbeddingModel::BgeSmallEnV15
            .find(models)
            .context("bge-small-en-v1.5 is not fetched")?;
        let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| anyhow!("the tokenizer: {e}"))?;
        tokenizer
            .with_truncation(None)
            .map_err(|e| anyhow!("the tokenizer: {e}"))?;
        tokenizer.with_padding(None);
        let window = embedder
            .chunk_tokens()
            .context("the embedded model counts its tokens")?
            .window();
        Ok(Self { tokenizer, window })
    }
}

impl ChunkTokens for WholeTexts {
    fn count(&self, text: &str) -> usize {
        self.tokenizer
            .encode_fast(text, false)
            .map_or(text.len(), |encoding| encoding.len())
    }

    fn window(&self) -> usize {
        self.window
    }
}

async fn embedding_only(models: &Path, collection: &Collection) -> anyhow::Result<ModelAlone> {
    let embedder = support::default_embedder(models).await?;
    let started = Instant::now();
    let files = cut(&support::chunker_for(&embedder), collection).await?;
    let chunking = started.elapsed().as_secs_f64();
    let whole_texts = WholeTexts::of_default_model(models, &embedder)?;
    let started = Instant::now();
    let baseline = cut(
        &DocumentChunker::default().with_chunk_tokens(Arc::new(whole_texts)),
        collection,
    )
    .await?;
    let chunking_whole_texts = started.elapsed().as_secs_f64();
    if baseline != files {
        bail!("counting words one by one cut other chunks than counting whole texts");
    }
    let texts: Vec<String> = files.iter().flatten().cloned().collect();
    let chunks = texts.len();
    let all_at_once = support::embedding_model_alone(&embedder, texts).await?;
    let started = Instant::now();
    for file in files {
        embedder.embed(file).await?;
    }
    Ok(ModelAlone {
        chunking,
        chunking_whole_texts,
        all_at_once,
        per_file: started.elapsed().as_secs_f64(),
        chunks,
    })
}

fn main() -> anyhow::Result<()> {
    let Some(dir) = std::env::var_os("TESSERA_BENCH_BEIR_DIR").map(PathBuf::from) else {
        eprintln!(
            "skipped: TESSERA_BENCH_BEIR_DIR is not set (unpack ../shared/data/beir/nfcorpus.zip \
             and point it at the folder; `just bench` does)"
        );
        return Ok(());
    };
    let mut collection = Collection::load(&dir)?;
    if let Some(cap) = env_number("TESSERA_BENCH_DOCUMENTS") {
        collection.documents.truncate(cap.max(1));
    }
    let search = std::env::var("TESSERA_BENCH_SEARCH").as_deref() != Ok("0");
    let mut queries = collection.queries.clone();
    if let Some(cap) = std::env::var("TESSERA_BENCH_QUERIES")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
    {
        queries.truncate(cap.max(1));
    }
    let models = support::models_root();
    let precision = default_precision();
    println!(
        "{}: {} documents, {} judged queries searched (of {}); through the API of a {} build; \
         models in {} ({}); knowledge.workers {}; CPU flags: {}; load averages {}",
        collection.name,
        collection.documents.len(),
        queries.len(),
        collection.queries.len(),
        if cfg!(debug_assertions) {
            "dev-profile (Tessera's own crates unoptimised; dependencies and the model crates \
             optimised)"
        } else {
            "optimised"
        },
        precision,
        candle_threads(),
        env_number("TESSERA_BENCH_WORKERS").unwrap_or(Settings::default().knowledge.workers),
        cpu_flags(),
        load_average()
    );

    // Late interaction on: ingestion with token vectors, then every mode's searches.
    let searched = search.then(|| on_fresh_runtime(async |data_dir| {
        let app = support::start(
            settings(data_dir, &models, Switch::On)?,
            Duration::from_secs(300),
        )
        .await?;
        eprintln!(
            "ingesting {} documents with late interaction on ({UPLOADS_IN_FLIGHT} uploads in \
             flight)",
            collection.documents.len()
        );
        let (dataset, documents, ingested) = ingest(&app, &collection).await?;
        let mut rows = Vec::with_capacity(MODES.len());
        for mode in &MODES {
            eprintln!("searching: {}", mode.name);
            rows.push(measure(&app, &dataset, &documents, &collection, &queries, mode).await?);
        }
        let searched_load = load_average();
        app.handle.stop(true).await;
        anyhow::Ok((ingested, rows, searched_load))
    })).transpose()?;

    // The default models only, on a fresh data folder.
    let default_ingestion =
        if std::env::var("TESSERA_BENCH_DEFAULT_INGESTION").as_deref() == Ok("0") {
            None
        } else {
            Some(on_fresh_runtime(async |data_dir| {
                let app = support::start(
                    settings(data_dir, &models, Switch::Off)?,
                    Duration::from_secs(300),
                )
                .await?;
                eprintln!("ingesting with the default models (late interaction off)");
                let (_, _, ingested) = ingest(&app, &collection).await?;
                app.handle.stop(true).await;
                eprintln!("the embedding model alone over the same chunks (the baseline)");
                let alone = embedding_only(&models, &collection).await?;
                anyhow::Ok((ingested, alone))
            })?)
        };

    if let Some((ingested, rows, searched_load)) = &searched {
        print_searches(&collection, &queries, rows, searched_load);
        ingested.print("ingestion, late interaction on");
    }
    if let Some((ingested, alone)) = default_ingestion {
        ingested.print("ingestion, default models (late interaction off)");
        for (label, seconds) in [
            ("baseline: the embedding model alone", alone.all_at_once),
            (
                "the model alone, one file's chunks per call",
                alone.per_file,
            ),
            (
                "the document processor alone (cutting chunks)",
                alone.chunking,
            ),
            (
                "cutting chunks, every candidate encoded whole",
                alone.chunking_whole_texts,
            ),
        ] {
            println!(
                "{label:<50} {:>6} docs {:>6} chunks {seconds:>8.1} s {:>8.2} docs/s {:>8.2} \
                 chunks/s: the ingestion end to end took {:.2}× this",
                collection.documents.len(),
                alone.chunks,
                collection.documents.len() as f64 / seconds,
                alone.chunks as f64 / seconds,
                ingested.total.as_secs_f64() / seconds,
            );
        }
    }
    Ok(())
}

/// Prints each search mode's row.
fn print_searches(
    collection: &Collection,
    queries: &[(String, String)],
    rows: &[Row],
    searched_load: &str,
) {
    let n = queries.len() as f64;
    let nfcorpus = collection.name.to_lowercase().contains("nfcorpus");
    // Against the published BM25 on NFCorpus; on another set, against the measured sparse row.
    let (anchor, anchor_name) = if nfcorpus {
        (BM25_ANCHOR, format!("×{BM25_ANCHOR}"))
    } else {
        (rows[0].ndcg / n, "×sparse".to_owned())
    };
    println!();
    println!(
        "{:<38} {:>5} {:>8} {:>7} {:>7} {:>7} {:>6} {:>8} {:>8}",
        "mode", "limit", "nDCG@10", anchor_name, "R@10", "R@50", "docs", "p50 ms", "p99 ms"
    );
    for (mode, row) in MODES.iter().zip(rows) {
        println!(
            "{:<38} {:>5} {:>8.3} {:>6.2}× {:>7.3} {:>7.3} {:>6.1} {:>8.1} {:>8.1}",
            mode.name,
            mode.limit,
            row.ndcg / n,
            row.ndcg / n / anchor,
            row.recall_10 / n,
            row.recall_50 / n,
            row.documents as f64 / n,
            percentile(&row.times, 0.5),
            percentile(&row.times, 0.99),
        );
    }
    if nfcorpus {
        println!(
            "published anchors (NFCorpus test, nDCG@10): BM25 {BM25_ANCHOR} (BEIR paper), \
             bge-small-en-v1.5 about {BGE_SMALL_ANCHOR} (MTEB)"
        );
    }
    println!(
        "docs: distinct documents per query in the `limit` chunks returned; R@50 counts only \
         those (a limit-20 row returns 20 chunks). Late interaction reorders max(20, limit) \
         hybrid candidates, the cross-encoder reads {RERANK_CANDIDATES}; times are whole HTTP \
         searches, one at a time; load averages after them: {searched_load}."
    );
    println!();
}

/// The embedded models' arithmetic under the default settings, named with its kernel.
fn default_precision() -> String {
    let setting = Settings::default().knowledge.embedding_precision;
    let precision = match setting {
        EmbeddingPrecision::Auto => Precision::Auto,
        EmbeddingPrecision::F32 => Precision::F32,
        EmbeddingPrecision::Int8 => Precision::Int8,
    };
    format!("{setting:?}: {}", precision.kernel_name())
}
