//! Datasets: named sets of files that are searched together, versioned on every change of
//! their content, with snapshots that freeze a version.

use chrono::{DateTime, Duration, Utc};
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
    /// It expires this many days (1 to [`MAX_EXPIRY_DAYS`]) after it was last active
    /// (OpenAI's `expires_after` anchored at `last_active_at`); `None` never expires.
    pub expires_after_days: Option<u16>,
    /// When it was last used: created, searched, or given or relieved of a file (moved at
    /// most once per [`ACTIVITY_RESOLUTION`]), or given a new expiry.
    pub last_active_at: DateTime<Utc>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The longest expiry, in days after the last activity (OpenAI's bound).
pub const MAX_EXPIRY_DAYS: u16 = 365;

/// How finely activity is recorded: `last_active_at` moves only once it is this old, so a
/// dataset searched many times a second is written at most once a minute. Expiry counts in
/// days, so a minute's lag changes nothing a client could notice.
pub const ACTIVITY_RESOLUTION: Duration = Duration::minutes(1);

impl Dataset {
    /// When it expires: `expires_after_days` after its last activity; `None` never.
    pub fn expires_at(&self) -> Option<DateTime<Utc>> {
        self.expires_after_days
            .map(|days| self.last_active_at + Duration::days(i64::from(days)))
    }

    /// Whether it has expired at `now`: it then keeps its files but is refused for use
    /// (search, new files) until its expiry is extended or cleared, or it is deleted.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at()
            .is_some_and(|expires_at| now >= expires_at)
    }

    /// Whether activity at `now` is worth recording ([`ACTIVITY_RESOLUTION`]).
    pub fn activity_due(&self, now: DateTime<Utc>) -> bool {
        now - self.last_active_at >= ACTIVITY_RESOLUTION
    }
}

/// What a new dataset is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewDataset {
    pub name: String,
    pub description: Option<String>,
    pub late_interaction: bool,
    pub metadata: Metadata,
    /// Days after its last activity it expires (1 to [`MAX_EXPIRY_DAYS`]); `None` never.
    pub expires_after_days: Option<u16>,
}

/// What an update changes (`None` leaves a field as it is; `Some(None)` clears the
/// description, or the expiry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatasetChanges {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub late_interaction: Option<bool>,
    pub metadata: Option<Metadata>,
    /// A new expiry (`Some(None)`: never expires); given either way, the dataset counts as
    /// active now, so the expiry runs from the change.
    pub expires_after_days: Option<Option<u16>>,
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
