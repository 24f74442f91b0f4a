//! `tessera-admin knowledge`: re-embedding every ready file with another embedding model
//! into a new generation of the vector index, which the serving processes build in the
//! background (search answers from the generation in use meanwhile), and its progress
//! (decision 0052).

use chrono::Utc;
use clap::Subcommand;
use serde_json::{Value, json};
use tessera_embed_local::LocalEmbeddingModel;
use tessera_knowledge::{GenerationProgress, GenerationStore, IndexGeneration, begin_generation};
use tessera_setup::config::Settings;
use tessera_store::{Database, SqlFileStore};

use crate::Failure;

#[derive(Debug, Subcommand)]
pub(crate) enum KnowledgeCommand {
    /// Re-embed every ready file with another embedded model. A running server takes it up
    /// at its next poll (else at its start) and does it in the background, from the chunks
    /// stored (nothing is extracted again), and search answers from the vectors in use until
    /// every file is done; a server killed midway goes on where it stopped. The new vectors
    /// are searched from each process's next start after that. Asking again for the same
    /// model shows its progress.
    Reindex {
        /// The embedded model (`bge-small-en-v1.5` or `all-MiniLM-L6-v2`); default: the one
        /// `knowledge.embedding_model` names.
        #[arg(long)]
        model: Option<String>,
    },
    /// The generations of the vector index and how far each is.
    Status,
}

fn report_json(generation: &IndexGeneration, progress: GenerationProgress) -> Value {
    json!({
        "generation": generation.number,
        "embeddingModel": generation.embedding_model,
        "state": generation.state.as_str(),
        "createdAt": generation.created_at,
        "activatedAt": generation.activated_at,
        "filesDone": progress.done,
        "filesTotal": progress.total,
    })
}

fn report_line(generation: &IndexGeneration, progress: GenerationProgress) -> String {
    format!(
        "generation {}  {:<8}  {:<18}  {}/{} files",
        generation.number,
        generation.state.as_str(),
        generation.embedding_model,
        progress.done,
        progress.total
    )
}

/// The embedded model `--model` (else `knowledge.embedding_model`) names.
fn target(settings: &Settings, model: Option<String>) -> Result<LocalEmbeddingModel, Failure> {
    let names: Vec<&str> = LocalEmbeddingModel::ALL
        .iter()
        .map(|model| model.name())
        .collect();
    let Some(model) = model.or_else(|| settings.knowledge.embedding_model.clone()) else {
        return Err(Failure(format!(
            "--model: name the model to re-embed with, one of: {}",
            names.join(", ")
        )));
    };
    model
        .parse()
        .map_err(|e: String| Failure(format!("--model: {e}")))
}

pub(crate) async fn run(
    settings: &Settings,
    database: &Database,
    command: KnowledgeCommand,
    json: bool,
) -> Result<String, Failure> {
    let store = SqlFileStore::new(database.clone());
    match command {
        KnowledgeCommand::Reindex { model } => {
            let model = target(settings, model)?;
            // Files processed before models were recorded were made by the hosted model when
            // one is configured, else by the only embedded model of the time.
            let unrecorded = match (
                &settings.knowledge.embedding_base_url,
                &settings.knowledge.embedding_model,
            ) {
                (Some(_), Some(hosted)) => hosted.clone(),
                _ => LocalEmbeddingModel::AllMiniLmL6V2.name().to_owned(),
            };
            let generation =
                begin_generation(&store, &store, model.name(), &unrecorded, Utc::now()).await?;
            let progress = store.progress(generation.number).await?;
            if json {
                return Ok(report_json(&generation, progress).to_string());
            }
            Ok(format!(
                "{}\nthe server re-embeds the files in the background (search answers from \
                 the vectors in use until all are done; the new ones are searched from its next \
                 start after that); follow with `tessera-admin knowledge status`",
                report_line(&generation, progress)
            ))
        }
        KnowledgeCommand::Status => {
            let mut reports = Vec::new();
            for generation in store.generations().await? {
                let progress = store.progress(generation.number).await?;
                reports.push((generation, progress));
            }
            if json {
                let items: Vec<Value> = reports
                    .iter()
                    .map(|(generation, progress)| report_json(generation, *progress))
                    .collect();
                return Ok(json!({ "generations": items }).to_string());
            }
            if reports.is_empty() {
                return Ok(
                    "the index has one generation: the embedding model was never changed".into(),
                );
            }
            Ok(reports
                .iter()
                .map(|(generation, progress)| report_line(generation, *progress))
                .collect::<Vec<_>>()
                .join("\n"))
        }
    }
}
