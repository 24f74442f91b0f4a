use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId, PageRequest};

use crate::{Chat, ChatId, Message};

/// Which chats a list shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatFilter {
    pub organization: OrganizationId,
    /// Only this principal's chats; `None` shows every chat of the organization.
    pub owner: Option<String>,
    pub include_deleted: bool,
}

/// Persistence of chats and messages. Every method is scoped to one organization: another
/// organization's chat is not found.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ChatStore: Send + Sync {
    /// Stores a new chat (without messages).
    async fn insert(&self, chat: &Chat) -> Result<(), DomainError>;

    /// The chat, deleted or not.
    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<Option<Chat>, DomainError>;

    /// The chat's messages in sequence order.
    async fn messages(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<Vec<Message>, DomainError>;

    /// Chats newest first (by id, descending), after `page.after`, at most
    /// `page.limit.overfetch()`.
    async fn list(
        &self,
        filter: &ChatFilter,
        page: &PageRequest<ChatId>,
    ) -> Result<Vec<Chat>, DomainError>;

    async fn count(&self, filter: &ChatFilter) -> Result<u64, DomainError>;

    /// Marks a live chat `generating`, atomically: false when it is already generating,
    /// deleted, or not the organization's.
    async fn begin_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Ends a generation in one transaction: appends `messages` (the turn's input and the
    /// answer), clears the status and error, and sets `updated_at`. A message of another
    /// chat, or whose id or sequence is taken, refuses the whole call (a conflict) and
    /// changes nothing.
    async fn finish_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        messages: &[Message],
        at: DateTime<Utc>,
    ) -> Result<(), DomainError>;

    /// Ends a generation as failed: status `error` with the reason; nothing is appended.
    async fn fail_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        error: &str,
        at: DateTime<Utc>,
    ) -> Result<(), DomainError>;

    /// Marks every chat still `generating` as failed with `error` (start-up recovery after
    /// a crash); returns how many.
    async fn fail_interrupted(&self, error: &str, at: DateTime<Utc>) -> Result<u64, DomainError>;

    /// Saves title, deleted_at and updated_at; false when the chat is not the organization's.
    async fn update(&self, chat: &Chat) -> Result<bool, DomainError>;
}
