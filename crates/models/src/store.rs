use async_trait::async_trait;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{ModelId, UserModel};

/// Persistence of user models. Every method is scoped to one organization: another
/// organization's model is not found. Every change comes with its audit record, written in
/// the same transaction, and not at all when nothing changed.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ModelStore: Send + Sync {
    async fn insert(&self, model: &UserModel, audit: &AuditRecord) -> Result<(), DomainError>;

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
    ) -> Result<Option<UserModel>, DomainError>;

    /// The organization's models ordered by id, at most `page.limit.overfetch()`.
    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ModelId>,
    ) -> Result<Vec<UserModel>, DomainError>;

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError>;

    /// Saves every field but id, organization and created_at; false when the model is not
    /// the organization's (`model.organization_id`).
    async fn update(&self, model: &UserModel, audit: &AuditRecord) -> Result<bool, DomainError>;

    /// False when the model is not the organization's.
    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;
}
