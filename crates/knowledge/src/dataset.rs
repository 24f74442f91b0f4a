//! Datasets: named sets of files that are searched together, versioned on every change of
//! their content, with snapshots that freeze a version.

use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::{Attributes, DatasetId, FileId, StoredFile};
pub use tessera_kernel::Metadata;

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
    /// What a client attached to it (OpenAI's vector store `metadata`).
    pub metadata: Metadata,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What a new dataset is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewDataset {
    pub name: String,
    pub description: Option<String>,
    pub late_interaction: bool,
    pub metadata: Metadata,
}

/// What an update changes (`None` leaves a field as it is; `Some(None)` clears the
/// description).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatasetChanges {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub late_interaction: Option<bool>,
    pub metadata: Option<Metadata>,
}

/// How many of a dataset's files are in each status, and their size (OpenAI's
/// `file_counts` and `usage_bytes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DatasetFileCounts {
    pub processing: u64,
    pub ready: u64,
    pub failed: u64,
    pub bytes: u64,
}

impl DatasetFileCounts {
    pub fn total(&self) -> u64 {
        self.processing + self.ready + self.failed
    }
}

/// A file in a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetFile {
    pub file: StoredFile,
    pub added_at: DateTime<Utc>,
    /// What a client attached to the file in this dataset.
    pub attributes: Attributes,
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
