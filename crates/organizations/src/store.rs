use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{Organization, OrganizationChange};

/// Persistence of organizations. Adapters map their own failures into `DomainError`
/// (`Unavailable` when the database cannot be reached, `Conflict` on a duplicate id).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait OrganizationStore: Send + Sync {
    /// Inserts the organization and, in the same transaction, the audit records of its
    /// creation (the service always passes one; test fixtures may pass none).
    async fn insert(
        &self,
        organization: &Organization,
        audit: &[AuditRecord],
    ) -> Result<(), DomainError>;

    async fn get(&self, id: &OrganizationId) -> Result<Option<Organization>, DomainError>;

    /// Applies `change` to the organization `id` and sets its `updated_at`, writing `audit`
    /// in the same transaction; the organization as changed, or `None` (nothing written)
    /// when there is no such organization. Settings the change leaves `None` keep their
    /// values, as do the name, the plan and `created_at`.
    async fn update(
        &self,
        id: &OrganizationId,
        change: &OrganizationChange,
        updated_at: DateTime<Utc>,
        audit: &[AuditRecord],
    ) -> Result<Option<Organization>, DomainError>;

    /// Organizations ordered by id (creation order), at most `page.limit.overfetch()` of them,
    /// starting after `page.after`.
    async fn list(
        &self,
        page: &PageRequest<OrganizationId>,
    ) -> Result<Vec<Organization>, DomainError>;

    async fn count(&self) -> Result<u64, DomainError>;
}
