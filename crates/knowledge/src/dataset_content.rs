//! A dataset's whole content, for models that read it in full (`context` links) rather than
//! search it, and one file's chunks as the dataset holds them.

use tessera_kernel::{Caller, DomainError, Limit, OrganizationId, PageRequest};

use crate::{DatasetId, DatasetService, FileId, FileStatus, StoredChunk, StoredFile};

/// One chunk of a dataset's content and the file it is from.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetPassage {
    pub file: StoredFile,
    pub chunk: StoredChunk,
}

/// What of a dataset fits a token budget.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DatasetContent {
    /// File by file (the dataset's order), each file's chunks in document order.
    pub passages: Vec<DatasetPassage>,
    /// Tokens of the passages.
    pub tokens: u64,
    /// False when chunks were left out to stay within the budget.
    pub complete: bool,
}

impl DatasetService {
    /// The chunks of a file the dataset holds, in document order (none until it is
    /// processed); `NotFound` when the dataset does not hold it.
    pub async fn file_chunks(
        &self,
        caller: &Caller,
        dataset: &DatasetId,
        file: &FileId,
    ) -> Result<Vec<StoredChunk>, DomainError> {
        self.file(caller, dataset, file).await?;
        self.file_store().chunks(caller.organization(), file).await
    }

    /// The dataset's ready files, in the dataset's order (newest first); `None` when the
    /// organization has no such dataset.
    async fn ready_files(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Option<Vec<StoredFile>>, DomainError> {
        if self.store().get(organization, dataset).await?.is_none() {
            return Ok(None);
        }
        let limit = Limit::new(i64::from(Limit::MAX)).unwrap_or(Limit::DEFAULT);
        let mut files = Vec::new();
        let mut after = None;
        loop {
            let page = self
                .store()
                .files(
                    organization,
                    dataset,
                    Some(FileStatus::Ready),
                    &PageRequest { limit, after },
                )
                .await?;
            let full = page.len() >= limit.get() as usize;
            after = page.last().map(|entry| entry.file.id.clone());
            files.extend(page.into_iter().map(|entry| entry.file));
            if !full || after.is_none() {
                return Ok(Some(files));
            }
        }
    }

    /// Tokens of the dataset's ready content; `None` when the organization has no such
    /// dataset.
    pub async fn content_tokens(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
    ) -> Result<Option<u64>, DomainError> {
        let Some(files) = self.ready_files(organization, dataset).await? else {
            return Ok(None);
        };
        let mut tokens = 0;
        for file in files {
            let chunks = self.file_store().chunks(organization, &file.id).await?;
            tokens += chunks.iter().map(|c| u64::from(c.token_count)).sum::<u64>();
        }
        Ok(Some(tokens))
    }

    /// The dataset's ready content, chunk by chunk, as far as `max_tokens` allows; `None`
    /// when the organization has no such dataset, or it has expired (refused for use, as
    /// its search is).
    pub async fn content(
        &self,
        organization: &OrganizationId,
        dataset: &DatasetId,
        max_tokens: u64,
    ) -> Result<Option<DatasetContent>, DomainError> {
        let found = self.store().get(organization, dataset).await?;
        if found.is_none_or(|found| found.is_expired(self.now())) {
            return Ok(None);
        }
        let Some(files) = self.ready_files(organization, dataset).await? else {
            return Ok(None);
        };
        let mut content = DatasetContent {
            complete: true,
            ..DatasetContent::default()
        };
        for file in files {
            for chunk in self.file_store().chunks(organization, &file.id).await? {
                let tokens = u64::from(chunk.token_count);
                if content.tokens + tokens > max_tokens {
                    content.complete = false;
                    return Ok(Some(content));
                }
                content.tokens += tokens;
                content.passages.push(DatasetPassage {
                    file: file.clone(),
                    chunk,
                });
            }
        }
        Ok(Some(content))
    }
}
