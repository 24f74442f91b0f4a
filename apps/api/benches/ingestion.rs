//! Ingestion throughput (issue 7): PDFs uploaded through HTTP until every one is `ready`
//! (extraction, chunking, embedding, indexing, in the real application on its embedded
//! defaults: SQLite, qdrant-edge, bge-small-en-v1.5), in pages/s and chunks/s.
//!
//! Baseline, measured in the same run on the same chunks: the embedding model alone
//! (`LocalEmbedder::embed` over the chunk texts the document processor cuts from the same
//! PDFs). Embedding is the costly step, so the ratio end-to-end ÷ embedding-only says how
//! much the pipeline around it (upload, queue, extraction, storage, index) costs; 1.00×
//! would be free.
//!
//! The PDFs (`FILES` of `PAGES` pages, about 300 words a page) are built from this
//! repository's Markdown documentation with the `testing` feature of `tessera-documents`.
//! The model is found under `TESSERA_MODELS_DIR` (default `~/.cache/tessera-models`, filled
//! by `just models`). Threads: candle's default (every core). Nothing asserts on timings; it
//! fails only if a file does not end `ready`.
//!
//! Run with `just bench`, or `cargo bench -p tessera-api --bench ingestion`.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, anyhow, bail};
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use tessera_documents::testing::pdf_bytes;
use tessera_embed_local::LocalEmbeddingModel;
use tessera_knowledge::{DocumentProcessor, FileFormat, ignore_progress};

#[path = "support/mod.rs"]
mod support;

/// The allocator of the `tessera-api` binary (decision 0021), as the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const FILES: usize = 24;
const PAGES: usize = 5;
const WORDS_PER_LINE: usize = 12;
const LINES_PER_PAGE: usize = 25;

fn documentation_words() -> anyhow::Result<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut words = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.push(root.join("README.md"));
    for file in files {
        let text = std::fs::read_to_string(&file).with_context(|| file.display().to_string())?;
        // Only characters the test PDFs' standard font encodes.
        words.extend(
            text.split_whitespace()
                .filter(|w| w.chars().all(|c| c.is_ascii_graphic()))
                .map(str::to_owned),
        );
    }
    let needed = WORDS_PER_LINE * LINES_PER_PAGE;
    if words.len() < needed * 2 {
        bail!("too little documentation to build the PDFs");
    }
    Ok(words)
}

/// `FILES` PDFs, each page a different stretch of the documentation.
fn corpus() -> anyhow::Result<Vec<Vec<u8>>> {
    let words = documentation_words()?;
    let per_page = WORDS_PER_LINE * LINES_PER_PAGE;
    let mut next = 0;
    let mut page = || {
        let start = next % (words.len() - per_page);
        next += per_page + 7;
        words[start..start + per_page]
            .chunks(WORDS_PER_LINE)
            .map(|line| line.join(" "))
            .collect::<Vec<String>>()
    };
    Ok((0..FILES)
        .map(|_| pdf_bytes(&(0..PAGES).map(|_| page()).collect::<Vec<_>>()))
        .collect())
}

/// Seconds the embedding model alone takes over the chunks of `pdfs`, and how many chunks.
async fn embedding_only(models: &Path, pdfs: &[Vec<u8>]) -> anyhow::Result<(f64, usize)> {
    let embedder = support::default_embedder(models).await?;
    let chunker = support::chunker_for(&embedder);
    let mut texts = Vec::new();
    for pdf in pdfs {
        let chunks = chunker
            .chunks(
                FileFormat::Pdf,
                pdf.clone(),
                support::default_chunking(),
                ignore_progress(),
            )
            .await
            .map_err(|e| anyhow!("chunking: {e}"))?;
        texts.extend(chunks.into_iter().map(|chunk| chunk.text));
    }
    let count = texts.len();
    Ok((
        support::embedding_model_alone(&embedder, texts).await?,
        count,
    ))
}

fn main() -> anyhow::Result<()> {
    let data_dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(run(data_dir.path()));
    // The embedded index flushes when the runtime drops the workers that hold it, so its
    // folder must outlive the runtime.
    drop(runtime);
    drop(data_dir);
    result
}

async fn run(data_dir: &std::path::Path) -> anyhow::Result<()> {
    let models = support::models_root();
    if LocalEmbeddingModel::BgeSmallEnV15.find(&models).is_none() {
        eprintln!(
            "skipped: bge-small-en-v1.5 is not under {} (run `just models`)",
            models.display()
        );
        return Ok(());
    }
    let pdfs = corpus()?;

    eprintln!("embedding only: the chunks of {FILES} PDFs of {PAGES} pages");
    let (embed_seconds, chunks) = embedding_only(&models, &pdfs).await?;

    // The real application on its embedded defaults.
    let mut settings = support::settings(data_dir)?;
    settings.knowledge.embedding_model_dir = Some(models.clone());
    settings.knowledge.poll_secs = 1;
    let workers = settings.knowledge.workers;
    let support::RunningApp {
        handle,
        client,
        base,
        token,
    } = support::start(settings, Duration::from_secs(120)).await?;

    eprintln!("end to end: uploading {FILES} PDFs through HTTP ({workers} worker)");
    let started = Instant::now();
    let mut ids = Vec::with_capacity(FILES);
    for (number, pdf) in pdfs.into_iter().enumerate() {
        let form = Form::new().part(
            "file",
            Part::bytes(pdf).file_name(format!("bench-{number}.pdf")),
        );
        let file: Value = client
            .post(format!("{base}/v1/files"))
            .bearer_auth(&token)
            .multipart(form)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        ids.push(
            file["id"]
                .as_str()
                .ok_or_else(|| anyhow!("no id in {file}"))?
                .to_owned(),
        );
    }
    let uploaded = started.elapsed().as_secs_f64();
    let mut indexed_chunks = 0;
    for id in &ids {
        loop {
            let file: Value = client
                .get(format!("{base}/v1/files/{id}"))
                .bearer_auth(&token)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            match file["status"].as_str() {
                Some("processing") => tokio::time::sleep(Duration::from_millis(50)).await,
                Some("ready") => {
                    indexed_chunks += file["chunkCount"].as_u64().unwrap_or(0);
                    break;
                }
                _ => bail!("file {id} did not end ready: {file}"),
            }
        }
    }
    let end_to_end = started.elapsed().as_secs_f64();
    handle.stop(true).await;

    let pages = (FILES * PAGES) as f64;
    let embed_rate = chunks as f64 / embed_seconds;
    let pipeline_rate = indexed_chunks as f64 / end_to_end;
    println!();
    println!(
        "{FILES} PDFs, {} pages, {chunks} chunks ({} indexed); uploads took {uploaded:.2} s",
        FILES * PAGES,
        indexed_chunks
    );
    println!(
        "{:<34} {:>9} {:>10} {:>10} {:>8}",
        "target", "seconds", "pages/s", "chunks/s", "ratio"
    );
    println!(
        "{:<34} {:>9.2} {:>10.2} {:>10.2} {:>7.2}×",
        "embedding only (baseline)",
        embed_seconds,
        pages / embed_seconds,
        embed_rate,
        1.0
    );
    println!(
        "{:<34} {:>9.2} {:>10.2} {:>10.2} {:>7.2}×",
        "upload → ready, end to end",
        end_to_end,
        pages / end_to_end,
        pipeline_rate,
        pipeline_rate / embed_rate
    );
    Ok(())
}
