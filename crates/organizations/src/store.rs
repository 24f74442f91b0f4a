use async_trait::async_trait;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::Organization;

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

    /// Organizations ordered by id (creation order), at most `page.limit.overfetch()` of them,
    /// starting after `page.after`.
    async fn list(
        &self,
        page: &PageRequest<OrganizationId>,
    ) -> Result<Vec<Organization>, DomainError>;

    async fn count(&self) -> Result<u64, DomainError>;
}
