//! Working through batches: a runner claims one under a lease, runs the lines whose
//! answers are not kept yet (a few at a time), keeps each answer as it arrives, and between
//! lines renews its lease and looks for a cancel or the window's end. Then it writes the
//! output and error files and ends the batch. A runner that stops midway loses nothing: the
//! next claim skips the kept lines; an answer from a runner that lost its lease is refused
//! by the store, so no line is counted twice.

use std::{collections::HashSet, sync::Arc};

use chrono::Duration;
use futures_util::{StreamExt, stream};
use serde_json::json;
use tessera_kernel::{Clock, DomainError};

use crate::{
    Batch, BatchEnd, BatchFiles, BatchProblem, BatchStatus, BatchStore, InputLine, LineExecutor,
    LineResult, output::result_files, parse_input,
};

tessera_kernel::entity_id!(
    /// The id of one line's answer in the output file, e.g. `batch_req_0190f5c1…`.
    BatchRequestId,
    "batch_req"
);

/// How a runner works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerSettings {
    /// Lines of one batch running at once.
    pub concurrency: usize,
    /// How long a claim holds a batch without a renewal (each kept answer renews it).
    pub lease: Duration,
}

impl Default for RunnerSettings {
    fn default() -> Self {
        Self {
            concurrency: 1,
            lease: Duration::minutes(10),
        }
    }
}

/// Claims batches and runs them to their end.
pub struct BatchRunner {
    store: Arc<dyn BatchStore>,
    files: Arc<dyn BatchFiles>,
    executor: Arc<dyn LineExecutor>,
    clock: Arc<dyn Clock>,
    /// Who holds the leases this runner takes.
    name: String,
    settings: RunnerSettings,
}

/// Why a batch's lines stopped running.
enum Stop {
    /// Every line has its answer.
    Done,
    Cancelled,
    Expired,
    /// Another runner holds the batch now, or this process cannot run lines any more (it is
    /// shutting down): the next claim carries on.
    Paused,
}

impl BatchRunner {
    pub fn new(
        store: Arc<dyn BatchStore>,
        files: Arc<dyn BatchFiles>,
        executor: Arc<dyn LineExecutor>,
        clock: Arc<dyn Clock>,
        name: String,
        settings: RunnerSettings,
    ) -> Self {
        Self {
            store,
            files,
            executor,
            clock,
            name,
            settings,
        }
    }

    /// Claims one batch and runs it to its end (or until the lease is lost); false when no
    /// batch was waiting.
    pub async fn run_one(&self) -> Result<bool, DomainError> {
        let now = self.clock.now();
        let Some(batch) = self
            .store
            .claim(&self.name, now, now + self.settings.lease)
            .await?
        else {
            return Ok(false);
        };
        tracing::info!(batch = %batch.id, status = batch.status.as_str(), "batch claimed");
        self.work(batch).await?;
        Ok(true)
    }

    async fn work(&self, batch: Batch) -> Result<(), DomainError> {
        let lines = match self.files.input(&batch.owner, &batch.input_file_id).await {
            Ok(content) => parse_input(&content, batch.endpoint).map_err(|mut problems| {
                problems.truncate(1);
                problems.remove(0)
            }),
            Err(error) => Err(BatchProblem {
                code: "input_file_unavailable".into(),
                message: format!("the input file cannot be read any more: {error}"),
                param: Some("input_file_id".into()),
                line: None,
            }),
        };
        let lines = match lines {
            Ok(lines) => lines,
            Err(problem) => {
                let end = BatchEnd {
                    status: BatchStatus::Failed,
                    output_file_id: None,
                    error_file_id: None,
                    errors: vec![problem],
                    at: self.clock.now(),
                };
                self.store.finish(&batch.id, &self.name, &end).await?;
                return Ok(());
            }
        };
        let kept: HashSet<u32> = self
            .store
            .results(&batch.id)
            .await?
            .iter()
            .map(|result| result.line)
            .collect();
        let pending: Vec<InputLine> = lines
            .into_iter()
            .filter(|line| !kept.contains(&line.line))
            .collect();
        let stop = match batch.status {
            BatchStatus::Cancelling => Stop::Cancelled,
            _ if self.clock.now() >= batch.expires_at => Stop::Expired,
            _ => self.run_lines(&batch, &pending).await?,
        };
        let (status, expired) = match stop {
            Stop::Paused => return Ok(()),
            Stop::Done => (BatchStatus::Completed, Vec::new()),
            Stop::Cancelled => (BatchStatus::Cancelled, Vec::new()),
            Stop::Expired => (BatchStatus::Expired, pending),
        };
        if status == BatchStatus::Completed
            && !self
                .store
                .advance(
                    &batch.id,
                    &self.name,
                    BatchStatus::Finalizing,
                    batch.counts.total,
                    self.clock.now(),
                )
                .await?
        {
            // A cancel that came in after the last line still wins; a lost lease is the
            // new holder's to finish.
            let until = self.clock.now() + self.settings.lease;
            return match self.store.renew(&batch.id, &self.name, until).await? {
                Some(BatchStatus::Cancelling) => {
                    self.finalize(&batch, BatchStatus::Cancelled, Vec::new())
                        .await
                }
                _ => Ok(()),
            };
        }
        self.finalize(&batch, status, expired).await
    }

    /// Runs `pending` lines, keeping each answer; why it stopped.
    async fn run_lines(&self, batch: &Batch, pending: &[InputLine]) -> Result<Stop, DomainError> {
        let mut answers = stream::iter(pending.iter().cloned())
            .map(|line| async move {
                let response = self
                    .executor
                    .execute(&batch.owner, batch.endpoint, line.body)
                    .await?;
                Some(LineResult {
                    line: line.line,
                    custom_id: line.custom_id,
                    request_id: BatchRequestId::generate().to_string(),
                    status_code: Some(response.status_code),
                    body: response.body,
                })
            })
            .buffer_unordered(self.settings.concurrency.max(1));
        while let Some(result) = answers.next().await {
            let Some(result) = result else {
                // A lease that ends now: another process (or this one, restarted) carries
                // on without waiting for it to lapse.
                self.store
                    .renew(&batch.id, &self.name, self.clock.now())
                    .await?;
                tracing::info!(batch = %batch.id, "batch paused: its lines cannot run here now");
                return Ok(Stop::Paused);
            };
            if !self.store.record(&batch.id, &self.name, &result).await? {
                return Ok(Stop::Paused);
            }
            let now = self.clock.now();
            match self
                .store
                .renew(&batch.id, &self.name, now + self.settings.lease)
                .await?
            {
                None => return Ok(Stop::Paused),
                Some(BatchStatus::Cancelling) => return Ok(Stop::Cancelled),
                Some(_) if now >= batch.expires_at => return Ok(Stop::Expired),
                Some(_) => {}
            }
        }
        Ok(Stop::Done)
    }

    /// Writes the kept answers (and the lines the window left unrun) to the output and error
    /// files and ends the batch with `status`.
    async fn finalize(
        &self,
        batch: &Batch,
        status: BatchStatus,
        unrun: Vec<InputLine>,
    ) -> Result<(), DomainError> {
        let mut results = self.store.results(&batch.id).await?;
        let kept: HashSet<u32> = results.iter().map(|result| result.line).collect();
        results.extend(
            unrun
                .into_iter()
                .filter(|line| !kept.contains(&line.line))
                .map(|line| LineResult {
                    line: line.line,
                    custom_id: line.custom_id,
                    request_id: BatchRequestId::generate().to_string(),
                    status_code: None,
                    body: json!({
                        "code": "batch_expired",
                        "message": "This request could not be executed before the completion window expired.",
                    }),
                }),
        );
        let (output, errors) = result_files(&results);
        let output_file_id = match output {
            Some(content) => Some(
                self.files
                    .store_output(&batch.owner, &format!("{}_output.jsonl", batch.id), content)
                    .await?,
            ),
            None => None,
        };
        let error_file_id = match errors {
            Some(content) => Some(
                self.files
                    .store_output(&batch.owner, &format!("{}_error.jsonl", batch.id), content)
                    .await?,
            ),
            None => None,
        };
        let end = BatchEnd {
            status,
            output_file_id,
            error_file_id,
            errors: Vec::new(),
            at: self.clock.now(),
        };
        if self.store.finish(&batch.id, &self.name, &end).await? {
            tracing::info!(batch = %batch.id, status = status.as_str(), "batch ended");
        }
        Ok(())
    }
}
