//! A knowledge service another team could write: it embeds `tessera-knowledge` (uploads
//! checked while they stream, files and datasets, processing: extract, chunk, embed, index;
//! hybrid search) with Tessera's adapters as a team would pick them — files and datasets in
//! SQL by `tessera-store` with the knowledge part of its schema alone (`Part::Knowledge`),
//! content in a local folder (`tessera-blobs-local`), extraction and chunking by
//! `tessera-documents`, the embedded embedding model (`tessera-embed-local`) and the embedded
//! qdrant-edge index (`tessera-vectors-qdrant`). No HTTP framework, no Tessera app: the
//! wiring is `knowledge.rs`.
//!
//! Usage: `knowledge-service [--models <dir>] [--data <dir>] [--database <url>]
//! --query <text> [--query <text> …] <file>…` (`--models` defaults to
//! `$TESSERA_MODELS_DIR`, `--data` to `knowledge-service-data`, `--database` to a SQLite file
//! in it; `postgres://…` works too). It creates a dataset, uploads the files into it,
//! processes them until each is ready, then prints each query's best passages, best first,
//! with their fused scores. Exits non-zero if a file cannot be processed.

mod knowledge;

use std::{collections::HashSet, path::PathBuf};

use anyhow::{Context, bail};
use futures_util::{StreamExt, stream};
use tessera_kernel::{Caller, OrganizationId};
use tessera_knowledge::{
    DatasetId, FileId, JobOutcome, NewDataset, SearchMode, SearchRequest, Upload,
};
use tessera_store::DatabaseUrl;

use crate::knowledge::{Knowledge, Places};

/// Passages printed per query.
const PASSAGES: usize = 3;

struct Args {
    places: Places,
    queries: Vec<String>,
    files: Vec<PathBuf>,
}

fn args() -> anyhow::Result<Args> {
    let mut models = std::env::var_os("TESSERA_MODELS_DIR").map(PathBuf::from);
    let mut data = PathBuf::from("knowledge-service-data");
    let mut database = None;
    let mut queries = Vec::new();
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--models" => models = Some(args.next().context("--models needs a folder")?.into()),
            "--data" => data = args.next().context("--data needs a folder")?.into(),
            "--database" => database = Some(args.next().context("--database needs a URL")?),
            "--query" => queries.push(args.next().context("--query needs a text")?),
            _ if arg.starts_with("--") => bail!("unknown option {arg}"),
            _ => files.push(PathBuf::from(arg)),
        }
    }
    if queries.is_empty() || files.is_empty() {
        bail!("give at least one --query and one file to search in");
    }
    let database = match database {
        Some(url) => url.parse()?,
        None => DatabaseUrl::Sqlite(data.join("knowledge.sqlite")),
    };
    let models = models
        .context("--models <dir> (or TESSERA_MODELS_DIR) is required (`just models` fills one)")?;
    Ok(Args {
        places: Places {
            database,
            blobs: data.join("blobs"),
            vectors: data.join("vectors"),
            models,
        },
        queries,
        files,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let organization: OrganizationId = "example".parse()?;
    let knowledge = Knowledge::open(&args.places, &organization).await?;
    // This service acts as an operator: audit records name it, files record it as uploader.
    let caller = Caller::operator(organization, "knowledge-service");

    let dataset = knowledge
        .datasets
        .create(
            &caller,
            NewDataset {
                name: "Help centre".into(),
                ..NewDataset::default()
            },
        )
        .await?;
    let uploaded = upload_into(&knowledge, &caller, &dataset.id, &args.files).await?;
    process_all(&knowledge, uploaded).await?;

    for query in &args.queries {
        println!("query: {query}");
        let hits = knowledge
            .datasets
            .search(
                &caller,
                &dataset.id,
                SearchRequest {
                    query: query.clone(),
                    limit: PASSAGES,
                    version: None,
                    files: None,
                    // Dense (meaning) and BM25 (words) rankings, fused by reciprocal rank.
                    mode: SearchMode::Hybrid,
                    rerank: None,
                    late_interaction: None,
                },
            )
            .await?;
        for (rank, hit) in hits.iter().enumerate() {
            println!(
                "{}. {} #{} ({:.4}): {}",
                rank + 1,
                hit.file_name,
                hit.chunk.ordinal,
                hit.chunk.score,
                excerpt(&hit.chunk.text)
            );
        }
    }
    Ok(())
}

/// The passage's first 100 characters on one line.
fn excerpt(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.join(" ").chars().take(100).collect()
}

/// Uploads each file (its content checked as it streams into the blob store; the record
/// answers `processing` at once) and adds it to the dataset.
async fn upload_into(
    knowledge: &Knowledge,
    caller: &Caller,
    dataset: &DatasetId,
    paths: &[PathBuf],
) -> anyhow::Result<HashSet<FileId>> {
    let mut uploaded = HashSet::new();
    for path in paths {
        let content = tokio::fs::read(path)
            .await
            .with_context(|| format!("reading {}", path.display()))?;
        let upload = Upload {
            // The name kept is the path's last component.
            file_name: path.display().to_string(),
            purpose: None,
            content: stream::iter([Ok(content)]).boxed_local(),
        };
        let file = (knowledge.files.upload(caller, upload))
            .await
            .with_context(|| format!("uploading {}", path.display()))?;
        knowledge
            .datasets
            .add_file(caller, dataset, &file.id)
            .await?;
        uploaded.insert(file.id);
    }
    Ok(uploaded)
}

/// Runs the processing worker until the `waiting` files are ready: each round claims the due
/// jobs, reads and chunks the files, embeds the chunks in batches and indexes them. A
/// service would rather run it in the background, woken by uploads (as Tessera's does).
async fn process_all(knowledge: &Knowledge, mut waiting: HashSet<FileId>) -> anyhow::Result<()> {
    while !waiting.is_empty() {
        let outcomes = knowledge.processor.process_next().await?;
        if outcomes.is_empty() {
            // Only a retry waits: its time has not come yet.
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        for (job, outcome) in outcomes {
            let name = &job.file.name;
            match outcome {
                JobOutcome::Ready { chunks } => {
                    let plural = if chunks == 1 { "" } else { "s" };
                    println!("ready: {name} ({chunks} chunk{plural})");
                    waiting.remove(&job.file.id);
                }
                JobOutcome::Retrying { at, reason } => {
                    eprintln!("{name}: retried at {at}: {reason}");
                }
                JobOutcome::Failed { reason } => bail!("{name} could not be processed: {reason}"),
                JobOutcome::LeaseLost => bail!("{name}: another worker took the job over"),
            }
        }
    }
    Ok(())
}
