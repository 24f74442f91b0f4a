//! What the batch domain needs from outside: a store for batches and their kept answers,
//! the files a batch reads and writes, and the endpoints its lines call.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest, Principal};

use crate::{Batch, BatchEnd, BatchEndpoint, BatchId, BatchStatus, LineResult};

/// Batches and the answers of their lines.
#[async_trait]
pub trait BatchStore: Send + Sync {
    /// Stores a new batch and its audit record together.
    async fn insert(&self, batch: &Batch, audit: &AuditRecord) -> Result<(), DomainError>;

    /// The organization's batch `id`, if there is one.
    async fn get(
        &self,
        organization: &OrganizationId,
        id: &BatchId,
    ) -> Result<Option<Batch>, DomainError>;

    /// The organization's batches, newest first, after `page.after`; up to `limit + 1`.
    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<BatchId>,
    ) -> Result<Vec<Batch>, DomainError>;

    /// Marks an active batch `cancelling` (a runner ends it between lines); the batch as it
    /// is afterwards, or `None` when the organization has no batch `id`.
    async fn request_cancel(
        &self,
        organization: &OrganizationId,
        id: &BatchId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<Batch>, DomainError>;

    /// Takes the oldest active batch whose lease is free or has lapsed, for `runner` until
    /// `lease_until`.
    async fn claim(
        &self,
        runner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Batch>, DomainError>;

    /// Extends `runner`'s lease; the batch's status, or `None` when the lease was lost.
    async fn renew(
        &self,
        id: &BatchId,
        runner: &str,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<BatchStatus>, DomainError>;

    /// Moves a batch `runner` holds to `status` (`in_progress` with its count of lines,
    /// `finalizing`), stamping the time; false when the lease was lost, or when the batch is
    /// being cancelled (a cancel is never overwritten).
    async fn advance(
        &self,
        id: &BatchId,
        runner: &str,
        status: BatchStatus,
        total: u32,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Keeps a line's answer and counts it, once: a line already kept is left as it is.
    /// False when `runner` no longer holds the batch.
    async fn record(
        &self,
        id: &BatchId,
        runner: &str,
        result: &LineResult,
    ) -> Result<bool, DomainError>;

    /// The answers kept so far, in no particular order.
    async fn results(&self, id: &BatchId) -> Result<Vec<LineResult>, DomainError>;

    /// Ends a batch `runner` holds: its last status, files and time; the lease is released
    /// and the kept answers are dropped (the files hold them). False when the lease was lost.
    async fn finish(&self, id: &BatchId, runner: &str, end: &BatchEnd)
    -> Result<bool, DomainError>;
}

/// Why a batch's input file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputFileError {
    /// The organization has no such file.
    NotFound,
    /// The file was not uploaded for batches (`purpose` `batch`).
    NotForBatches,
    Other(DomainError),
}

impl std::fmt::Display for InputFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotFound => f.write_str("the file was deleted"),
            Self::NotForBatches => f.write_str("the file is not a batch input"),
            Self::Other(error) => write!(f, "{error}"),
        }
    }
}

/// The files a batch reads its input from and writes its answers to (the knowledge
/// domain's files, on the owner's organization).
#[async_trait]
pub trait BatchFiles: Send + Sync {
    /// The input file's content.
    async fn input(&self, owner: &Principal, file_id: &str) -> Result<Vec<u8>, InputFileError>;

    /// Stores an output or error file (`purpose` `batch_output`); its id.
    async fn store_output(
        &self,
        owner: &Principal,
        name: &str,
        content: Vec<u8>,
    ) -> Result<String, DomainError>;
}

/// What an endpoint answered to one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineResponse {
    pub status_code: u16,
    pub body: Value,
}

/// The endpoints a batch's lines call, as the owner would have called them over HTTP (same
/// validation, scopes, budgets, usage), without HTTP.
#[async_trait]
pub trait LineExecutor: Send + Sync {
    /// The endpoint's answer, or `None` when the line cannot run here now (the process is
    /// shutting down): it is not kept, and runs again when the batch is next claimed.
    async fn execute(
        &self,
        owner: &Principal,
        endpoint: BatchEndpoint,
        body: Map<String, Value>,
    ) -> Option<LineResponse>;

    /// Whether the process is stopping for good: runners stop taking batches up.
    fn stopping(&self) -> bool {
        false
    }
}
