use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId, PageRequest};
use tessera_usage::UsageRecord;

use crate::{Artifact, Chat, ChatId, Message};

/// What a finished generation stores, together.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedTurn {
    /// The turn's input messages and the answer, in sequence order.
    pub messages: Vec<Message>,
    pub usage: UsageRecord,
    pub artifacts: Vec<Artifact>,
    /// Set when the generation failed after part of its answer was produced: the chat ends
    /// in `error` with this reason, and the partial answer is kept.
    pub error: Option<String>,
}

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
    /// Stores a new chat (without messages); a chat stored `generating` is this store's
    /// runner's generation (see [`GenerationLeases`]).
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

    /// Marks a live chat `generating`, atomically, as a generation of this store's runner
    /// (the process its [`GenerationLeases`] keep alive): false when it is already
    /// generating, deleted, or not the organization's.
    async fn begin_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Ends a generation in one transaction: appends the turn's messages (its input and the
    /// answer), its usage record and its artifacts, clears the status and error, and sets
    /// `updated_at`. A message of another chat, or whose id or sequence is taken, a usage
    /// record of a message already recorded, or an artifact version already taken refuses
    /// the whole call (a conflict) and changes nothing.
    async fn finish_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        turn: &FinishedTurn,
        at: DateTime<Utc>,
    ) -> Result<(), DomainError>;

    /// Ends a generation as failed, in one transaction: status `error` with the reason and,
    /// when the failed attempt consumed tokens, its usage record; no message is appended.
    async fn fail_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        error: &str,
        usage: Option<UsageRecord>,
        at: DateTime<Utc>,
    ) -> Result<(), DomainError>;

    /// The latest version of each artifact identifier of the chat.
    async fn artifact_versions(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<HashMap<String, u32>, DomainError>;

    /// Saves title, deleted_at and updated_at; false when the chat is not the organization's.
    async fn update(&self, chat: &Chat) -> Result<bool, DomainError>;
}

/// Which process runs each generation, so that the chats a stopped process left
/// `generating` are failed by another rather than shown as generating forever. A store of
/// chats implements it for the generations it begins (its "runner": one per process); a
/// service that runs in one process may still want the sweep at start-up, after a crash.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait GenerationLeases: Send + Sync {
    /// Renews the lease of this runner (the process whose generations it starts):
    /// while it is renewed, `fail_interrupted` of any process leaves them alone.
    async fn keep_alive(&self, at: DateTime<Utc>) -> Result<(), DomainError>;

    /// Fails, with `error`, every chat still `generating` whose runner has not renewed its
    /// lease since `lapsed_before` (a process that stopped mid-answer, in any organization),
    /// and forgets those runners (a store may keep a lapsed runner's record a while, so that
    /// a process that wakes after a stall is still swept). A runner that never renewed counts
    /// as lapsed; a store that keeps runners in a table may find those only at its first
    /// sweep. This runner's own generations are never failed: they run in this process.
    /// Returns how many chats.
    async fn fail_interrupted(
        &self,
        error: &str,
        lapsed_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<u64, DomainError>;

    /// Forgets this runner unless it still holds a generation: what a process does
    /// as it stops cleanly, once it begins no more generations, so that other processes'
    /// sweeps need not carry it as lapsed. A runner that holds one is kept, and that
    /// generation fails once the lease lapses, as after a crash. Returns whether the runner
    /// was forgotten.
    async fn retire(&self) -> Result<bool, DomainError>;
}
