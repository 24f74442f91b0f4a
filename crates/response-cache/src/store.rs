//! The storage port of cache policies: at most one per organization and model, each written
//! with its audit record in the same transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};

use crate::CachePolicySpec;

/// A model's cache policy as stored: as written (checked when it was written), with who last
/// wrote it and when.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCachePolicy {
    pub organization_id: OrganizationId,
    /// A catalog model's id or one of the organization's own models.
    pub model_id: String,
    pub spec: CachePolicySpec,
    pub updated_at: DateTime<Utc>,
    /// The actor's name (a user's subject, a client's id, an operator).
    pub updated_by: String,
}

/// Cache policies of organizations' models. Each organization sees its own only.
#[async_trait]
pub trait CachePolicyStore: Send + Sync {
    async fn get(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<StoredCachePolicy>, DomainError>;

    /// The organization's policies, by model id.
    async fn list(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredCachePolicy>, DomainError>;

    /// Inserts the policy or replaces the one of the same organization and model, and
    /// writes `audit`, in one transaction.
    async fn put(&self, policy: &StoredCachePolicy, audit: &AuditRecord)
    -> Result<(), DomainError>;

    /// Deletes the policy and writes `audit`; false (and no record) when there was none.
    async fn delete(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;
}
