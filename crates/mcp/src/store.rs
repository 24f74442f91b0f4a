//! The storage port of MCP servers and their links to models.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{McpServer, McpServerId, RemoteTool, ToolLink};

/// MCP servers, their cached tools, and which user models link them. A link disappears with
/// its server (and with its model: the store deletes a model's links with the model).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait McpServerStore: Send + Sync {
    /// Inserts the server and, in the same transaction, its audit record.
    async fn insert(&self, server: &McpServer, audit: &AuditRecord) -> Result<(), DomainError>;

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
    ) -> Result<Option<McpServer>, DomainError>;

    /// Newest first, at most `limit + 1`.
    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<McpServerId>,
    ) -> Result<Vec<McpServer>, DomainError>;

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError>;

    /// Replaces the stored server (all but id, organization, creator and creation time) and
    /// writes `audit`, in one conditional write: only while the stored server's `updated_at`
    /// is still `read_at` (the version the change was made from). False (and no record) when
    /// the organization has no such server or it has changed since.
    async fn update(
        &self,
        server: &McpServer,
        read_at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// Keeps what the server said it offers; false when there is no such server.
    async fn save_tools(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
        tools: &[RemoteTool],
        fetched_at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Deletes the server and its links, and writes `audit`; false (and no record) when the
    /// organization has no such server.
    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &McpServerId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// Links the server to the model (the caller has checked both exist); false (and no
    /// record) when they were linked already.
    async fn link(
        &self,
        organization: &OrganizationId,
        link: &ToolLink,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// False (and no record) when there was no such link.
    async fn unlink(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        server: &McpServerId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// The model's links, oldest first.
    async fn links(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Vec<ToolLink>, DomainError>;
}
