//! The batch domain's bridges: its input and output files are the knowledge domain's
//! files (a batch's input has `purpose` `batch`; its answers are stored with
//! `batch_output`), and its runners start here with the line executor the serving process
//! gives them (the completion and embedding pipelines, called without HTTP).

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use futures_util::TryStreamExt;
use tessera_batches::{
    BatchFiles, BatchRunner, BatchService, InputFileError, LineExecutor, RunnerSettings,
};
use tessera_kernel::{Caller, Clock, DomainError, Principal};
use tessera_knowledge::{FileId, FilePurpose, FileService};
use tessera_setup::config::BatchSettings;
use tessera_store::{Database, SqlBatchStore};

/// A batch's files among the organization's files.
pub struct KnowledgeBatchFiles(pub FileService);

/// The batch's creator, as whom its files are read and written.
fn caller(owner: &Principal) -> Caller {
    Caller::of(owner.clone())
}

#[async_trait]
impl BatchFiles for KnowledgeBatchFiles {
    async fn input(&self, owner: &Principal, file_id: &str) -> Result<Vec<u8>, InputFileError> {
        let Ok(id) = file_id.parse::<FileId>() else {
            return Err(InputFileError::NotFound);
        };
        let (file, content) = match self.0.content(&caller(owner), &id).await {
            Ok(found) => found,
            Err(DomainError::NotFound { .. }) => return Err(InputFileError::NotFound),
            Err(error) => return Err(InputFileError::Other(error)),
        };
        if file.purpose != Some(FilePurpose::Batch) {
            return Err(InputFileError::NotForBatches);
        }
        let pieces: Vec<Vec<u8>> = content.try_collect().await.map_err(|error| {
            InputFileError::Other(DomainError::internal(format!(
                "batch input {file_id}: {error}"
            )))
        })?;
        Ok(pieces.concat())
    }

    async fn store_output(
        &self,
        owner: &Principal,
        name: &str,
        content: Vec<u8>,
    ) -> Result<String, DomainError> {
        let file = self
            .0
            .store_made(&caller(owner), name, FilePurpose::BatchOutput, content)
            .await
            .map_err(|error| DomainError::internal(format!("batch output {name}: {error}")))?;
        Ok(file.id.to_string())
    }
}

/// The batch service over the database and the organization's files.
pub fn service(database: &Database, files: FileService, clock: Arc<dyn Clock>) -> BatchService {
    BatchService::new(
        Arc::new(SqlBatchStore::new(database.clone())),
        Arc::new(KnowledgeBatchFiles(files)),
        clock,
    )
}

/// Starts `settings.runners` batch runners on the current runtime, each answering lines with
/// `executor`; they run until the executor says the process is stopping.
pub fn start_runners(
    settings: &BatchSettings,
    database: &Database,
    files: FileService,
    executor: Arc<dyn LineExecutor>,
    clock: Arc<dyn Clock>,
) {
    let runner_settings = RunnerSettings {
        concurrency: settings.concurrency.max(1),
        lease: chrono::Duration::seconds(i64::try_from(settings.lease_secs).unwrap_or(600)),
    };
    let poll = Duration::from_millis(settings.poll_millis.max(10));
    for _ in 0..settings.runners {
        let runner = BatchRunner::new(
            Arc::new(SqlBatchStore::new(database.clone())),
            Arc::new(KnowledgeBatchFiles(files.clone())),
            executor.clone(),
            clock.clone(),
            format!("batchrun_{}", uuid::Uuid::now_v7().simple()),
            runner_settings,
        );
        let executor = executor.clone();
        tokio::spawn(async move {
            while !executor.stopping() {
                match runner.run_one().await {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(error) => tracing::warn!(%error, "batch runner: will try again"),
                }
                tokio::time::sleep(poll).await;
            }
        });
    }
}
