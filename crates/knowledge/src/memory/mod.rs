//! The in-memory reference [`FileStore`](crate::FileStore) and
//! [`DatasetStore`](crate::DatasetStore) (and [`GenerationStore`](crate::GenerationStore)): the executable statement of the ports' contract,
//! run through the same contract suite as the SQL stores, for tests and for services that
//! keep no database. One state holds files, their chunks and processing jobs, datasets and
//! their snapshots, so the checks that span both ports (a file a dataset or a snapshot holds
//! is not deleted) are atomic, as in one database. Each change made keeps its audit record,
//! and each event the SQL stores write to the webhook outbox with a change is kept as a
//! [`KnowledgeEvent`]; changes not made keep neither. It keeps no organizations, so it
//! cannot refuse a record of one that does not exist as the SQL stores' foreign keys do.

mod datasets;
mod files;
mod generations;
#[cfg(test)]
mod tests;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Mutex, PoisonError},
};

use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{
    Attributes, Dataset, DatasetId, DatasetUpdated, FileBatch, FileBatchId, FileFailed, FileId,
    FileReady, IndexGeneration, Snapshot, StoredChunk, StoredFile,
};

/// An event the store recorded with the change it reports (what the SQL stores write to
/// the webhook outbox in that change's transaction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnowledgeEvent {
    /// A file was stored ready or its processing completed (`file.ready`).
    FileReady(FileReady),
    /// A file's processing failed for good (`file.failed`).
    FileFailed(FileFailed),
    /// A file was added to or removed from a dataset (`dataset.updated`).
    DatasetUpdated(DatasetUpdated),
}

/// A file's processing job: due once `run_after` has passed while no live lease holds it.
struct Job {
    /// How many times it was claimed.
    attempts: u32,
    run_after: DateTime<Utc>,
    leased_by: Option<String>,
    leased_until: Option<DateTime<Utc>>,
    /// Why the last attempt asked for a retry.
    last_error: Option<String>,
}

impl Job {
    /// Whether `worker` holds the job: its lease names it (a lease that expired still does
    /// until another worker claims the job, as in the SQL stores).
    fn held_by(&self, worker: &str) -> bool {
        self.leased_by.as_deref() == Some(worker)
    }

    /// Whether a worker may claim the job at `now`.
    fn due(&self, now: DateTime<Utc>) -> bool {
        self.run_after <= now && self.leased_until.is_none_or(|until| until <= now)
    }
}

/// Who holds a lease, until when.
type Lease = (String, DateTime<Utc>);

/// A dataset, its files (with when each was added) and its snapshots.
struct StoredDataset {
    /// As stored; its `file_count` is `files`' length, set on reading.
    dataset: Dataset,
    files: BTreeMap<FileId, DateTime<Utc>>,
    /// The attributes of the files that have some.
    attributes: BTreeMap<FileId, Attributes>,
    /// By version.
    snapshots: BTreeMap<u64, Snapshot>,
}

impl StoredDataset {
    /// The dataset as read, counting its files.
    fn read(&self) -> Dataset {
        Dataset {
            file_count: self.files.len() as u64,
            ..self.dataset.clone()
        }
    }

    fn of(&self, organization: &OrganizationId) -> bool {
        &self.dataset.organization == organization
    }
}

#[derive(Default)]
struct State {
    /// By id, so newest first (by id) is the map in reverse.
    files: BTreeMap<FileId, StoredFile>,
    /// Each file's chunks, in ordinal order.
    chunks: HashMap<FileId, Vec<StoredChunk>>,
    /// The embedding model of each ready file's vectors.
    embedding_models: HashMap<FileId, String>,
    /// The index generation each ready file's vectors reached (0 when absent).
    file_generations: HashMap<FileId, u32>,
    /// The recorded generations by number, with each one's lease.
    generations: BTreeMap<u32, (IndexGeneration, Option<Lease>)>,
    jobs: BTreeMap<FileId, Job>,
    datasets: BTreeMap<DatasetId, StoredDataset>,
    /// File batches by id (a deleted dataset's are never read again).
    batches: HashMap<FileBatchId, FileBatch>,
    events: Vec<KnowledgeEvent>,
    audit: Vec<AuditRecord>,
}

impl State {
    /// The file `id` if it is one of `organization`'s.
    fn file(&self, organization: &OrganizationId, id: &FileId) -> Option<&StoredFile> {
        (self.files.get(id)).filter(|file| &file.organization == organization)
    }

    /// The dataset `id` if it is one of `organization`'s.
    fn dataset(&self, organization: &OrganizationId, id: &DatasetId) -> Option<&StoredDataset> {
        (self.datasets.get(id)).filter(|dataset| dataset.of(organization))
    }
}

/// Files, their chunks and processing jobs, datasets and snapshots, held in memory.
#[derive(Default)]
pub struct InMemoryKnowledgeStore {
    state: Mutex<State>,
}

impl InMemoryKnowledgeStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The events recorded with the changes made, in order.
    pub fn events(&self) -> Vec<KnowledgeEvent> {
        self.with(|state| state.events.clone())
    }

    /// Why the last attempt of `file`'s processing job asked for a retry; `None` when it
    /// did not, or when the file has no job (any more).
    pub fn last_job_error(&self, file: &FileId) -> Option<String> {
        self.with(|state| state.jobs.get(file)?.last_error.clone())
    }

    /// The audit records written with the changes made, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        self.with(|state| state.audit.clone())
    }

    /// Runs `f` on the state. A poisoned lock still guards a whole state: no change here
    /// panics halfway.
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// At most `page.limit.overfetch()` of `records` (ordered by id), newest first, before the
/// page's cursor (keyset pagination on descending ids).
fn newest_first<'a, K: Ord + 'a, V: 'a>(
    records: impl DoubleEndedIterator<Item = (&'a K, &'a V)>,
    page: &PageRequest<K>,
) -> impl Iterator<Item = (&'a K, &'a V)> {
    let after = page.after.as_ref();
    records
        .rev()
        .filter(move |(id, _)| after.is_none_or(|after| *id < after))
        .take(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX))
}

/// What storing a record under a taken key is refused with.
fn already_exists(message: String) -> DomainError {
    DomainError::Conflict {
        code: "already_exists",
        message,
    }
}
