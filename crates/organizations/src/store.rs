use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId, PageRequest};

use crate::Organization;

/// Persistence of organizations. Adapters map their own failures into `DomainError`
/// (`Unavailable` when the database cannot be reached, `Conflict` on a duplicate id).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait OrganizationStore: Send + Sync {
    async fn insert(&self, organization: &Organization) -> Result<(), DomainError>;

    async fn get(&self, id: &OrganizationId) -> Result<Option<Organization>, DomainError>;

    /// Organizations ordered by id (creation order), at most `page.limit.overfetch()` of them,
    /// starting after `page.after`.
    async fn list(
        &self,
        page: &PageRequest<OrganizationId>,
    ) -> Result<Vec<Organization>, DomainError>;

    async fn count(&self) -> Result<u64, DomainError>;
}
