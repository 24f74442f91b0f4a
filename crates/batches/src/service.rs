//! Creating, reading, listing and cancelling batches. A new batch's input is read and
//! checked here, before it is stored: a refused input makes a `failed` batch that names
//! every refused line (as OpenAI reports it), never a batch that fails halfway.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, Clock, DomainError, Metadata, Page, PageRequest, Principal};

use crate::{
    Batch, BatchEndpoint, BatchFiles, BatchId, BatchProblem, BatchStatus, BatchStore,
    COMPLETION_WINDOW, InputFileError, RequestCounts, batch::window_length, parse_input,
};

/// What a new batch is made of, as the request named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBatch {
    pub input_file_id: String,
    pub endpoint: BatchEndpoint,
    pub metadata: Metadata,
}

/// Batches of organizations.
#[derive(Clone)]
pub struct BatchService {
    store: Arc<dyn BatchStore>,
    files: Arc<dyn BatchFiles>,
    clock: Arc<dyn Clock>,
}

impl BatchService {
    pub fn new(
        store: Arc<dyn BatchStore>,
        files: Arc<dyn BatchFiles>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            files,
            clock,
        }
    }

    /// Checks the input and stores the batch: `in_progress` with its count of lines, or
    /// `failed` with what was refused. A missing file is a 404 naming `input_file_id`, a
    /// file not uploaded for batches a validation error.
    pub async fn create(&self, owner: &Principal, new: NewBatch) -> Result<Batch, DomainError> {
        let content = match self.files.input(owner, &new.input_file_id).await {
            Ok(content) => content,
            Err(InputFileError::NotFound) => {
                return Err(DomainError::not_found("file", &new.input_file_id));
            }
            Err(InputFileError::NotForBatches) => {
                return Err(DomainError::invalid(
                    ["body".into(), "input_file_id".into()],
                    "the file was not uploaded with purpose `batch`",
                    "value_error",
                ));
            }
            Err(InputFileError::Other(error)) => return Err(error),
        };
        let now = self.clock.now();
        let mut batch = Batch {
            id: BatchId::generate(),
            organization: owner.organization_id.clone(),
            owner: Principal {
                origin: None,
                ..owner.clone()
            },
            endpoint: new.endpoint,
            input_file_id: new.input_file_id,
            completion_window: COMPLETION_WINDOW.to_owned(),
            metadata: new.metadata,
            status: BatchStatus::InProgress,
            errors: Vec::new(),
            output_file_id: None,
            error_file_id: None,
            counts: RequestCounts::default(),
            created_at: now,
            in_progress_at: Some(now),
            expires_at: now + window_length(),
            finalizing_at: None,
            completed_at: None,
            failed_at: None,
            expired_at: None,
            cancelling_at: None,
            cancelled_at: None,
        };
        match parse_input(&content, new.endpoint) {
            Ok(lines) => batch.counts.total = u32::try_from(lines.len()).unwrap_or(u32::MAX),
            Err(problems) => fail(&mut batch, problems, now),
        }
        let audit = AuditRecord::of(owner, "batch.create", "batch", batch.id.as_str(), now);
        self.store.insert(&batch, &audit).await?;
        Ok(batch)
    }

    pub async fn get(&self, owner: &Principal, id: &BatchId) -> Result<Batch, DomainError> {
        self.store
            .get(&owner.organization_id, id)
            .await?
            .ok_or_else(|| DomainError::not_found("batch", id))
    }

    /// The organization's batches, newest first.
    pub async fn list(
        &self,
        owner: &Principal,
        page: PageRequest<BatchId>,
    ) -> Result<Page<Batch>, DomainError> {
        let rows = self.store.list(&owner.organization_id, &page).await?;
        Ok(Page::from_overfetch(rows, page.limit, None, |batch| {
            tessera_kernel::Cursor::from_encoded(batch.id.to_string())
        }))
    }

    /// Asks for a batch to stop: `cancelling` until its runner ends it between lines
    /// (`cancelled`, with the answers so far in its files). A batch already ended is
    /// answered as it is.
    pub async fn cancel(&self, owner: &Principal, id: &BatchId) -> Result<Batch, DomainError> {
        let now = self.clock.now();
        let audit = AuditRecord::of(owner, "batch.cancel", "batch", id.as_str(), now);
        self.store
            .request_cancel(&owner.organization_id, id, now, &audit)
            .await?
            .ok_or_else(|| DomainError::not_found("batch", id))
    }
}

fn fail(batch: &mut Batch, problems: Vec<BatchProblem>, at: DateTime<Utc>) {
    batch.status = BatchStatus::Failed;
    batch.errors = problems;
    batch.in_progress_at = None;
    batch.failed_at = Some(at);
}
