//! The events the knowledge domain announces about files (the `file.ready` and `file.failed`
//! webhooks): decided here, where processing ends, and handed to the store with the change
//! that makes them true, which records them in that change's transaction (the webhook
//! outbox), so a receiver hears of every committed outcome and of nothing else.

use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::{FileId, StoredFile};

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
