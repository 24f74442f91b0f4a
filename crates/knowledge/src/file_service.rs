//! Files as the API offers them: upload, read, list, download and delete, within the
//! caller's organization. An upload is queued for processing when it is a document, or an
//! image the service reads by OCR for an organization that opted in
//! ([`FileService::with_image_reading`]); any other image is `ready` at once.

use std::sync::Arc;

use futures_util::stream::BoxStream;
use tessera_kernel::{
    Caller, Clock, CursorCodec, DomainError, Limit, OrganizationId, Page, PageRequest,
};

use crate::{
    BlobError, BlobStore, FileDeletion, FileFilter, FileFormat, FileId, FilePurpose, FileReady,
    FileStatus, FileStore, ImageReadingPolicy, StoredFile, Upload, UploadError, VectorIndex,
    image_reading::ImageReading, upload,
};

const FILE_LIST: &str = "files";

/// Files of organizations.
#[derive(Clone)]
pub struct FileService {
    files: Arc<dyn FileStore>,
    blobs: Arc<dyn BlobStore>,
    index: Arc<dyn VectorIndex>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    /// Which images are read by OCR; `None`: none (no OCR here).
    image_reading: Option<ImageReading>,
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
            image_reading: None,
        }
    }

    /// Processes uploaded images of `formats` (those the OCR engine reads) like documents for
    /// the organizations `policy` says opted in; other images stay `ready` at once. Without
    /// this (no OCR here), every image does.
    pub fn with_image_reading(
        mut self,
        policy: Arc<dyn ImageReadingPolicy>,
        formats: impl IntoIterator<Item = FileFormat>,
    ) -> Self {
        let formats = formats
            .into_iter()
            .filter(|format| format.is_image())
            .collect();
        self.image_reading = Some(ImageReading { policy, formats });
        self
    }

    pub(crate) fn file_store(&self) -> &dyn FileStore {
        self.files.as_ref()
    }

    /// Stores an upload and, for documents and images read by OCR, queues its processing:
    /// the record answers at once with `processing`. Other images need no processing and are
    /// `ready` at once.
    pub async fn upload(
        &self,
        caller: &Caller,
        upload: Upload<'_>,
    ) -> Result<StoredFile, UploadError> {
        self.receive(caller, &upload.file_name, upload.purpose, upload.content)
            .await
    }

    /// Stores content the service made (a batch's output), checked as an upload would be;
    /// unlike [`Self::upload`] its future is `Send`.
    pub async fn store_made(
        &self,
        caller: &Caller,
        file_name: &str,
        purpose: FilePurpose,
        content: Vec<u8>,
    ) -> Result<StoredFile, UploadError> {
        let content = futures_util::stream::iter([Ok(content)]);
        self.receive(caller, file_name, Some(purpose), content)
            .await
    }

    async fn receive(
        &self,
        caller: &Caller,
        file_name: &str,
        purpose: Option<FilePurpose>,
        content: impl futures_util::Stream<Item = Result<Vec<u8>, UploadError>> + Unpin,
    ) -> Result<StoredFile, UploadError> {
        let name = upload::clean_file_name(file_name)?;
        let format = FileFormat::from_file_name(&name)?;
        // Decided before the content is received: a refusal stores nothing.
        let processed = purpose.is_none_or(FilePurpose::is_processed)
            && ImageReading::processes(self.image_reading.as_ref(), caller.organization(), format)
                .await
                .map_err(|error| UploadError::Unavailable(error.to_string()))?;
        let blob = upload::receive(format, content, self.blobs.as_ref()).await?;
        let now = self.clock.now();
        let file = StoredFile {
            id: FileId::generate(),
            organization: caller.organization().clone(),
            created_by: caller.subject().to_owned(),
            name,
            format,
            size: blob.size,
            sha256: blob.sha256,
            status: if processed {
                FileStatus::Processing
            } else {
                FileStatus::Ready
            },
            progress: if processed { 0 } else { 100 },
            error: None,
            chunk_count: 0,
            purpose,
            chunking: None,
            created_at: now,
            updated_at: now,
        };
        let audit = caller.audit("file.upload", "file", file.id.as_str(), now);
        // An image not read, or a batch file, has nothing to process: it is ready as stored.
        let ready = (!processed).then(|| FileReady::of(&file, 0, now));
        self.files
            .insert(&file, processed, ready, &audit)
            .await
            .map_err(|error| UploadError::Interrupted(format!("the file record: {error}")))?;
        Ok(file)
    }

    pub async fn get(&self, caller: &Caller, id: &FileId) -> Result<StoredFile, DomainError> {
        self.find(caller.organization(), id)
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
        caller: &Caller,
        status: Option<FileStatus>,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<StoredFile>, DomainError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<FileId>(FILE_LIST, caller.organization().as_str(), c)
            })
            .transpose()?;
        self.list_after(caller, status, None, PageRequest { limit, after })
            .await
    }

    /// Newest first, from the file after `page.after` (OpenAI's `after` names a file, not a
    /// cursor); `status` and `purpose` filter.
    pub async fn list_after(
        &self,
        caller: &Caller,
        status: Option<FileStatus>,
        purpose: Option<FilePurpose>,
        page: PageRequest<FileId>,
    ) -> Result<Page<StoredFile>, DomainError> {
        let filter = FileFilter {
            organization: caller.organization().clone(),
            status,
            purpose,
        };
        let rows = self.files.list(&filter, &page).await?;
        let total = self.files.count(&filter).await?;
        Ok(Page::from_overfetch(
            rows,
            page.limit,
            Some(total),
            |file| {
                self.cursors
                    .encode(FILE_LIST, caller.organization().as_str(), &file.id)
            },
        ))
    }

    /// Records what an OpenAI client uploaded the file for, when its form named the purpose
    /// after the content. A purpose that is not processed (a batch's input) also stops the
    /// file's processing: it is ready as stored.
    pub async fn set_purpose(
        &self,
        caller: &Caller,
        id: &FileId,
        purpose: FilePurpose,
    ) -> Result<(), DomainError> {
        if self
            .files
            .set_purpose(caller.organization(), id, purpose)
            .await?
        {
            Ok(())
        } else {
            Err(DomainError::not_found("file", id))
        }
    }

    /// The file and its content in pieces.
    pub async fn content(
        &self,
        caller: &Caller,
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
    pub async fn delete(&self, caller: &Caller, id: &FileId) -> Result<(), DomainError> {
        let audit = caller.audit("file.delete", "file", id.as_str(), self.clock.now());
        match self.files.delete(caller.organization(), id, &audit).await? {
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
                if let Err(error) = self.index.delete_file(caller.organization(), id).await {
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use chrono::{TimeZone, Utc};
    use futures_util::{StreamExt, stream};
    use tessera_kernel::ManualClock;

    use super::*;
    use crate::memory::{InMemoryKnowledgeStore, KnowledgeEvent};
    use crate::{BlobRef, BlobWriter, MockImageReadingPolicy, NoIndex};

    /// Keeps the last upload's bytes (all a test reads back).
    #[derive(Default)]
    struct KeptBlobs(Arc<Mutex<Vec<u8>>>);

    struct KeptWriter(Arc<Mutex<Vec<u8>>>, Vec<u8>);

    #[async_trait::async_trait]
    impl BlobWriter for KeptWriter {
        async fn write(&mut self, piece: &[u8]) -> Result<(), BlobError> {
            self.1.extend_from_slice(piece);
            Ok(())
        }
        async fn commit(self: Box<Self>) -> Result<BlobRef, BlobError> {
            let size = self.1.len() as u64;
            *self.0.lock().unwrap() = self.1;
            Ok(BlobRef {
                sha256: "a".repeat(64),
                size,
            })
        }
    }

    #[async_trait::async_trait]
    impl BlobStore for KeptBlobs {
        async fn writer(&self) -> Result<Box<dyn BlobWriter>, BlobError> {
            Ok(Box::new(KeptWriter(self.0.clone(), Vec::new())))
        }
        async fn read(&self, _: &str) -> Result<Vec<u8>, BlobError> {
            Ok(self.0.lock().unwrap().clone())
        }
        async fn stream(
            &self,
            _: &str,
        ) -> Result<BoxStream<'static, Result<Vec<u8>, BlobError>>, BlobError> {
            Err(BlobError::Io("not used".into()))
        }
        async fn delete(&self, _: &str) -> Result<(), BlobError> {
            Ok(())
        }
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR the rest";
    const GIF: &[u8] = b"GIF89a\x01\0\x01\0 the rest";

    fn caller() -> Caller {
        Caller::operator("org_reads".parse().unwrap(), "alice")
    }

    fn service(store: Arc<InMemoryKnowledgeStore>) -> FileService {
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 28, 9, 0, 0).unwrap());
        FileService::new(
            store,
            Arc::new(KeptBlobs::default()),
            Arc::new(NoIndex),
            Arc::new(clock),
            CursorCodec::new([3; 32]),
        )
    }

    /// A policy that must answer `answer` exactly `times` times.
    fn policy(times: usize, answer: Result<bool, DomainError>) -> Arc<dyn ImageReadingPolicy> {
        let mut policy = MockImageReadingPolicy::new();
        policy
            .expect_reads_images()
            .times(times)
            .returning(move |organization| {
                assert_eq!(organization.as_str(), "org_reads");
                answer.clone()
            });
        Arc::new(policy)
    }

    async fn upload(
        files: &FileService,
        name: &str,
        content: &[u8],
    ) -> Result<StoredFile, UploadError> {
        let content = content.to_vec();
        files
            .upload(
                &caller(),
                Upload {
                    file_name: name.to_owned(),
                    purpose: None,
                    content: stream::iter([Ok(content)]).boxed_local(),
                },
            )
            .await
    }

    /// Whether a processing job is queued (claiming it, so at most one per test).
    async fn queued(store: &InMemoryKnowledgeStore) -> bool {
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 10, 0, 0).unwrap();
        store
            .claim_job("worker", now, now + chrono::Duration::minutes(2))
            .await
            .unwrap()
            .is_some()
    }

    fn stored_ready(file: &StoredFile) {
        assert_eq!(
            (file.status, file.progress, file.chunk_count),
            (FileStatus::Ready, 100, 0),
            "{file:?}"
        );
    }

    #[tokio::test]
    async fn without_ocr_images_are_ready_at_once() {
        let store = Arc::new(InMemoryKnowledgeStore::new());
        let file = upload(&service(store.clone()), "scan.png", PNG)
            .await
            .unwrap();
        stored_ready(&file);
        assert!(!queued(&store).await);
        assert!(matches!(
            store.events().as_slice(),
            [KnowledgeEvent::FileReady(ready)] if ready.file == file.id
        ));
    }

    #[tokio::test]
    async fn an_organization_that_opted_in_has_its_images_processed() {
        let store = Arc::new(InMemoryKnowledgeStore::new());
        let files = service(store.clone())
            .with_image_reading(policy(1, Ok(true)), [FileFormat::Png, FileFormat::Jpeg]);
        let file = upload(&files, "scan.png", PNG).await.unwrap();
        assert_eq!((file.status, file.progress), (FileStatus::Processing, 0));
        assert!(queued(&store).await);
        assert!(store.events().is_empty(), "ready only once processed");
    }

    #[tokio::test]
    async fn an_organization_that_did_not_opt_in_keeps_its_images_as_they_are() {
        let store = Arc::new(InMemoryKnowledgeStore::new());
        let files = service(store.clone())
            .with_image_reading(policy(1, Ok(false)), [FileFormat::Png, FileFormat::Jpeg]);
        stored_ready(&upload(&files, "scan.png", PNG).await.unwrap());
        assert!(!queued(&store).await);
    }

    #[tokio::test]
    async fn formats_the_engine_does_not_read_and_documents_do_not_ask_the_policy() {
        let store = Arc::new(InMemoryKnowledgeStore::new());
        // The engine reads PNG and JPEG only (a Tesseract without GIF support).
        let files = service(store.clone())
            .with_image_reading(policy(0, Ok(true)), [FileFormat::Png, FileFormat::Jpeg]);
        stored_ready(&upload(&files, "animation.gif", GIF).await.unwrap());
        assert!(!queued(&store).await);
        let document = upload(&files, "notes.md", b"# Notes\n\nText.")
            .await
            .unwrap();
        assert_eq!(document.status, FileStatus::Processing);
        assert!(queued(&store).await);
    }

    #[tokio::test]
    async fn an_unanswered_policy_refuses_the_upload_and_stores_nothing() {
        let store = Arc::new(InMemoryKnowledgeStore::new());
        let files = service(store.clone()).with_image_reading(
            policy(
                1,
                Err(DomainError::Unavailable {
                    message: "the database did not answer".into(),
                }),
            ),
            [FileFormat::Png],
        );
        let refused = upload(&files, "scan.png", PNG).await.unwrap_err();
        assert!(
            matches!(&refused, UploadError::Unavailable(reason) if reason.contains("the database did not answer")),
            "{refused:?}"
        );
        let listed = files
            .list(&caller(), None, Limit::new(10).unwrap(), None)
            .await
            .unwrap();
        assert!(listed.items.is_empty());
        assert!(store.audit_records().is_empty());
    }

    #[tokio::test]
    async fn only_image_formats_are_kept_as_readable() {
        let store = Arc::new(InMemoryKnowledgeStore::new());
        let files = service(store).with_image_reading(
            policy(0, Ok(true)),
            [FileFormat::Pdf, FileFormat::Png, FileFormat::Webp],
        );
        let formats = files
            .image_reading
            .as_ref()
            .map(|reading| reading.formats.clone());
        assert_eq!(formats, Some(vec![FileFormat::Png, FileFormat::Webp]));
    }
}
