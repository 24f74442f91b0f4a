//! The `ChatStore` contract (with `GenerationLeases` and `ArtifactStore`), for anyone
//! implementing the ports: each check states promises of the traits against a fresh, empty
//! state (a [`ChatStores`]), and [`chat_store_contract!`](crate::chat_store_contract) turns
//! them into tests. Tessera runs it against the in-memory reference (`crate::memory`, so the
//! suite is checked against the behaviour it stands for) and the SQL stores. The record
//! builders and the [`Fixture`] are public, for an adapter's own checks beyond the contract.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod chats;
mod generations;
mod records;
mod turns;

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest, PrincipalKind};
use tessera_models::{FailedAttempt, FinishReason, Role, Route, ToolCall, Usage};
use tessera_prompts::SystemPromptId;
use tessera_usage::{FAILED, Tokens, UsageId, UsageRecord};

pub use self::{chats::*, generations::*, records::*, turns::*};
use crate::{
    Artifact, ArtifactFilter, ArtifactId, ArtifactKind, ArtifactStore, Attachment, AttachmentKind,
    Chat, ChatFilter, ChatId, ChatStatus, ChatStore, FinishedTurn, GenerationLeases, Message,
    MessageId, MessageUsage, ModelSnapshot, Source, SourceLocation, memory::InMemoryChatStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own state made by `$factory`: an expression that, called with no argument, gives a future
/// of `(stores, guard)`, `stores` a [`ChatStores`](crate::contract::ChatStores) (the guard,
/// e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! chat_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            chats_read_back_unchanged,
            duplicate_chat_ids_are_refused,
            another_organization_cannot_reach_a_chat,
            lists_are_newest_first_and_filtered,
            keyset_pages_have_no_gaps_or_duplicates,
            messages_read_back_unchanged_in_sequence_order,
            messages_of_one_turn_come_back_in_sequence_order,
            one_generation_runs_at_a_time,
            finishing_appends_messages_and_clears_the_status,
            a_taken_sequence_number_rolls_the_whole_finish_back,
            failing_records_the_error,
            a_failed_turn_keeps_its_partial_answer_and_its_route,
            interrupted_generations_fail_in_every_organization,
            a_runner_retires_only_without_generations,
            update_saves_title_deletion_and_time_only,
            concurrent_starts_have_one_winner,
            finishing_stores_the_usage_and_the_artifacts,
            a_recorded_usage_or_a_taken_artifact_version_rolls_the_finish_back,
            one_turn_cannot_store_an_artifact_version_twice,
            failing_records_the_usage_of_a_failed_attempt,
            artifacts_are_scoped_to_the_organization_and_filtered,
            artifact_keyset_pages_have_no_gaps_or_duplicates,
        );
    };
}

/// A store of chats and the leases of the generations it begins, as one runner (process).
pub trait Runner: ChatStore + GenerationLeases {}

impl<T: ChatStore + GenerationLeases> Runner for T {}

/// What the checks run on: the stores over one empty state, and ways to make an organization
/// exist and to read back the usage records finished turns wrote.
#[async_trait]
pub trait ChatStores: Send + Sync {
    /// The chat store of one runner.
    fn store(&self) -> Arc<dyn Runner>;

    /// A store of the same chats for another runner: what another process (replica) over
    /// the same database is.
    fn another_runner(&self) -> Arc<dyn Runner>;

    /// The artifact store reading what the chat store wrote.
    fn artifacts(&self) -> Arc<dyn ArtifactStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where chats refer to
    /// it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);

    /// Every usage record the chat store recorded, by any organization, in any order.
    async fn recorded_usage(&self) -> Vec<UsageRecord>;
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl ChatStores for Arc<InMemoryChatStore> {
    fn store(&self) -> Arc<dyn Runner> {
        self.clone()
    }

    fn another_runner(&self) -> Arc<dyn Runner> {
        Arc::new(InMemoryChatStore::another_runner(self))
    }

    fn artifacts(&self) -> Arc<dyn ArtifactStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}

    async fn recorded_usage(&self) -> Vec<UsageRecord> {
        self.usage_records()
    }
}

/// The stores of one check, and the steps the checks share.
pub struct Fixture<'a> {
    stores: &'a dyn ChatStores,
    pub store: Arc<dyn Runner>,
    pub artifacts: Arc<dyn ArtifactStore>,
}

impl<'a> Fixture<'a> {
    pub fn new(stores: &'a impl ChatStores) -> Self {
        Self {
            stores,
            store: stores.store(),
            artifacts: stores.artifacts(),
        }
    }

    /// Another runner over the same chats.
    pub fn another_runner(&self) -> Arc<dyn Runner> {
        self.stores.another_runner()
    }

    /// A fresh organization (made to exist first where chats refer to it).
    pub async fn organization(&self, name: &str) -> OrganizationId {
        let id = OrganizationId::generate();
        self.stores.organization_exists(&id, name).await;
        id
    }

    /// Stores a plain, idle chat of `owner`.
    pub async fn chat(&self, organization: &OrganizationId, owner: &str) -> Chat {
        let chat = chat(organization, owner);
        self.store.insert(&chat).await.unwrap();
        chat
    }

    /// Stores a chat and soft-deletes it.
    pub async fn deleted_chat(&self, organization: &OrganizationId, owner: &str) -> Chat {
        let mut chat = self.chat(organization, owner).await;
        chat.deleted_at = Some(at(30));
        chat.updated_at = at(30);
        assert!(self.store.update(&chat).await.unwrap());
        chat
    }

    pub async fn get(&self, chat: &Chat) -> Option<Chat> {
        self.store
            .get(&chat.organization_id, &chat.id)
            .await
            .unwrap()
    }

    pub async fn messages(&self, chat: &Chat) -> Vec<Message> {
        self.store
            .messages(&chat.organization_id, &chat.id)
            .await
            .unwrap()
    }

    pub async fn begin(&self, chat: &Chat, when: DateTime<Utc>) -> bool {
        self.store
            .begin_generation(&chat.organization_id, &chat.id, when)
            .await
            .unwrap()
    }

    /// Finishes a generation with `messages`, the usage of its answer and no artifacts.
    pub async fn finish(&self, chat: &Chat, messages: &[Message], when: DateTime<Utc>) {
        self.finish_turn(chat, &turn_of(chat, messages, when), when)
            .await;
    }

    pub async fn finish_turn(&self, chat: &Chat, turn: &FinishedTurn, when: DateTime<Utc>) {
        self.store
            .finish_generation(&chat.organization_id, &chat.id, turn, when)
            .await
            .unwrap();
    }

    /// Every usage record stored (by any organization), ordered by id.
    pub async fn recorded_usage(&self) -> Vec<UsageRecord> {
        let mut records = self.stores.recorded_usage().await;
        records.sort_by(|a, b| a.id.cmp(&b.id));
        records
    }

    /// Every artifact the filter shows, newest first.
    pub async fn all_artifacts(&self, filter: &ArtifactFilter) -> Vec<Artifact> {
        self.artifacts
            .list(filter, &PageRequest::first(Limit::new(100).unwrap()))
            .await
            .unwrap()
    }

    pub async fn versions(&self, chat: &Chat) -> HashMap<String, u32> {
        self.store
            .artifact_versions(&chat.organization_id, &chat.id)
            .await
            .unwrap()
    }

    /// Every chat of the filter, newest first.
    pub async fn all(&self, filter: &ChatFilter) -> Vec<Chat> {
        self.store
            .list(filter, &PageRequest::first(Limit::new(100).unwrap()))
            .await
            .unwrap()
    }
}
