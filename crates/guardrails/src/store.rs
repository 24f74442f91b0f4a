//! The storage port of guardrail policies: one per organization and one per model of it,
//! each written with its audit record in the same transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};

use crate::PolicySpec;

/// Which requests a stored policy applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PolicyScope {
    /// Every completion of the organization.
    Organization,
    /// Completions of this model (a catalog model's id or one of the organization's own),
    /// refining the organization's policy.
    Model(String),
}

impl PolicyScope {
    /// The scope's name as stored (`organization` or `model`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Organization => "organization",
            Self::Model(_) => "model",
        }
    }

    /// The model's id, empty for the organization's policy (as stored).
    pub fn model_id(&self) -> &str {
        match self {
            Self::Organization => "",
            Self::Model(id) => id,
        }
    }
}

/// A policy as stored: as written (checked when it was written, checked again when it is
/// compiled), with who last wrote it and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPolicy {
    pub organization_id: OrganizationId,
    pub scope: PolicyScope,
    pub spec: PolicySpec,
    pub updated_at: DateTime<Utc>,
    /// The actor's name (a user's subject, a client's id, an operator).
    pub updated_by: String,
}

/// Guardrail policies of organizations. Each organization sees its own only.
#[async_trait]
pub trait GuardrailPolicyStore: Send + Sync {
    async fn get(
        &self,
        organization: &OrganizationId,
        scope: &PolicyScope,
    ) -> Result<Option<StoredPolicy>, DomainError>;

    /// Inserts the policy or replaces the one of the same organization and scope, and
    /// writes `audit`, in one transaction.
    async fn put(&self, policy: &StoredPolicy, audit: &AuditRecord) -> Result<(), DomainError>;

    /// Deletes the policy and writes `audit`; false (and no record) when there was none.
    async fn delete(
        &self,
        organization: &OrganizationId,
        scope: &PolicyScope,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// The organization's model policies, by model id.
    async fn list_models(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredPolicy>, DomainError>;
}
