//! The in-memory reference `ChatStore`: the executable statement of the port's contract,
//! used by the domain's tests and run through the same contract suite as the SQL stores.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId, PageRequest};

use tessera_usage::UsageRecord;

use crate::{
    Artifact, ArtifactFilter, ArtifactId, ArtifactStore, Chat, ChatFilter, ChatId, ChatStatus,
    ChatStore, FinishedTurn, GenerationLeases, Message, MessageId,
};

#[derive(Default)]
struct State {
    chats: BTreeMap<ChatId, Chat>,
    messages: BTreeMap<ChatId, Vec<Message>>,
    usage: Vec<UsageRecord>,
    artifacts: BTreeMap<ArtifactId, Artifact>,
    /// Each runner's last lease renewal.
    runners: HashMap<String, DateTime<Utc>>,
    /// The runner of each generating chat.
    running: HashMap<ChatId, String>,
}

/// Chats held in memory.
pub struct InMemoryChatStore {
    state: Arc<Mutex<State>>,
    /// The runner whose generations this store starts.
    runner: String,
}

impl Default for InMemoryChatStore {
    fn default() -> Self {
        Self::new()
    }
}

/// Runner ids of this process's in-memory stores.
static RUNNERS: AtomicU64 = AtomicU64::new(0);

fn next_runner() -> String {
    format!("memory-{}", RUNNERS.fetch_add(1, Ordering::Relaxed))
}

impl InMemoryChatStore {
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
            runner: next_runner(),
        }
    }

    /// A store over the same chats for another runner: what another process on the same
    /// database would be.
    pub fn another_runner(&self) -> Self {
        Self {
            state: self.state.clone(),
            runner: next_runner(),
        }
    }

    /// Every usage record written, in order.
    pub fn usage_records(&self) -> Vec<UsageRecord> {
        self.with(|state| state.usage.clone())
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

fn matches(filter: &ChatFilter, chat: &Chat) -> bool {
    chat.organization_id == filter.organization
        && filter
            .owner
            .as_ref()
            .is_none_or(|owner| owner == &chat.owner)
        && (filter.include_deleted || chat.deleted_at.is_none())
}

fn owned<'a>(
    state: &'a mut State,
    organization: &OrganizationId,
    id: &ChatId,
) -> Option<&'a mut Chat> {
    state
        .chats
        .get_mut(id)
        .filter(|chat| &chat.organization_id == organization)
}

#[async_trait]
impl ChatStore for InMemoryChatStore {
    async fn insert(&self, chat: &Chat) -> Result<(), DomainError> {
        self.with(|state| {
            if state.chats.contains_key(&chat.id) {
                return Err(DomainError::internal(format!("chat {} exists", chat.id)));
            }
            state.chats.insert(chat.id.clone(), chat.clone());
            if chat.status == Some(ChatStatus::Generating) {
                state.running.insert(chat.id.clone(), self.runner.clone());
            }
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<Option<Chat>, DomainError> {
        Ok(self.with(|state| owned(state, organization, id).map(|chat| chat.clone())))
    }

    async fn messages(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<Vec<Message>, DomainError> {
        Ok(self.with(|state| {
            if owned(state, organization, id).is_none() {
                return Vec::new();
            }
            state.messages.get(id).cloned().unwrap_or_default()
        }))
    }

    async fn list(
        &self,
        filter: &ChatFilter,
        page: &PageRequest<ChatId>,
    ) -> Result<Vec<Chat>, DomainError> {
        Ok(self.with(|state| {
            state
                .chats
                .values()
                .rev()
                .filter(|chat| matches(filter, chat))
                .filter(|chat| page.after.as_ref().is_none_or(|after| &chat.id < after))
                .take(page.limit.overfetch() as usize)
                .cloned()
                .collect()
        }))
    }

    async fn count(&self, filter: &ChatFilter) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            state
                .chats
                .values()
                .filter(|chat| matches(filter, chat))
                .count() as u64
        }))
    }

    async fn begin_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| match owned(state, organization, id) {
            Some(chat)
                if chat.deleted_at.is_none() && chat.status != Some(ChatStatus::Generating) =>
            {
                chat.status = Some(ChatStatus::Generating);
                chat.error = None;
                chat.updated_at = at;
                state.running.insert(id.clone(), self.runner.clone());
                true
            }
            _ => false,
        }))
    }

    async fn finish_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        turn: &FinishedTurn,
        at: DateTime<Utc>,
    ) -> Result<(), DomainError> {
        let messages = &turn.messages;
        self.with(|state| {
            owned(state, organization, id).ok_or_else(|| DomainError::not_found("chat", id))?;
            // Check everything before changing anything: the transaction is all or nothing.
            let stored = state
                .messages
                .get(id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut sequences: Vec<u32> = stored.iter().map(|m| m.sequence).collect();
            let mut ids: Vec<&MessageId> = stored.iter().map(|m| &m.id).collect();
            for message in messages {
                if &message.chat_id != id
                    || sequences.contains(&message.sequence)
                    || ids.contains(&&message.id)
                {
                    return Err(DomainError::Conflict {
                        code: "already_exists",
                        message: format!("message {} cannot be appended", message.id),
                    });
                }
                sequences.push(message.sequence);
                ids.push(&message.id);
            }
            check_usage(state, &turn.usage)?;
            for (index, artifact) in turn.artifacts.iter().enumerate() {
                let same = |a: &Artifact| {
                    a.chat_id == artifact.chat_id
                        && a.identifier == artifact.identifier
                        && a.version == artifact.version
                };
                let taken =
                    state.artifacts.values().any(same) || turn.artifacts[..index].iter().any(same);
                if taken || &artifact.chat_id != id {
                    return Err(DomainError::Conflict {
                        code: "already_exists",
                        message: format!("artifact {} cannot be stored", artifact.id),
                    });
                }
            }
            state.usage.push(turn.usage.clone());
            for artifact in &turn.artifacts {
                state
                    .artifacts
                    .insert(artifact.id.clone(), artifact.clone());
            }
            let stored = state.messages.entry(id.clone()).or_default();
            stored.extend(messages.iter().cloned());
            stored.sort_by_key(|m| m.sequence);
            if let Some(chat) = owned(state, organization, id) {
                chat.status = turn.error.as_ref().map(|_| ChatStatus::Error);
                chat.error.clone_from(&turn.error);
                chat.updated_at = at;
            }
            state.running.remove(id);
            Ok(())
        })
    }

    async fn fail_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        error: &str,
        usage: Option<UsageRecord>,
        at: DateTime<Utc>,
    ) -> Result<(), DomainError> {
        self.with(|state| {
            owned(state, organization, id).ok_or_else(|| DomainError::not_found("chat", id))?;
            if let Some(usage) = usage {
                check_usage(state, &usage)?;
                state.usage.push(usage);
            }
            let chat =
                owned(state, organization, id).ok_or_else(|| DomainError::not_found("chat", id))?;
            mark_failed(chat, error, at);
            state.running.remove(id);
            Ok(())
        })
    }

    async fn artifact_versions(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<HashMap<String, u32>, DomainError> {
        Ok(self.with(|state| {
            let mut latest = HashMap::new();
            for artifact in state
                .artifacts
                .values()
                .filter(|a| &a.organization_id == organization && &a.chat_id == id)
            {
                let version = latest.entry(artifact.identifier.clone()).or_insert(0);
                *version = artifact.version.max(*version);
            }
            latest
        }))
    }

    async fn update(&self, chat: &Chat) -> Result<bool, DomainError> {
        Ok(self.with(
            |state| match owned(state, &chat.organization_id, &chat.id) {
                Some(stored) => {
                    stored.title = chat.title.clone();
                    stored.deleted_at = chat.deleted_at;
                    stored.updated_at = chat.updated_at;
                    true
                }
                None => false,
            },
        ))
    }
}

#[async_trait]
impl GenerationLeases for InMemoryChatStore {
    async fn keep_alive(&self, at: DateTime<Utc>) -> Result<(), DomainError> {
        self.with(|state| state.runners.insert(self.runner.clone(), at));
        Ok(())
    }

    async fn fail_interrupted(
        &self,
        error: &str,
        lapsed_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<u64, DomainError> {
        // This store's runner, and any renewed since `lapsed_before`, is alive.
        let alive = |runner: &String, seen: Option<&DateTime<Utc>>| {
            runner == &self.runner || seen.is_some_and(|seen| *seen >= lapsed_before)
        };
        Ok(self.with(|state| {
            let interrupted: Vec<ChatId> = (state.running.iter())
                .filter(|(_, runner)| !alive(runner, state.runners.get(*runner)))
                .map(|(chat, _)| chat.clone())
                .collect();
            let mut failed = 0;
            for id in interrupted {
                state.running.remove(&id);
                if let Some(chat) = state.chats.get_mut(&id)
                    && chat.status == Some(ChatStatus::Generating)
                {
                    mark_failed(chat, error, at);
                    failed += 1;
                }
            }
            state
                .runners
                .retain(|runner, seen| alive(runner, Some(seen)));
            failed
        }))
    }

    async fn retire(&self) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let holds = state.running.values().any(|runner| runner == &self.runner);
            !holds && state.runners.remove(&self.runner).is_some()
        }))
    }
}

fn mark_failed(chat: &mut Chat, error: &str, at: DateTime<Utc>) {
    chat.status = Some(ChatStatus::Error);
    chat.error = Some(error.to_owned());
    chat.updated_at = at;
}

/// A message's usage is recorded once.
fn check_usage(state: &State, usage: &UsageRecord) -> Result<(), DomainError> {
    if state
        .usage
        .iter()
        .any(|r| r.id == usage.id || r.message_id == usage.message_id)
    {
        return Err(DomainError::Conflict {
            code: "already_exists",
            message: format!("usage of message {} is already recorded", usage.message_id),
        });
    }
    Ok(())
}

fn shows(filter: &ArtifactFilter, artifact: &Artifact) -> bool {
    artifact.organization_id == filter.organization
        && filter.owner.as_ref().is_none_or(|o| o == &artifact.owner)
        && filter
            .chat_id
            .as_ref()
            .is_none_or(|c| c == &artifact.chat_id)
}

#[async_trait]
impl ArtifactStore for InMemoryChatStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ArtifactId,
    ) -> Result<Option<Artifact>, DomainError> {
        Ok(self.with(|state| {
            state
                .artifacts
                .get(id)
                .filter(|a| &a.organization_id == organization)
                .cloned()
        }))
    }

    async fn list(
        &self,
        filter: &ArtifactFilter,
        page: &PageRequest<ArtifactId>,
    ) -> Result<Vec<Artifact>, DomainError> {
        Ok(self.with(|state| {
            state
                .artifacts
                .values()
                .rev()
                .filter(|a| shows(filter, a))
                .filter(|a| page.after.as_ref().is_none_or(|after| &a.id < after))
                .take(page.limit.overfetch() as usize)
                .cloned()
                .collect()
        }))
    }

    async fn count(&self, filter: &ArtifactFilter) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            state
                .artifacts
                .values()
                .filter(|a| shows(filter, a))
                .count() as u64
        }))
    }
}
