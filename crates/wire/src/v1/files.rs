//! The bodies of `/v1/files`: a file record as answered (mapped from the knowledge domain's
//! stored file) and its page, the list query, the multipart upload form and the downloaded
//! bytes as the OpenAPI document describes them, the bulk delete request and its per-file
//! outcome, and a file's dataset membership with the request that creates it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_knowledge::StoredFile;
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::paged;

/// A file record.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileOut {
    pub id: String,
    /// The name it was uploaded under (without any directory).
    pub name: String,
    /// `pdf`, `docx`, `txt`, `csv`, `json`, `md`, `png`, `jpeg`, `gif` or `webp`.
    pub format: String,
    pub mime_type: String,
    /// Bytes.
    pub size: u64,
    /// Lowercase hex SHA-256 of the content.
    pub sha256: String,
    /// `processing`, `ready` or `failed`.
    pub status: String,
    /// 0 to 100.
    pub progress: u8,
    /// Why processing failed (`failed` only).
    pub error: Option<String>,
    /// Chunks indexed for search (0 for images, which are not embedded).
    pub chunk_count: u32,
    /// The user or client that uploaded it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&StoredFile> for FileOut {
    fn from(file: &StoredFile) -> Self {
        Self {
            id: file.id.to_string(),
            name: file.name.clone(),
            format: file.format.as_str().to_owned(),
            mime_type: file.format.media_type().to_owned(),
            size: file.size,
            sha256: file.sha256.clone(),
            status: file.status.as_str().to_owned(),
            progress: file.progress,
            error: file.error.clone(),
            chunk_count: file.chunk_count,
            created_by: file.created_by.clone(),
            created_at: file.created_at,
            updated_at: file.updated_at,
        }
    }
}

paged!(FileOut => FilePage, "A page of files.");

/// Page through files, newest first.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ListFiles {
    /// Only files in this state: `processing`, `ready` or `failed`.
    pub status: Option<String>,
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// The upload form: one part named `file`, with a file name.
#[derive(Debug, ToSchema)]
pub struct UploadForm {
    /// Documents (`.pdf .docx .txt .jsonl .csv .json .md`) up to 50 MB, images (`.png .jpg .jpeg
    /// .gif .webp`) up to 20 MB. The content must match the extension.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// Adds the file to a dataset.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateAssociation {
    pub dataset_id: String,
}

/// A file's membership of a dataset.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetMembershipOut {
    pub file_id: String,
    pub dataset_id: String,
    /// The dataset's version after the change.
    pub dataset_version: u64,
}

/// A file's bytes, as uploaded.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct FileBytes(#[allow(dead_code)] Vec<u8>);

/// Delete several files at once.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BulkDelete {
    /// 1 to 100 file ids.
    #[validate(length(min = 1, max = 100))]
    #[schema(min_items = 1, max_items = 100)]
    pub file_ids: Vec<String>,
}

/// What a bulk delete did, file by file.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkDeleteOut {
    /// The files deleted.
    pub deleted: Vec<String>,
    /// The files not deleted, each with the problem a single delete would have answered.
    pub failed: Vec<BulkDeleteFailure>,
}

/// A file a bulk delete left in place.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkDeleteFailure {
    pub file_id: String,
    pub status: u16,
    pub code: String,
    pub detail: String,
}
