//! Adding several files to a dataset at once, as the dataset service offers it: a new
//! dataset made with its files, and batches. Every file is checked before any is added; a
//! batch records which files it added, reports their progress, and cancelling it takes those
//! still processing out of the dataset.

use std::collections::HashSet;

use tessera_kernel::{Caller, DomainError, PageRequest};

use crate::{
    Attributes, ChunkingSettings, Dataset, DatasetFile, DatasetId, DatasetService, FileBatch,
    FileBatchId, FileBatchProgress, FileId, FileStatus, MAX_BATCH_FILES, NewDataset,
};

impl DatasetService {
    /// Adds `files` to the dataset (each once, in order) with `attributes`, as one batch,
    /// each cut with `chunking` when given ([`DatasetService::add_file_cut`]). Nothing is
    /// added unless the dataset and every file are the organization's and every file can
    /// take the sizes.
    pub async fn add_batch(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        files: Vec<FileId>,
        attributes: &Attributes,
        chunking: Option<ChunkingSettings>,
    ) -> Result<FileBatchProgress, DomainError> {
        let mut seen = HashSet::new();
        let files: Vec<FileId> = files
            .into_iter()
            .filter(|file| seen.insert(file.clone()))
            .collect();
        if files.is_empty() || files.len() > MAX_BATCH_FILES {
            return Err(DomainError::invalid(
                ["body".into(), "file_ids".into()],
                format!("a batch adds 1 to {MAX_BATCH_FILES} distinct files"),
                "too_long",
            ));
        }
        if let Some(chunking) = &chunking {
            self.check_chunking(chunking)?;
        }
        self.usable(caller, dataset).await?;
        self.check_files(caller, &files).await?;
        if let Some(chunking) = chunking {
            for file in &files {
                self.check_rechunk(caller, Some(dataset), file, chunking)
                    .await?;
            }
        }
        for file in &files {
            if let Some(chunking) = chunking {
                self.rechunk(caller, dataset, file, chunking).await?;
            }
            self.add_file(caller, dataset, file).await?;
            if !attributes.is_empty() {
                self.set_attributes(caller, dataset, file, attributes)
                    .await?;
            }
        }
        let batch = FileBatch {
            id: FileBatchId::generate(),
            organization: caller.organization().clone(),
            dataset: dataset.clone(),
            files,
            created_at: self.now(),
            cancelled_at: None,
        };
        self.store().insert_batch(&batch).await?;
        self.progress(caller, batch).await
    }

    /// Creates a dataset holding `files`, each cut with `chunking` when given. Nothing is
    /// created unless every file is the organization's and can take the sizes.
    pub async fn create_with_files(
        &self,
        caller: &Caller,
        new: NewDataset,
        files: &[FileId],
        chunking: Option<ChunkingSettings>,
    ) -> Result<Dataset, DomainError> {
        if let Some(chunking) = &chunking {
            self.check_chunking(chunking)?;
        }
        self.check_files(caller, files).await?;
        if let Some(chunking) = chunking {
            for file in files {
                self.check_rechunk(caller, None, file, chunking).await?;
            }
        }
        let mut dataset = self.create(caller, new).await?;
        for file in files {
            (dataset, _) = self
                .add_file_cut(caller, &dataset.id, file, chunking)
                .await?;
        }
        Ok(dataset)
    }

    /// `NotFound` for the first of `files` that is not the organization's.
    async fn check_files(&self, caller: &Caller, files: &[FileId]) -> Result<(), DomainError> {
        for file in files {
            if self
                .file_store()
                .get(caller.organization(), file)
                .await?
                .is_none()
            {
                return Err(DomainError::not_found("file", file));
            }
        }
        Ok(())
    }

    /// The batch with what became of its files.
    pub async fn batch(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        id: &FileBatchId,
    ) -> Result<FileBatchProgress, DomainError> {
        let batch = self.find_batch(caller, dataset, id).await?;
        self.progress(caller, batch).await
    }

    /// Cancels the batch: its files still processing leave the dataset (the others stay).
    /// Cancelling again changes nothing.
    pub async fn cancel_batch(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        id: &FileBatchId,
    ) -> Result<FileBatchProgress, DomainError> {
        let batch = self.find_batch(caller, dataset, id).await?;
        if batch.cancelled_at.is_none() {
            for file in &batch.files {
                let held = self
                    .store()
                    .dataset_file(caller.organization(), dataset, file)
                    .await?;
                if held.is_some_and(|entry| entry.file.status == FileStatus::Processing) {
                    self.remove_file(caller, dataset, file).await?;
                }
            }
            self.store()
                .cancel_batch(caller.organization(), dataset, id, self.now())
                .await?;
        }
        self.batch(caller, dataset, id).await
    }

    /// The batch's files the dataset still holds (of `status` only, when given), newest
    /// file first, after `page.after` (the page's files, and whether more follow). Files are
    /// filtered as they are read, so a page is full.
    pub async fn batch_files(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        id: &FileBatchId,
        status: Option<FileStatus>,
        page: PageRequest<FileId>,
    ) -> Result<(Vec<DatasetFile>, bool), DomainError> {
        let mut batch = self.find_batch(caller, dataset, id).await?;
        batch.files.sort_unstable_by(|left, right| right.cmp(left));
        let mut rows = Vec::new();
        let limit = page.limit.get() as usize;
        let after = |file: &&FileId| page.after.as_ref().is_none_or(|after| *file < after);
        for file in batch.files.iter().filter(after) {
            if rows.len() > limit {
                break;
            }
            if let Some(entry) = self
                .store()
                .dataset_file(caller.organization(), dataset, file)
                .await?
                .filter(|entry| status.is_none_or(|status| entry.file.status == status))
            {
                rows.push(entry);
            }
        }
        let more = rows.len() > limit;
        rows.truncate(limit);
        Ok((rows, more))
    }

    async fn find_batch(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        id: &FileBatchId,
    ) -> Result<FileBatch, DomainError> {
        self.store()
            .batch(caller.organization(), dataset, id)
            .await?
            .ok_or_else(|| DomainError::not_found("file_batch", id))
    }

    async fn progress(
        &self,
        caller: &Caller,
        batch: FileBatch,
    ) -> Result<FileBatchProgress, DomainError> {
        let counts = self
            .store()
            .file_counts(
                caller.organization(),
                &batch.dataset,
                Some(batch.files.clone()),
            )
            .await?
            .ok_or_else(|| DomainError::not_found("dataset", &batch.dataset))?;
        Ok(FileBatchProgress { batch, counts })
    }
}
