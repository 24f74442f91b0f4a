//! Artifacts as they are stored: what extraction found in an answer, numbered as versions
//! of the same artifact within a chat, and the port that lists and reads them (the service
//! over it is `artifact_service`).

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId, PageRequest};

use crate::{ArtifactKind, ChatId, ExtractedArtifact, MessageId};

tessera_kernel::entity_id!(
    /// An artifact's id.
    ArtifactId,
    "art"
);

/// Rich content found in an assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub id: ArtifactId,
    pub organization_id: OrganizationId,
    /// The chat's owner: artifacts are visible to whoever sees the chat.
    pub owner: String,
    pub chat_id: ChatId,
    pub message_id: MessageId,
    pub kind: ArtifactKind,
    pub language: Option<String>,
    pub title: String,
    /// Same identifier within a chat = the same artifact, revised.
    pub identifier: String,
    /// 1 for the first appearance; each later message revising it adds one.
    pub version: u32,
    pub content: String,
    pub created_at: DateTime<Utc>,
}

/// Numbers extracted artifacts as versions: one after the chat's latest version of the same
/// identifier (`latest`), or 1.
pub fn versioned(
    extracted: Vec<ExtractedArtifact>,
    latest: &HashMap<String, u32>,
    template: &Artifact,
) -> Vec<Artifact> {
    extracted
        .into_iter()
        .map(|found| Artifact {
            id: ArtifactId::generate(),
            version: latest.get(&found.identifier).map_or(1, |v| v + 1),
            kind: found.kind,
            language: found.language,
            title: found.title,
            identifier: found.identifier,
            content: found.content,
            ..template.clone()
        })
        .collect()
}

/// Which artifacts a list shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactFilter {
    pub organization: OrganizationId,
    /// Only artifacts of this principal's chats; `None` for every chat of the organization.
    pub owner: Option<String>,
    pub chat_id: Option<ChatId>,
}

/// Reading stored artifacts (they are written with their message, by `ChatStore`).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ArtifactId,
    ) -> Result<Option<Artifact>, DomainError>;

    /// Newest first (by id, descending), after `page.after`, at most
    /// `page.limit.overfetch()`.
    async fn list(
        &self,
        filter: &ArtifactFilter,
        page: &PageRequest<ArtifactId>,
    ) -> Result<Vec<Artifact>, DomainError>;

    async fn count(&self, filter: &ArtifactFilter) -> Result<u64, DomainError>;
}
