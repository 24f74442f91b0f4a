//! The port the audit log is stored behind.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditEventId, AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::AuditFilter;

/// Whose events a read covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditScope {
    /// One organization's (what its administrators see).
    Organization(OrganizationId),
    /// Every organization's, and the refused credentials of no known organization
    /// (operators only).
    All,
}

/// Persistence of audit events. Events are appended, never changed; only retention deletes
/// them. Domain stores write the events of their changes themselves, inside the changes'
/// transactions; `insert` is for events that stand alone.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait AuditEventStore: Send + Sync {
    async fn insert(&self, record: &AuditRecord) -> Result<(), DomainError>;

    /// Events of `scope` that match `filter`, newest first (by id), with ids below
    /// `page.after` when set, at most `page.limit.overfetch()`.
    async fn list(
        &self,
        scope: &AuditScope,
        filter: &AuditFilter,
        page: &PageRequest<AuditEventId>,
    ) -> Result<Vec<AuditRecord>, DomainError>;

    /// How many events of `scope` match `filter`.
    async fn count(&self, scope: &AuditScope, filter: &AuditFilter) -> Result<u64, DomainError>;

    /// Deletes the events that occurred before `before`; how many.
    async fn delete_before(&self, before: DateTime<Utc>) -> Result<u64, DomainError>;
}
