//! Datasets: named sets of files that are searched together, versioned on every change of
//! their content, with snapshots that freeze a version.

use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::{DatasetId, FileId, StoredFile};

/// A dataset record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub id: DatasetId,
    pub organization: OrganizationId,
    pub name: String,
    pub description: Option<String>,
    /// Starts at 1; incremented whenever a file is added or removed.
    pub version: u64,
    pub file_count: u64,
    /// Searches reorder their candidates by late interaction (MaxSim over the chunks'
    /// token vectors) unless a request says otherwise.
    pub late_interaction: bool,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A file in a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetFile {
    pub file: StoredFile,
    pub added_at: DateTime<Utc>,
}

/// The files of a dataset frozen at one version: searching the snapshot searches exactly
/// these contents, whatever changes later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub dataset_id: DatasetId,
    pub version: u64,
    /// Each file with the SHA-256 of its content at the time.
    pub files: Vec<(FileId, String)>,
    pub created_at: DateTime<Utc>,
}

/// What a file's deletion is refused for: the datasets (and snapshots) still holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReference {
    pub dataset_id: DatasetId,
    pub dataset_name: String,
    /// `None` when the dataset holds the file now; the version when a snapshot does.
    pub snapshot_version: Option<u64>,
}
