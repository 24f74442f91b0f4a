//! The storage ports of files, processing jobs and datasets. One database implements them
//! all, so the checks that span them (a file still in a dataset cannot be deleted) are
//! atomic. Every change made for a caller comes with its audit record, written in the same
//! transaction only when the change is made.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{
    Attributes, ChunkingSettings, Dataset, DatasetFile, DatasetFileCounts, DatasetId, FileBatch,
    FileBatchId, FileFailed, FileFilter, FileId, FilePurpose, FileReady, FileReference, FileStatus,
    Rechunking, Snapshot, StoredChunk, StoredFile,
};

/// A processing job handed to a worker: the file and which attempt this is (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    pub file: StoredFile,
    pub attempt: u32,
}

/// What deleting a file did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileDeletion {
    /// Deleted; `orphaned_blob` names its content when no other file shares it any more.
    Deleted {
        orphaned_blob: Option<String>,
    },
    /// Refused: datasets (or their snapshots) still hold it.
    InUse(Vec<FileReference>),
    NotFound,
}

/// Files, their chunks and their processing jobs.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait FileStore: Send + Sync {
    /// Stores a new file; with `queue_job` also its processing job, and with `ready` (a file
    /// stored ready, with nothing to process) that event, in the same transaction.
    async fn insert(
        &self,
        file: &StoredFile,
        queue_job: bool,
        ready: Option<FileReady>,
        audit: &AuditRecord,
    ) -> Result<(), DomainError>;

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Option<StoredFile>, DomainError>;

    /// Newest first (descending ids), after `page.after`.
    async fn list(
        &self,
        filter: &FileFilter,
        page: &PageRequest<FileId>,
    ) -> Result<Vec<StoredFile>, DomainError>;

    async fn count(&self, filter: &FileFilter) -> Result<u64, DomainError>;

    /// Records what an OpenAI client uploaded the file for; false when the organization has
    /// no such file. A purpose that is not processed ([`FilePurpose::is_processed`]) also
    /// drops the file's processing job and leaves a file still processing ready, with no
    /// chunks, in the same change (a worker holding the job then finds its lease gone).
    async fn set_purpose(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        purpose: FilePurpose,
    ) -> Result<bool, DomainError>;

    /// Asks for the organization's file `id` to be cut with `chunking`, for `dataset`: in
    /// one change, decides by [`Rechunking::decide`] (held elsewhere: a dataset other than
    /// `dataset` holds the file now) and makes what it decided. `Recorded` sets the file's
    /// sizes, and releases a job a worker holds to run again once that worker's lease would
    /// have ended (the worker, its lease gone, writes nothing; the next attempt cuts with the
    /// new sizes). `Requeued` also makes the file `processing` (progress 0) as of `at` and
    /// queues its job, due at `at`; its chunks stay until the job replaces them. `audit` is
    /// written when the sizes change. `None` when the organization has no such file.
    async fn set_chunking(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        dataset: &DatasetId,
        chunking: ChunkingSettings,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<Rechunking>, DomainError>;

    /// Deletes a file with its chunks and job unless a dataset or snapshot holds it.
    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &FileId,
        audit: &AuditRecord,
    ) -> Result<FileDeletion, DomainError>;

    /// The datasets a file is in now.
    async fn datasets_of(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Vec<DatasetId>, DomainError>;

    /// The chunks of a file, in order.
    async fn chunks(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Vec<StoredChunk>, DomainError>;

    /// Leases the oldest due job to `worker` until `lease_until` and counts the attempt.
    /// Due: `run_after <= now` and no live lease (an expired lease is a crashed worker's).
    async fn claim_job(
        &self,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedJob>, DomainError>;

    /// Records progress (0-100) of a job `worker` holds and extends its lease to
    /// `lease_until`; false when the lease was lost.
    async fn report_progress(
        &self,
        id: &FileId,
        worker: &str,
        progress: u8,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Ends the job of `ready.file` that `worker` holds successfully: stores the chunks,
    /// marks the file `ready` as of `ready.at` with the embedding model its vectors were made
    /// by and the index generation they went to, removes the job and records the event.
    /// False (and nothing changed) when the lease was lost.
    async fn complete_job(
        &self,
        worker: &str,
        chunks: &[StoredChunk],
        embedding_model: &str,
        generation: u32,
        ready: &FileReady,
    ) -> Result<bool, DomainError>;

    /// How many ready files hold vectors (at least one chunk) of each embedding model, across
    /// every organization; `None` counts files processed before models were recorded.
    async fn embedding_models(&self) -> Result<Vec<(Option<String>, u64)>, DomainError>;

    /// Records `model` as the embedding model of the ready files with chunks that have none
    /// (processed before models were recorded); how many there were.
    async fn adopt_embedding_model(&self, model: &str) -> Result<u64, DomainError>;

    /// Releases a job `worker` holds to run again at `run_after`, recording the error.
    async fn retry_job(
        &self,
        id: &FileId,
        worker: &str,
        error: &str,
        run_after: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Ends the job of `failed.file` that `worker` holds for good: the file is `failed` with
    /// `failed.error` as of `failed.at`, and the event is recorded. False (and nothing
    /// changed) when the lease was lost.
    async fn fail_job(&self, worker: &str, failed: &FileFailed) -> Result<bool, DomainError>;
}

/// Datasets, their files and snapshots.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait DatasetStore: Send + Sync {
    async fn insert(&self, dataset: &Dataset, audit: &AuditRecord) -> Result<(), DomainError>;

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &DatasetId,
    ) -> Result<Option<Dataset>, DomainError>;

    /// Newest first (descending ids), after `page.after`.
    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<DatasetId>,
    ) -> Result<Vec<Dataset>, DomainError>;

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError>;

    /// Saves name, description, late interaction, metadata, expiry and `updated_at` (not
    /// `last_active_at`: only [`touch`](Self::touch) moves it); false when the dataset does
    /// not exist.
    async fn update(&self, dataset: &Dataset, audit: &AuditRecord) -> Result<bool, DomainError>;

    /// Records activity of the organization's dataset at `at`: its `last_active_at` moves
    /// forward to `at`, never back (a later activity already recorded stays). False when
    /// nothing moved: no such dataset, or activity at `at` or later already recorded. Not
    /// audited: using a dataset is not a change of it.
    async fn touch(
        &self,
        organization: &OrganizationId,
        id: &DatasetId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Deletes a dataset with its associations and snapshots; returns the files it held.
    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &DatasetId,
        audit: &AuditRecord,
    ) -> Result<Option<Vec<FileId>>, DomainError>;

    /// Adds a file (both must exist in the organization, else `NotFound`); the dataset's
    /// version is incremented when the file was not in it. Returns the dataset after.
    async fn add_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<(Dataset, bool), DomainError>;

    /// Removes a file; the version is incremented when it was there. `None` when the
    /// dataset does not exist; `Some((dataset, false))` when the file was not in it.
    async fn remove_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<(Dataset, bool)>, DomainError>;

    /// Replaces the attributes of a file the dataset holds (empty clears them); false when
    /// the dataset does not exist in the organization or does not hold the file.
    async fn set_attributes(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
        attributes: &Attributes,
    ) -> Result<bool, DomainError>;

    /// Every file the dataset holds with its attributes (empty when it has none), in no
    /// particular order; nothing when the dataset does not exist in the organization.
    async fn attributes(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Vec<(FileId, Attributes)>, DomainError>;

    /// How many of the dataset's files (of `only` those, when given) are in each status, and
    /// their size; `None` when the dataset does not exist in the organization.
    async fn file_counts(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        only: Option<Vec<FileId>>,
    ) -> Result<Option<DatasetFileCounts>, DomainError>;

    /// Records a batch of files added to its dataset.
    async fn insert_batch(&self, batch: &FileBatch) -> Result<(), DomainError>;

    /// The batch `id` of the organization's `dataset`, if there is one.
    async fn batch(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        id: &FileBatchId,
    ) -> Result<Option<FileBatch>, DomainError>;

    /// Marks the batch cancelled at `at` (once: a cancelled batch keeps its first time);
    /// false when there is no such batch.
    async fn cancel_batch(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        id: &FileBatchId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// The file when the dataset holds it now (both of the organization).
    async fn dataset_file(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        file: &FileId,
    ) -> Result<Option<DatasetFile>, DomainError>;

    /// The dataset's files (of `status` only, when given), newest file first (descending
    /// file ids), after `page.after`.
    async fn files(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        status: Option<FileStatus>,
        page: &PageRequest<FileId>,
    ) -> Result<Vec<DatasetFile>, DomainError>;

    /// Freezes the current file set at the current version (returns the existing snapshot
    /// when that version is already frozen).
    async fn snapshot(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Snapshot, DomainError>;

    /// The dataset's snapshots, newest version first.
    async fn snapshots(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Vec<Snapshot>, DomainError>;
}
