//! Artifacts as they are stored: what extraction found in an answer, numbered as versions
//! of the same artifact within a chat, and the port and service that list and read them.

use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{CursorCodec, DomainError, Limit, OrganizationId, Page, PageRequest};

use crate::{ArtifactKind, Caller, ChatId, ChatStore, ExtractedArtifact, MessageId};

tessera_kernel::entity_id!(
    /// An artifact's id.
    ArtifactId,
    "art"
);

const ARTIFACT_LIST: &str = "artifacts";

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

/// Artifacts of the chats a caller sees.
#[derive(Clone)]
pub struct ArtifactService {
    store: Arc<dyn ArtifactStore>,
    /// The chats, to refuse listing the artifacts of one the caller does not see.
    chats: Arc<dyn ChatStore>,
    cursors: CursorCodec,
}

impl ArtifactService {
    pub fn new(
        store: Arc<dyn ArtifactStore>,
        chats: Arc<dyn ChatStore>,
        cursors: CursorCodec,
    ) -> Self {
        Self {
            store,
            chats,
            cursors,
        }
    }

    pub async fn get(&self, caller: &Caller, id: &ArtifactId) -> Result<Artifact, DomainError> {
        self.store
            .get(&caller.organization, id)
            .await?
            .filter(|artifact| caller.sees_owner(&artifact.owner))
            .ok_or_else(|| DomainError::not_found("artifact", id))
    }

    /// Newest first; of one chat when `chat_id` is given, which must be a chat the caller
    /// sees (deleted or not), or it is not found.
    pub async fn list(
        &self,
        caller: &Caller,
        chat_id: Option<ChatId>,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Artifact>, DomainError> {
        if let Some(chat) = &chat_id {
            self.chats
                .get(&caller.organization, chat)
                .await?
                .filter(|found| caller.sees_owner(&found.owner))
                .ok_or_else(|| DomainError::not_found("chat", chat))?;
        }
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<ArtifactId>(ARTIFACT_LIST, caller.organization.as_str(), c)
            })
            .transpose()?;
        let filter = ArtifactFilter {
            organization: caller.organization.clone(),
            owner: (!caller.sees_all).then(|| caller.subject.clone()),
            chat_id,
        };
        let rows = self
            .store
            .list(&filter, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(&filter).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |artifact| {
            self.cursors
                .encode(ARTIFACT_LIST, caller.organization.as_str(), &artifact.id)
        }))
    }
}
