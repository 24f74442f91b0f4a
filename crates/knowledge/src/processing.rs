//! The processing pipeline a worker runs for each queued file: read the blob, extract and
//! chunk, embed in batches (with their token vectors for late interaction where the
//! deployment computes them, both models at once), index, then mark the file `ready` with
//! its chunks. Content errors fail the file for good; infrastructure errors retry with
//! exponential backoff; a crashed worker's job is taken over when its lease expires.

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, TimeDelta, Utc};
use futures_channel::mpsc::{UnboundedReceiver, unbounded};
use futures_util::StreamExt;
use tessera_kernel::{Clock, DomainError};
use tracing::Instrument;

use crate::{
    BlobStore, ChunkingSettings, ClaimedJob, DocumentError, DocumentProcessor, EmbedError,
    Embedder, ExtractionProgress, FileFailed, FileReady, FileStore, IndexedChunk, LateInteraction,
    ProgressSink, StoredChunk, TokenVectors, VectorIndex,
};

/// How workers process files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessingSettings {
    pub chunking: ChunkingSettings,
    /// How long a claimed job stays a worker's without progress before another takes over.
    pub lease: Duration,
    /// Attempts before a file fails for good on infrastructure errors.
    pub max_attempts: u32,
    /// The first retry's delay; each further retry doubles it (at most 10 minutes).
    pub retry_delay: Duration,
    /// Chunks per embedding call.
    pub embed_batch: usize,
}

impl Default for ProcessingSettings {
    fn default() -> Self {
        Self {
            chunking: ChunkingSettings::default(),
            lease: Duration::from_secs(120),
            max_attempts: 5,
            retry_delay: Duration::from_secs(5),
            embed_batch: 32,
        }
    }
}

/// The parts of the pipeline.
#[derive(Clone)]
pub struct Pipeline {
    pub files: Arc<dyn FileStore>,
    pub blobs: Arc<dyn BlobStore>,
    pub documents: Arc<dyn DocumentProcessor>,
    pub embedder: Arc<dyn Embedder>,
    /// Encodes every chunk's token vectors too, when the deployment offers late
    /// interaction (whichever datasets the file is or will be in: the search decides).
    pub late_interaction: Option<Arc<dyn LateInteraction>>,
    pub index: Arc<dyn VectorIndex>,
    /// The generation of `index` (0 before generations were recorded), recorded with each
    /// ready file: a file processed into an older generation is re-embedded into the new one.
    pub generation: u32,
    pub clock: Arc<dyn Clock>,
}

/// How one job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    Ready {
        chunks: usize,
    },
    Failed {
        reason: String,
    },
    /// To be retried at the given time.
    Retrying {
        at: DateTime<Utc>,
        reason: String,
    },
    /// Another worker took the job over (this one was too slow); nothing was written.
    LeaseLost,
}

/// Why a step failed: for good (the content) or for now (a service).
enum StepError {
    Content(String),
    Transient(String),
    LeaseLost,
}

impl From<DomainError> for StepError {
    fn from(error: DomainError) -> Self {
        Self::Transient(error.to_string())
    }
}

impl From<EmbedError> for StepError {
    fn from(error: EmbedError) -> Self {
        match error {
            EmbedError::Invalid(reason) => Self::Content(reason),
            EmbedError::Unavailable(reason) => Self::Transient(reason),
        }
    }
}

/// One worker of the pipeline.
pub struct Processor {
    pipeline: Pipeline,
    settings: ProcessingSettings,
    worker: String,
}

/// A sink whose reports arrive on the receiver, which ends once the sink is dropped.
fn progress_channel() -> (ProgressSink, UnboundedReceiver<ExtractionProgress>) {
    let (sender, receiver) = unbounded();
    let sink: ProgressSink = Arc::new(move |report| {
        // The receiver lives until the extraction ends; a closed one has nobody to tell.
        let _ = sender.unbounded_send(report);
    });
    (sink, receiver)
}

/// Extraction spans 10 to 30 % of a file's progress.
fn extraction_percent(report: ExtractionProgress) -> u8 {
    let done = u64::from(report.done.min(report.total));
    let share = (done * 20)
        .checked_div(u64::from(report.total))
        .unwrap_or(0);
    10 + u8::try_from(share).unwrap_or(20)
}

fn delta(duration: Duration) -> TimeDelta {
    TimeDelta::from_std(duration).unwrap_or(TimeDelta::MAX)
}

impl Processor {
    /// `worker` names this worker in job leases (unique per process and task).
    pub fn new(
        pipeline: Pipeline,
        settings: ProcessingSettings,
        worker: impl Into<String>,
    ) -> Self {
        Self {
            pipeline,
            settings,
            worker: worker.into(),
        }
    }

    /// Claims and runs the next due job; `None` when none is due.
    pub async fn process_next(&self) -> Result<Option<(ClaimedJob, JobOutcome)>, DomainError> {
        let now = self.pipeline.clock.now();
        let lease_until = now + delta(self.settings.lease);
        let Some(job) = self
            .pipeline
            .files
            .claim_job(&self.worker, now, lease_until)
            .await?
        else {
            return Ok(None);
        };
        let span = tracing::info_span!(
            "process file",
            "file.format" = job.file.format.as_str(),
            "tessera.attempt" = i64::from(job.attempt),
        );
        let outcome = self.run(&job).instrument(span).await?;
        Ok(Some((job, outcome)))
    }

    async fn run(&self, job: &ClaimedJob) -> Result<JobOutcome, DomainError> {
        let files = &self.pipeline.files;
        let id = &job.file.id;
        match self.steps(job).await {
            Ok(chunks) => {
                let count = chunks.len();
                let chunk_count = u32::try_from(count).unwrap_or(u32::MAX);
                let ready = FileReady::of(&job.file, chunk_count, self.pipeline.clock.now());
                let model = self.pipeline.embedder.model();
                if files
                    .complete_job(
                        &self.worker,
                        &chunks,
                        model,
                        self.pipeline.generation,
                        &ready,
                    )
                    .await?
                {
                    Ok(JobOutcome::Ready { chunks: count })
                } else {
                    Ok(JobOutcome::LeaseLost)
                }
            }
            Err(StepError::LeaseLost) => Ok(JobOutcome::LeaseLost),
            Err(StepError::Content(reason)) => self.fail(job, reason).await,
            Err(StepError::Transient(reason)) if job.attempt >= self.settings.max_attempts => {
                let reason = format!(
                    "processing failed {} times; the last error: {reason}",
                    job.attempt
                );
                self.fail(job, reason).await
            }
            Err(StepError::Transient(reason)) => {
                let exponent = job.attempt.saturating_sub(1).min(16);
                let wait = self
                    .settings
                    .retry_delay
                    .saturating_mul(1 << exponent)
                    .min(Duration::from_secs(600));
                let at = self.pipeline.clock.now() + delta(wait);
                if files.retry_job(id, &self.worker, &reason, at).await? {
                    Ok(JobOutcome::Retrying { at, reason })
                } else {
                    Ok(JobOutcome::LeaseLost)
                }
            }
        }
    }

    async fn fail(&self, job: &ClaimedJob, reason: String) -> Result<JobOutcome, DomainError> {
        let failed = FileFailed::of(&job.file, &reason, self.pipeline.clock.now());
        let kept = self.pipeline.files.fail_job(&self.worker, &failed).await?;
        if kept {
            // Whatever an earlier attempt indexed must not stay searchable.
            if let Err(error) = self
                .pipeline
                .index
                .delete_file(&job.file.organization, &job.file.id)
                .await
            {
                tracing::warn!(file = %job.file.id, %error, "index entries of a failed file remain");
            }
            Ok(JobOutcome::Failed { reason })
        } else {
            Ok(JobOutcome::LeaseLost)
        }
    }

    /// Reports progress and extends the lease.
    async fn progress(&self, job: &ClaimedJob, percent: u8) -> Result<(), StepError> {
        let now = self.pipeline.clock.now();
        let kept = self
            .pipeline
            .files
            .report_progress(
                &job.file.id,
                &self.worker,
                percent,
                now,
                now + delta(self.settings.lease),
            )
            .await?;
        if kept {
            Ok(())
        } else {
            Err(StepError::LeaseLost)
        }
    }

    /// Moves the file's progress from 10 to 30 % as extraction reports pages done (OCR), which
    /// also keeps the job's lease while a long document is read. Drains every report, so it
    /// ends when the extraction drops its sink.
    async fn follow_extraction(
        &self,
        job: &ClaimedJob,
        mut reports: UnboundedReceiver<ExtractionProgress>,
    ) -> Result<(), StepError> {
        let mut followed = Ok(());
        while let Some(report) = reports.next().await {
            if followed.is_ok() {
                followed = self.progress(job, extraction_percent(report)).await;
            }
        }
        followed
    }

    async fn steps(&self, job: &ClaimedJob) -> Result<Vec<StoredChunk>, StepError> {
        let file = &job.file;
        let pipeline = &self.pipeline;
        let content = pipeline
            .blobs
            .read(&file.sha256)
            .instrument(tracing::info_span!(
                "read content",
                "file.size" = i64::try_from(file.size).unwrap_or(i64::MAX)
            ))
            .await
            .map_err(|error| StepError::Transient(error.to_string()))?;
        self.progress(job, 10).await?;
        let (sink, reports) = progress_channel();
        let extraction = pipeline
            .documents
            .chunks(file.format, content, self.settings.chunking, sink)
            .instrument(tracing::info_span!(
                "extract and chunk",
                "file.format" = file.format.as_str()
            ));
        let (drafts, followed) =
            futures_util::future::join(extraction, self.follow_extraction(job, reports)).await;
        followed?;
        let drafts = drafts.map_err(|error| match error {
            DocumentError::Corrupt(_)
            | DocumentError::Encrypted
            | DocumentError::Empty
            | DocumentError::TooLarge(_)
            | DocumentError::Unsupported(_) => StepError::Content(error.to_string()),
        })?;
        self.progress(job, 30).await?;
        let datasets = pipeline
            .files
            .datasets_of(&file.organization, &file.id)
            .await?;
        let total = drafts.len().max(1);
        let mut chunks = Vec::with_capacity(drafts.len());
        let batch_size = self.settings.embed_batch.max(1);
        for (batch_index, batch) in drafts.chunks(batch_size).enumerate() {
            let texts: Vec<String> = batch.iter().map(|draft| draft.text.clone()).collect();
            let (vectors, late) = embed_batch(
                pipeline.embedder.as_ref(),
                pipeline.late_interaction.as_deref(),
                texts,
            )
            .await?;
            let first = batch_index * batch_size;
            let indexed: Vec<IndexedChunk> = batch
                .iter()
                .zip(vectors.into_iter().zip(late))
                .enumerate()
                .map(|(offset, (draft, (dense, late)))| IndexedChunk {
                    organization: file.organization.clone(),
                    file_id: file.id.clone(),
                    ordinal: u32::try_from(first + offset).unwrap_or(u32::MAX),
                    datasets: datasets.clone(),
                    text: draft.text.clone(),
                    location: draft.location.clone(),
                    dense,
                    late,
                })
                .collect();
            pipeline
                .index
                .upsert(indexed)
                .instrument(tracing::info_span!(
                    "index",
                    "tessera.chunks" = i64::try_from(batch.len()).unwrap_or(i64::MAX)
                ))
                .await
                .map_err(|error| StepError::Transient(error.to_string()))?;
            for (offset, draft) in batch.iter().enumerate() {
                chunks.push(StoredChunk {
                    ordinal: u32::try_from(first + offset).unwrap_or(u32::MAX),
                    text: draft.text.clone(),
                    token_count: draft.token_count,
                    location: draft.location.clone(),
                });
            }
            let done = (first + batch.len()) * 60 / total;
            self.progress(job, 30 + u8::try_from(done).unwrap_or(60))
                .await?;
        }
        // An association made while this job ran found no index entries to update; write
        // the file's datasets as they are now.
        let now_in = pipeline
            .files
            .datasets_of(&file.organization, &file.id)
            .await?;
        if now_in != datasets {
            pipeline
                .index
                .set_datasets(&file.organization, &file.id, now_in)
                .await
                .map_err(|error| StepError::Transient(error.to_string()))?;
        }
        Ok(chunks)
    }
}

/// A batch's dense vectors and, where the deployment computes them, its token vectors: the
/// two models run on threads of their own, at the same time. An answer without one entry per
/// text is a fault of the model (`Unavailable`: retried).
pub(crate) async fn embed_batch(
    embedder: &dyn Embedder,
    late_interaction: Option<&dyn LateInteraction>,
    texts: Vec<String>,
) -> Result<(Vec<Vec<f32>>, Vec<Option<TokenVectors>>), EmbedError> {
    let count = texts.len();
    let check = |what: &str, got: usize| {
        if got == count {
            Ok(())
        } else {
            Err(EmbedError::Unavailable(format!(
                "the {what} returned {got} results for {count} texts"
            )))
        }
    };
    let late = async {
        let Some(model) = late_interaction else {
            return Ok(vec![None; count]);
        };
        let encoded = model
            .encode_documents(texts.clone())
            .instrument(tracing::info_span!(
                "encode token vectors",
                "tessera.texts" = i64::try_from(count).unwrap_or(i64::MAX),
            ))
            .await?;
        check("late-interaction model", encoded.len())?;
        Ok(encoded.into_iter().map(Some).collect())
    };
    let dense = async {
        let vectors = embedder
            .embed(texts.clone())
            .instrument(tracing::info_span!(
                "embed",
                "gen_ai.operation.name" = "embeddings",
                "tessera.texts" = i64::try_from(count).unwrap_or(i64::MAX),
            ))
            .await?;
        check("embedder", vectors.len())?;
        Ok(vectors)
    };
    futures_util::future::try_join(dense, late).await
}
