//! The one thing the MCP domain asks of the models its servers are linked to.

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};

/// The organization's own models, which servers' tools are linked to.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait LinkableModels: Send + Sync {
    /// Whether the organization has a model with this id.
    async fn exists(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<bool, DomainError>;
}
