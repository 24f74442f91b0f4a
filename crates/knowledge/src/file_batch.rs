//! Files added to a dataset together (OpenAI's vector store file batches): which files and
//! when, and whether the batch was cancelled. Its progress is its files' statuses, never
//! stored twice; cancelling takes the batch's files still processing out of the dataset.

use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::{DatasetFileCounts, DatasetId, FileBatchId, FileId};

/// The most files one batch adds.
pub const MAX_BATCH_FILES: usize = 500;

/// A batch of files added to a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBatch {
    pub id: FileBatchId,
    pub organization: OrganizationId,
    pub dataset: DatasetId,
    /// In the order they were given, each once.
    pub files: Vec<FileId>,
    pub created_at: DateTime<Utc>,
    /// When it was cancelled: its files then still processing left the dataset.
    pub cancelled_at: Option<DateTime<Utc>>,
}

/// Where a batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileBatchStatus {
    /// A file of it is still processing.
    InProgress,
    /// Every file of it was processed (ready or failed).
    Completed,
    /// Cancelled: its files still processing then left the dataset.
    Cancelled,
}

/// A batch with what became of its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBatchProgress {
    pub batch: FileBatch,
    /// Its files the dataset still holds, by status.
    pub counts: DatasetFileCounts,
}

impl FileBatchProgress {
    pub fn status(&self) -> FileBatchStatus {
        if self.batch.cancelled_at.is_some() {
            FileBatchStatus::Cancelled
        } else if self.counts.processing > 0 {
            FileBatchStatus::InProgress
        } else {
            FileBatchStatus::Completed
        }
    }

    /// Its files no longer in the dataset: those a cancellation took out (or removed since).
    pub fn cancelled(&self) -> u64 {
        (self.batch.files.len() as u64).saturating_sub(self.counts.total())
    }
}
