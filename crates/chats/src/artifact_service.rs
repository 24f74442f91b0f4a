//! Listing and reading the artifacts of the chats a caller sees.

use std::sync::Arc;

use tessera_kernel::{Caller, CursorCodec, DomainError, Limit, Page, PageRequest};

use crate::{Artifact, ArtifactFilter, ArtifactId, ArtifactStore, ChatId, ChatStore};

const ARTIFACT_LIST: &str = "artifacts";

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
            .get(caller.organization(), id)
            .await?
            .filter(|artifact| crate::caller::sees_owner(caller, &artifact.owner))
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
                .get(caller.organization(), chat)
                .await?
                .filter(|found| crate::caller::sees_owner(caller, &found.owner))
                .ok_or_else(|| DomainError::not_found("chat", chat))?;
        }
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<ArtifactId>(ARTIFACT_LIST, caller.organization().as_str(), c)
            })
            .transpose()?;
        let filter = ArtifactFilter {
            organization: caller.organization().clone(),
            owner: crate::caller::listed_owner(caller),
            chat_id,
        };
        let rows = self
            .store
            .list(&filter, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(&filter).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |artifact| {
            self.cursors
                .encode(ARTIFACT_LIST, caller.organization().as_str(), &artifact.id)
        }))
    }
}
