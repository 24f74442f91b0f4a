//! The bodies of `/v1/datasets`: a dataset record and its page, a dataset's files (file
//! records with when they were added) and their page, the create and update requests,
//! snapshots (the files frozen at a version) and their list, and the search request with its
//! mode and its results, each mapped from the knowledge domain's records.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_knowledge::{Dataset, SearchHit, SearchMode, Snapshot};
use utoipa::ToSchema;
use validator::Validate;

use crate::v1::files::FileOut;
use crate::{itemized, paged};

/// A dataset record.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetOut {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// Starts at 1; incremented whenever a file is added or removed.
    pub version: u64,
    pub file_count: u64,
    /// Searches reorder their best candidates by late interaction (token-level MaxSim with
    /// answerai-colbert-small-v1) unless a request says otherwise.
    pub late_interaction: bool,
    /// Key-value pairs a client attached (OpenAI's vector store `metadata`).
    pub metadata: BTreeMap<String, String>,
    /// Days after its last activity it expires (OpenAI's vector store `expires_after`, set
    /// there); null never. Once expired it keeps its files but its search and new files are
    /// refused (422 `expired`).
    pub expires_after_days: Option<u16>,
    /// When it expires: `expiresAfterDays` after `lastActiveAt`; null never.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was last used: created, searched, given or relieved of a file (recorded to
    /// the minute), or given a new expiry.
    pub last_active_at: DateTime<Utc>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&Dataset> for DatasetOut {
    fn from(dataset: &Dataset) -> Self {
        Self {
            id: dataset.id.to_string(),
            name: dataset.name.clone(),
            description: dataset.description.clone(),
            version: dataset.version,
            file_count: dataset.file_count,
            late_interaction: dataset.late_interaction,
            metadata: dataset.metadata.pairs().clone(),
            expires_after_days: dataset.expires_after_days,
            expires_at: dataset.expires_at(),
            last_active_at: dataset.last_active_at,
            created_by: dataset.created_by.clone(),
            created_at: dataset.created_at,
            updated_at: dataset.updated_at,
        }
    }
}

paged!(DatasetOut => DatasetPage, "A page of datasets.");

/// A file of a dataset.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetFileOut {
    #[serde(flatten)]
    pub file: FileOut,
    pub added_at: DateTime<Utc>,
}

paged!(DatasetFileOut => DatasetFilePage, "A page of a dataset's files.");

/// A new dataset.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateDataset {
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// At most 2000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Reorder every search's best candidates by late interaction (default `false`): more
    /// accurate, a few milliseconds more per search; the server must compute token vectors
    /// (`knowledge.late_interaction`), else 422.
    pub late_interaction: Option<bool>,
    /// Up to 16 pairs; keys of at most 64 characters, values of at most 512.
    pub metadata: Option<BTreeMap<String, String>>,
}

/// Changes to a dataset; absent fields stay, `description: null` clears it.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateDataset {
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable")]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub description: Option<Option<String>>,
    /// Turn late interaction on or off for the dataset's searches (on needs the server's
    /// `knowledge.late_interaction`, else 422).
    pub late_interaction: Option<bool>,
    /// Replaces the metadata (`{}` clears it).
    pub metadata: Option<BTreeMap<String, String>>,
}

/// A snapshot: the dataset's files frozen at a version.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotOut {
    pub dataset_id: String,
    pub version: u64,
    pub files: Vec<SnapshotFileOut>,
    pub created_at: DateTime<Utc>,
}

/// A file of a snapshot with the hash of its content then.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotFileOut {
    pub file_id: String,
    pub sha256: String,
}

itemized!(SnapshotOut => SnapshotList, "A dataset's snapshots, newest first.");

impl From<Snapshot> for SnapshotOut {
    fn from(snapshot: Snapshot) -> Self {
        Self {
            dataset_id: snapshot.dataset_id.to_string(),
            version: snapshot.version,
            files: snapshot
                .files
                .into_iter()
                .map(|(id, sha256)| SnapshotFileOut {
                    file_id: id.to_string(),
                    sha256,
                })
                .collect(),
            created_at: snapshot.created_at,
        }
    }
}

/// A search of the dataset.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchDataset {
    /// 1 to 2000 characters.
    pub query: String,
    /// 1 to 50, default 10.
    #[validate(range(min = 1, max = 50))]
    #[schema(minimum = 1, maximum = 50)]
    pub limit: Option<u32>,
    /// Search this snapshot's files (its version) instead of the current ones.
    pub version: Option<u64>,
    /// Only these files.
    pub file_ids: Option<Vec<String>>,
    /// `hybrid` (default): meaning and words, fused by reciprocal rank; `dense`: meaning
    /// only; `sparse`: words only (BM25; names, codes, exact terms).
    pub mode: Option<SearchModeDto>,
    /// Rerank the best fused candidates with the server's cross-encoder, which reads the
    /// query with each passage (`knowledge.rerank`; much slower). Default: the server's
    /// `knowledge.rerank_by_default` (off); `true` on a server without the model is 422.
    pub rerank: Option<bool>,
    /// Reorder the best candidates by late interaction (MaxSim over the passages' token
    /// vectors, stored at ingestion). Default: the dataset's `lateInteraction`; `true` on a
    /// server without token vectors (`knowledge.late_interaction`) is 422.
    pub late_interaction: Option<bool>,
}

/// Which rankings a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = SearchMode)]
pub enum SearchModeDto {
    Hybrid,
    Dense,
    Sparse,
}

impl From<SearchModeDto> for SearchMode {
    fn from(mode: SearchModeDto) -> Self {
        match mode {
            SearchModeDto::Hybrid => SearchMode::Hybrid,
            SearchModeDto::Dense => SearchMode::Dense,
            SearchModeDto::Sparse => SearchMode::Sparse,
        }
    }
}

/// A passage found by search.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHitOut {
    pub file_id: String,
    pub file_name: String,
    /// The chunk's position in its file (0-based).
    pub chunk_index: u32,
    /// Reciprocal-rank fusion score of the rankings the mode uses, or the MaxSim score when
    /// the search used late interaction; higher is better.
    pub score: f32,
    /// The cross-encoder's relevance of the passage to the query, 0 to 1, when the search
    /// was reranked (the hits are then ordered by it).
    pub relevance: Option<f32>,
    pub text: String,
    /// 1-based page (PDF).
    pub page: Option<u32>,
    /// Heading path, JSON path or CSV row range.
    pub section: Option<String>,
    /// Character offsets of the passage in the file's extracted text.
    pub char_start: u64,
    pub char_end: u64,
}

/// Search results, best first.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    pub items: Vec<SearchHitOut>,
}

impl From<SearchHit> for SearchHitOut {
    fn from(hit: SearchHit) -> Self {
        Self {
            file_id: hit.chunk.file_id.to_string(),
            file_name: hit.file_name,
            chunk_index: hit.chunk.ordinal,
            score: hit.chunk.score,
            relevance: hit.relevance,
            text: hit.chunk.text,
            page: hit.chunk.location.page,
            section: hit.chunk.location.section,
            char_start: hit.chunk.location.char_start,
            char_end: hit.chunk.location.char_end,
        }
    }
}
