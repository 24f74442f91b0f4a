//! The events the knowledge domain announces (the `file.ready`, `file.failed` and
//! `dataset.updated` webhooks). File events are decided here, where processing ends, and
//! handed to the store with the change that makes them true; a dataset's is made by the
//! store with the version its change's transaction assigned ([`DatasetUpdated`]), and only
//! when the dataset's files really changed. Either way the store records it in that
//! change's transaction (the webhook outbox), so a receiver hears of every committed change
//! and of nothing else.

use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId};

use crate::{DatasetId, FileId, StoredFile};

/// A file became searchable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReady {
    pub organization: OrganizationId,
    pub file: FileId,
    pub name: String,
    pub chunk_count: u32,
    pub at: DateTime<Utc>,
}

impl FileReady {
    /// Refuses an event that names another file than the one stored with it: it would tell
    /// receivers of a file that was never stored ready.
    pub fn must_name(&self, file: &StoredFile) -> Result<(), DomainError> {
        if self.file == file.id && self.organization == file.organization {
            return Ok(());
        }
        Err(DomainError::internal(format!(
            "the ready event of file {} names file {} of {}",
            file.id, self.file, self.organization
        )))
    }

    pub fn of(file: &StoredFile, chunk_count: u32, at: DateTime<Utc>) -> Self {
        Self {
            organization: file.organization.clone(),
            file: file.id.clone(),
            name: file.name.clone(),
            chunk_count,
            at,
        }
    }
}

/// A file's processing failed for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFailed {
    pub organization: OrganizationId,
    pub file: FileId,
    pub name: String,
    /// Why, as the file's `error` says.
    pub error: String,
    pub at: DateTime<Utc>,
}

impl FileFailed {
    pub fn of(file: &StoredFile, error: &str, at: DateTime<Utc>) -> Self {
        Self {
            organization: file.organization.clone(),
            file: file.id.clone(),
            name: file.name.clone(),
            error: error.to_owned(),
            at,
        }
    }
}

/// How a dataset's content changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetChange {
    FileAdded,
    FileRemoved,
}

/// A file was added to or removed from a dataset, bringing it to `version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetUpdated {
    pub organization: OrganizationId,
    pub dataset: DatasetId,
    pub version: u64,
    pub change: DatasetChange,
    pub file: FileId,
    pub at: DateTime<Utc>,
}
