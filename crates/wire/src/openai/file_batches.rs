//! OpenAI's vector store file batches over the knowledge domain's: the create request with
//! its validation and the batch object with its status and counts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_kernel::DomainError;
use tessera_knowledge::{Attributes, ChunkingSettings, FileBatchProgress, FileBatchStatus, FileId};
use utoipa::ToSchema;
use validator::Validate;

use super::{
    attributes::attributes_of,
    files::file_ids,
    unix,
    vector_stores::{ChunkingStrategy, FileCounts, chunking_of},
};

/// `POST /openai/v1/vector_stores/{vector_store_id}/file_batches`.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateFileBatch {
    /// 1 to 500 files of the organization, each added once.
    #[schema(min_items = 1, max_items = 500)]
    pub file_ids: Vec<String>,
    /// Given to every file of the batch (see the vector store file's `attributes`).
    pub attributes: Option<BTreeMap<String, Value>>,
    /// How every file of the batch is cut (see the type).
    pub chunking_strategy: Option<ChunkingStrategy>,
}

/// A batch's request, checked.
#[derive(Debug)]
pub struct NewFileBatch {
    pub files: Vec<FileId>,
    pub attributes: Attributes,
    /// The sizes every file is cut with; `None` keeps how each is cut.
    pub chunking: Option<ChunkingSettings>,
}

impl CreateFileBatch {
    /// The files, their attributes and sizes, checked (how many a batch takes is the
    /// domain's rule).
    pub fn into_parts(self) -> Result<NewFileBatch, DomainError> {
        let chunking = chunking_of(self.chunking_strategy.as_ref())
            .map_err(|error| DomainError::Validation(vec![error]))?;
        let files = file_ids(&self.file_ids)?;
        Ok(NewFileBatch {
            files,
            attributes: attributes_of(self.attributes.unwrap_or_default())?,
            chunking,
        })
    }
}

/// A batch of files added to a vector store.
#[derive(Debug, Serialize, ToSchema)]
pub struct VectorStoreFileBatch {
    pub id: String,
    /// Always `vector_store.files_batch`.
    pub object: &'static str,
    pub created_at: i64,
    pub vector_store_id: String,
    /// `in_progress` while a file of it is processing, then `completed`; `cancelled` once
    /// cancelled.
    pub status: &'static str,
    /// Its files by status; `cancelled` counts those a cancellation took out of the store.
    pub file_counts: FileCounts,
}

impl From<&FileBatchProgress> for VectorStoreFileBatch {
    fn from(progress: &FileBatchProgress) -> Self {
        let (batch, counts) = (&progress.batch, &progress.counts);
        let cancelled = progress.cancelled();
        Self {
            id: batch.id.to_string(),
            object: "vector_store.files_batch",
            created_at: unix(batch.created_at),
            vector_store_id: batch.dataset.to_string(),
            status: match progress.status() {
                FileBatchStatus::InProgress => "in_progress",
                FileBatchStatus::Completed => "completed",
                FileBatchStatus::Cancelled => "cancelled",
            },
            file_counts: FileCounts {
                in_progress: counts.processing,
                completed: counts.ready,
                failed: counts.failed,
                cancelled,
                total: counts.total() + cancelled,
            },
        }
    }
}
