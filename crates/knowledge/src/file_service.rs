//! Files as the API offers them: upload, read, list, download and delete, within the
//! caller's organization.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::stream::BoxStream;
use tessera_kernel::{
    Actor, AuditRecord, Clock, CursorCodec, DomainError, Limit, OrganizationId, Page, PageRequest,
};

use crate::{
    BlobError, BlobStore, FileDeletion, FileFilter, FileFormat, FileId, FileReady, FileStatus,
    FileStore, StoredFile, Upload, UploadError, VectorIndex, upload,
};

const FILE_LIST: &str = "files";

/// Who is asking: the organization and the principal (the uploader of new files), and who
/// the audit records of its changes name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnowledgeCaller {
    pub organization: OrganizationId,
    pub subject: String,
    pub actor: Actor,
}

impl KnowledgeCaller {
    /// The audit record of `action` on a resource of the caller's organization.
    pub fn audit(
        &self,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        at: DateTime<Utc>,
    ) -> AuditRecord {
        self.actor
            .record(&self.organization, action, resource_type, resource_id, at)
    }
}

/// Files of organizations.
#[derive(Clone)]
pub struct FileService {
    files: Arc<dyn FileStore>,
    blobs: Arc<dyn BlobStore>,
    index: Arc<dyn VectorIndex>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
}

impl FileService {
    pub fn new(
        files: Arc<dyn FileStore>,
        blobs: Arc<dyn BlobStore>,
        index: Arc<dyn VectorIndex>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Self {
        Self {
            files,
            blobs,
            index,
            clock,
            cursors,
        }
    }

    pub(crate) fn file_store(&self) -> &dyn FileStore {
        self.files.as_ref()
    }

    /// Stores an upload and, for documents, queues its processing: the record answers at
    /// once with `processing`. Images need no processing and are `ready` at once.
    pub async fn upload(
        &self,
        caller: &KnowledgeCaller,
        upload: Upload<'_>,
    ) -> Result<StoredFile, UploadError> {
        let name = upload::clean_file_name(&upload.file_name)?;
        let format = FileFormat::from_file_name(&name)?;
        let blob = upload::receive(format, upload.content, self.blobs.as_ref()).await?;
        let now = self.clock.now();
        let image = format.is_image();
        let file = StoredFile {
            id: FileId::generate(),
            organization: caller.organization.clone(),
            created_by: caller.subject.clone(),
            name,
            format,
            size: blob.size,
            sha256: blob.sha256,
            status: if image {
                FileStatus::Ready
            } else {
                FileStatus::Processing
            },
            progress: if image { 100 } else { 0 },
            error: None,
            chunk_count: 0,
            created_at: now,
            updated_at: now,
        };
        let audit = caller.audit("file.upload", "file", file.id.as_str(), now);
        // An image has nothing to process: it is searchable (by name) as stored.
        let ready = image.then(|| FileReady::of(&file, 0, now));
        self.files
            .insert(&file, !image, ready, &audit)
            .await
            .map_err(|error| UploadError::Interrupted(format!("the file record: {error}")))?;
        Ok(file)
    }

    pub async fn get(
        &self,
        caller: &KnowledgeCaller,
        id: &FileId,
    ) -> Result<StoredFile, DomainError> {
        self.find(&caller.organization, id)
            .await?
            .ok_or_else(|| DomainError::not_found("file", id))
    }

    /// The organization's file `id`, if there is one.
    pub async fn find(
        &self,
        organization: &OrganizationId,
        id: &FileId,
    ) -> Result<Option<StoredFile>, DomainError> {
        self.files.get(organization, id).await
    }

    /// A file's whole content (images for vision models; at most 20 MB).
    pub async fn bytes(&self, file: &StoredFile) -> Result<Vec<u8>, DomainError> {
        self.blobs
            .read(&file.sha256)
            .await
            .map_err(|error| DomainError::internal(format!("file {}: content: {error}", file.id)))
    }

    /// Newest first; `status` filters.
    pub async fn list(
        &self,
        caller: &KnowledgeCaller,
        status: Option<FileStatus>,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<StoredFile>, DomainError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<FileId>(FILE_LIST, caller.organization.as_str(), c)
            })
            .transpose()?;
        let filter = FileFilter {
            organization: caller.organization.clone(),
            status,
        };
        let rows = self
            .files
            .list(&filter, &PageRequest { limit, after })
            .await?;
        let total = self.files.count(&filter).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |file| {
            self.cursors
                .encode(FILE_LIST, caller.organization.as_str(), &file.id)
        }))
    }

    /// The file and its content in pieces.
    pub async fn content(
        &self,
        caller: &KnowledgeCaller,
        id: &FileId,
    ) -> Result<(StoredFile, BoxStream<'static, Result<Vec<u8>, BlobError>>), DomainError> {
        let file = self.get(caller, id).await?;
        let content = self.blobs.stream(&file.sha256).await.map_err(|error| {
            DomainError::internal(format!("file {}: content: {error}", file.id))
        })?;
        Ok((file, content))
    }

    /// Deletes a file, its chunks and index entries, and its content when no other file
    /// shares it. Refused with `file_in_use` while a dataset or snapshot holds it.
    pub async fn delete(&self, caller: &KnowledgeCaller, id: &FileId) -> Result<(), DomainError> {
        let audit = caller.audit("file.delete", "file", id.as_str(), self.clock.now());
        match self.files.delete(&caller.organization, id, &audit).await? {
            FileDeletion::NotFound => Err(DomainError::not_found("file", id)),
            FileDeletion::InUse(references) => {
                let names: Vec<String> = references
                    .iter()
                    .map(|r| match r.snapshot_version {
                        None => format!("{} ({})", r.dataset_name, r.dataset_id),
                        Some(v) => format!("{} ({}) snapshot v{v}", r.dataset_name, r.dataset_id),
                    })
                    .collect();
                Err(DomainError::Conflict {
                    code: "file_in_use",
                    message: format!(
                        "file {id} is used by {}; remove it from them first",
                        names.join(", ")
                    ),
                })
            }
            FileDeletion::Deleted { orphaned_blob } => {
                // The record is gone, so these clean-ups only free space: a failure is logged
                // by the caller's tracing, never surfaced as a failed delete.
                if let Err(error) = self.index.delete_file(&caller.organization, id).await {
                    tracing::warn!(file = %id, %error, "index entries of a deleted file remain");
                }
                if let Some(sha256) = orphaned_blob
                    && let Err(error) = self.blobs.delete(&sha256).await
                {
                    tracing::warn!(file = %id, %error, "content of a deleted file remains");
                }
                Ok(())
            }
        }
    }
}
