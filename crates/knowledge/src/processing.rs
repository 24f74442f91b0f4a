//! The processing pipeline a worker runs for queued files: read the blob, extract and
//! chunk, embed in batches (with their token vectors for late interaction where the
//! deployment computes them, both models at once), index, then mark the file `ready` with
//! its chunks. Small text files are taken a round at a time, as many as fill one embedding
//! batch, so that they share forward passes and index writes (each write is flushed to disk,
//! and a file of a few chunks alone paid a whole flush and a small batch). Content errors
//! fail the file for good; infrastructure errors retry with exponential backoff; a crashed
//! worker's job is taken over when its lease expires.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use chrono::{DateTime, TimeDelta, Utc};
use futures_channel::mpsc::{UnboundedReceiver, unbounded};
use futures_util::StreamExt;
use tessera_kernel::{Clock, DomainError};
use tracing::Instrument;

use crate::{
    BlobStore, ChunkDraft, ChunkingSettings, ClaimedJob, DatasetId, DocumentError,
    DocumentProcessor, EmbedError, Embedder, ExtractionProgress, FileFailed, FileFormat, FileReady,
    FileStore, IndexedChunk, LateInteraction, ProgressSink, StoredChunk, StoredFile, TokenVectors,
    VectorIndex,
};

/// How workers process files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessingSettings {
    /// How files are cut, unless a file carries sizes of its own ([`StoredFile::chunking`]).
    pub chunking: ChunkingSettings,
    /// How long a claimed job stays a worker's without progress before another takes over.
    pub lease: Duration,
    /// Attempts before a file fails for good on infrastructure errors.
    pub max_attempts: u32,
    /// The first retry's delay; each further retry doubles it (at most 10 minutes).
    pub retry_delay: Duration,
    /// Chunks per embedding call, and what a round of small files fills.
    pub embed_batch: usize,
}

/// The largest file a round shares with others: a text format read at once (no OCR, no
/// conversion), so no file of the round waits long, its lease running, for another's
/// extraction.
const SHARED_ROUND_BYTES: u64 = 1 << 20;

/// Whether `file` may share a round with other files.
fn shares_rounds(file: &StoredFile) -> bool {
    matches!(
        file.format,
        FileFormat::Txt | FileFormat::Md | FileFormat::Csv | FileFormat::Json
    ) && file.size <= SHARED_ROUND_BYTES
}

/// A claimed file read and cut, its chunks waiting for their embedding batches.
struct Prepared {
    job: ClaimedJob,
    drafts: Vec<ChunkDraft>,
    /// The file's datasets when it was cut (each chunk's index entry names them).
    datasets: Vec<DatasetId>,
    /// Its chunks indexed so far.
    indexed: usize,
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
#[derive(Clone)]
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

    /// Claims and runs the next round of due jobs: small text files until their chunks fill
    /// one embedding batch, or one file of another kind (such a file claimed after the
    /// round's first runs alone right after the round). Empty when none is due. An error of
    /// the queue itself ends the round; the jobs it leaves unsettled are taken over when
    /// their leases expire.
    pub async fn process_next(&self) -> Result<Vec<(ClaimedJob, JobOutcome)>, DomainError> {
        let mut outcomes = Vec::new();
        let mut round = Vec::new();
        let mut chunks = 0;
        let mut alone = None;
        while chunks < self.batch_size() {
            let Some(job) = self.claim().await? else {
                break;
            };
            let shares = shares_rounds(&job.file);
            if !shares && !round.is_empty() {
                alone = Some(job);
                break;
            }
            if let Some(prepared) = self.prepare(job, &mut outcomes).await? {
                chunks += prepared.drafts.len();
                round.push(prepared);
            }
            if !shares {
                break;
            }
        }
        self.index_round(round, &mut outcomes).await?;
        if let Some(job) = alone
            && let Some(prepared) = self.prepare(job, &mut outcomes).await?
        {
            self.index_round(vec![prepared], &mut outcomes).await?;
        }
        Ok(outcomes)
    }

    fn batch_size(&self) -> usize {
        self.settings.embed_batch.max(1)
    }

    async fn claim(&self) -> Result<Option<ClaimedJob>, DomainError> {
        let now = self.pipeline.clock.now();
        let lease_until = now + delta(self.settings.lease);
        self.pipeline
            .files
            .claim_job(&self.worker, now, lease_until)
            .await
    }

    /// Reads and cuts a claimed file. One that cannot be is settled at once (its outcome
    /// pushed), and `None` returned.
    async fn prepare(
        &self,
        job: ClaimedJob,
        outcomes: &mut Vec<(ClaimedJob, JobOutcome)>,
    ) -> Result<Option<Prepared>, DomainError> {
        let span = tracing::info_span!(
            "process file",
            "file.format" = job.file.format.as_str(),
            "tessera.attempt" = i64::from(job.attempt),
        );
        match self.read_and_cut(&job).instrument(span).await {
            Ok((drafts, datasets)) => Ok(Some(Prepared {
                job,
                drafts,
                datasets,
                indexed: 0,
            })),
            Err(error) => {
                let outcome = self.settle(&job, error).await?;
                outcomes.push((job, outcome));
                Ok(None)
            }
        }
    }

    /// Embeds and indexes the round's chunks in batches (one batch may hold several files'
    /// chunks), completing each file as soon as the batch with its last chunk is written.
    async fn index_round(
        &self,
        round: Vec<Prepared>,
        outcomes: &mut Vec<(ClaimedJob, JobOutcome)>,
    ) -> Result<(), DomainError> {
        let mut waiting = VecDeque::from(round);
        while !waiting.is_empty() {
            let taken = self.next_batch(&waiting);
            let members = taken.len();
            let written = self
                .index_batch(&waiting, &taken)
                .instrument(tracing::info_span!(
                    "process files",
                    "tessera.files" = i64::try_from(members).unwrap_or(i64::MAX)
                ))
                .await;
            match written {
                Ok(()) => {
                    for (file, count) in waiting.iter_mut().zip(&taken) {
                        file.indexed += count;
                    }
                    for _ in 0..members {
                        let Some(file) = waiting.pop_front() else {
                            break;
                        };
                        if file.indexed < file.drafts.len() {
                            // Only the batch's last file continues into the next.
                            match self.progress(&file.job, file.percent()).await {
                                Ok(()) => waiting.push_front(file),
                                Err(error) => {
                                    let outcome = self.settle(&file.job, error).await?;
                                    outcomes.push((file.job, outcome));
                                }
                            }
                            break;
                        }
                        let outcome = self.finish(&file).await?;
                        outcomes.push((file.job, outcome));
                    }
                }
                Err(StepError::Content(_)) if members > 1 => {
                    // The model refused a text without saying whose: each file runs alone.
                    let shared: Vec<Prepared> = waiting.drain(..members).collect();
                    for file in shared {
                        Box::pin(self.index_round(vec![file], outcomes)).await?;
                    }
                }
                Err(error) => {
                    for file in waiting.drain(..members) {
                        let outcome = self.settle(&file.job, error.clone()).await?;
                        outcomes.push((file.job, outcome));
                    }
                }
            }
        }
        Ok(())
    }

    /// How many chunks of each of the first waiting files the next batch takes.
    fn next_batch(&self, waiting: &VecDeque<Prepared>) -> Vec<usize> {
        let mut room = self.batch_size();
        let mut taken = Vec::new();
        for file in waiting {
            if room == 0 {
                break;
            }
            let count = (file.drafts.len() - file.indexed).min(room);
            room -= count;
            taken.push(count);
        }
        taken
    }

    /// Embeds the next `taken[i]` chunks of each of the first waiting files and writes them
    /// to the index in one write.
    async fn index_batch(
        &self,
        waiting: &VecDeque<Prepared>,
        taken: &[usize],
    ) -> Result<(), StepError> {
        let pipeline = &self.pipeline;
        // (file, ordinal) of each chunk of the batch, in order.
        let mut members = Vec::new();
        for (file, count) in waiting.iter().zip(taken) {
            members.extend((file.indexed..file.indexed + count).map(|ordinal| (file, ordinal)));
        }
        let texts: Vec<String> = members
            .iter()
            .map(|(file, ordinal)| file.drafts[*ordinal].text.clone())
            .collect();
        let count = texts.len();
        if count == 0 {
            return Ok(());
        }
        let (vectors, late) = embed_batch(
            pipeline.embedder.as_ref(),
            pipeline.late_interaction.as_deref(),
            texts,
        )
        .await?;
        let mut indexed = Vec::with_capacity(count);
        for ((file, ordinal), (dense, late)) in
            members.into_iter().zip(vectors.into_iter().zip(late))
        {
            let draft = &file.drafts[ordinal];
            indexed.push(IndexedChunk {
                organization: file.job.file.organization.clone(),
                file_id: file.job.file.id.clone(),
                ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
                datasets: file.datasets.clone(),
                text: draft.text.clone(),
                location: draft.location.clone(),
                dense,
                late,
            });
        }
        pipeline
            .index
            .upsert(indexed)
            .instrument(tracing::info_span!(
                "index",
                "tessera.chunks" = i64::try_from(count).unwrap_or(i64::MAX)
            ))
            .await
            .map_err(|error| StepError::Transient(error.to_string()))
    }

    /// Marks a file whose chunks are all indexed `ready`. An association made while it was
    /// processed found no index entries to update: its datasets are written as they are now.
    async fn finish(&self, file: &Prepared) -> Result<JobOutcome, DomainError> {
        let pipeline = &self.pipeline;
        let stored = &file.job.file;
        let now_in = pipeline
            .files
            .datasets_of(&stored.organization, &stored.id)
            .await?;
        if now_in != file.datasets
            && let Err(error) = pipeline
                .index
                .set_datasets(&stored.organization, &stored.id, now_in)
                .await
        {
            return self
                .settle(&file.job, StepError::Transient(error.to_string()))
                .await;
        }
        let chunks: Vec<StoredChunk> = file
            .drafts
            .iter()
            .enumerate()
            .map(|(ordinal, draft)| StoredChunk {
                ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
                text: draft.text.clone(),
                token_count: draft.token_count,
                location: draft.location.clone(),
            })
            .collect();
        let count = chunks.len();
        let chunk_count = u32::try_from(count).unwrap_or(u32::MAX);
        let ready = FileReady::of(stored, chunk_count, pipeline.clock.now());
        let model = pipeline.embedder.model();
        if pipeline
            .files
            .complete_job(&self.worker, &chunks, model, pipeline.generation, &ready)
            .await?
        {
            Ok(JobOutcome::Ready { chunks: count })
        } else {
            Ok(JobOutcome::LeaseLost)
        }
    }

    /// Settles a job that could not be processed: failed for good, retried later, or left to
    /// the worker that took it over.
    async fn settle(&self, job: &ClaimedJob, error: StepError) -> Result<JobOutcome, DomainError> {
        let files = &self.pipeline.files;
        let id = &job.file.id;
        match error {
            StepError::LeaseLost => Ok(JobOutcome::LeaseLost),
            StepError::Content(reason) => self.fail(job, reason).await,
            StepError::Transient(reason) if job.attempt >= self.settings.max_attempts => {
                let reason = format!(
                    "processing failed {} times; the last error: {reason}",
                    job.attempt
                );
                self.fail(job, reason).await
            }
            StepError::Transient(reason) => {
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

    /// Reads the file's content and cuts it into chunks, with the datasets it is in now.
    async fn read_and_cut(
        &self,
        job: &ClaimedJob,
    ) -> Result<(Vec<ChunkDraft>, Vec<DatasetId>), StepError> {
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
        // Sizes a client asked for this file, else the server's.
        let chunking = file.chunking.unwrap_or(self.settings.chunking);
        let extraction = pipeline
            .documents
            .chunks(file.format, content, chunking, sink)
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
        if job.attempt > 1 || file.chunk_count > 0 {
            // A file cut before (ready, queued again with other sizes) or an attempt after
            // another may have index entries its new chunks do not all overwrite (keys are
            // the ordinals): they go before any new one is written.
            pipeline
                .index
                .delete_file(&file.organization, &file.id)
                .await
                .map_err(|error| StepError::Transient(error.to_string()))?;
        }
        let datasets = pipeline
            .files
            .datasets_of(&file.organization, &file.id)
            .await?;
        Ok((drafts, datasets))
    }
}

impl Prepared {
    /// Embedding and indexing span 30 to 90 % of a file's progress.
    fn percent(&self) -> u8 {
        let done = self.indexed * 60 / self.drafts.len().max(1);
        30 + u8::try_from(done).unwrap_or(60)
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
