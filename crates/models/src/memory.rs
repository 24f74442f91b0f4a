//! The in-memory reference `ModelStore`, for the domain's tests and other crates' tests.

use std::sync::Mutex;

use async_trait::async_trait;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{ModelId, ModelStore, UserModel};

/// User models held in memory.
#[derive(Default)]
pub struct InMemoryModelStore(Mutex<Vec<UserModel>>);

impl InMemoryModelStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn models(&self) -> std::sync::MutexGuard<'_, Vec<UserModel>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl ModelStore for InMemoryModelStore {
    async fn insert(&self, model: &UserModel, _audit: &AuditRecord) -> Result<(), DomainError> {
        let mut models = self.models();
        if models.iter().any(|m| m.id == model.id) {
            return Err(DomainError::Conflict {
                code: "already_exists",
                message: format!("model {} already exists", model.id),
            });
        }
        models.push(model.clone());
        Ok(())
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
    ) -> Result<Option<UserModel>, DomainError> {
        Ok(self
            .models()
            .iter()
            .find(|m| &m.organization_id == organization && &m.id == id)
            .cloned())
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ModelId>,
    ) -> Result<Vec<UserModel>, DomainError> {
        let mut models: Vec<UserModel> = self
            .models()
            .iter()
            .filter(|m| &m.organization_id == organization)
            .filter(|m| {
                page.after
                    .as_ref()
                    .is_none_or(|after| m.id.as_str() > after.as_str())
            })
            .cloned()
            .collect();
        // In id order, as the SQL stores list them.
        models.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        models.truncate(page.limit.overfetch() as usize);
        Ok(models)
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        Ok(self
            .models()
            .iter()
            .filter(|m| &m.organization_id == organization)
            .count() as u64)
    }

    async fn update(&self, model: &UserModel, _audit: &AuditRecord) -> Result<bool, DomainError> {
        let mut models = self.models();
        let Some(stored) = models
            .iter_mut()
            .find(|m| m.id == model.id && m.organization_id == model.organization_id)
        else {
            return Ok(false);
        };
        // The creation time is never saved.
        *stored = UserModel {
            created_at: stored.created_at,
            ..model.clone()
        };
        Ok(true)
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
        _audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let mut models = self.models();
        let before = models.len();
        models.retain(|m| !(&m.organization_id == organization && &m.id == id));
        Ok(models.len() < before)
    }
}

/// Dataset links held in memory (no cascade: the reference of what the SQL store keeps).
#[derive(Default)]
pub struct InMemoryDatasetLinkStore(Mutex<Vec<(OrganizationId, crate::DatasetLink)>>);

impl InMemoryDatasetLinkStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn links(&self) -> std::sync::MutexGuard<'_, Vec<(OrganizationId, crate::DatasetLink)>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl crate::DatasetLinkStore for InMemoryDatasetLinkStore {
    async fn upsert(
        &self,
        organization: &OrganizationId,
        link: &crate::DatasetLink,
        _audit: &AuditRecord,
    ) -> Result<(crate::DatasetLink, bool), DomainError> {
        let mut links = self.links();
        let existing = links.iter_mut().find(|(org, l)| {
            org == organization && l.model_id == link.model_id && l.dataset_id == link.dataset_id
        });
        Ok(match existing {
            Some((_, stored)) => {
                stored.usage = link.usage;
                (stored.clone(), false)
            }
            None => {
                links.push((organization.clone(), link.clone()));
                (link.clone(), true)
            }
        })
    }

    async fn links(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
    ) -> Result<Vec<crate::DatasetLink>, DomainError> {
        Ok(self
            .links()
            .iter()
            .filter(|(org, link)| org == organization && &link.model_id == model)
            .map(|(_, link)| link.clone())
            .collect())
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        model: &ModelId,
        dataset_id: &str,
        _audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let mut links = self.links();
        let before = links.len();
        links.retain(|(org, link)| {
            !(org == organization && &link.model_id == model && link.dataset_id == dataset_id)
        });
        Ok(links.len() != before)
    }
}

/// A chat model that answers every request with the same events, or refuses to start: for
/// tests of what wraps or calls the `ChatModel` port, in any crate.
#[derive(Debug, Clone)]
pub struct ScriptedChatModel {
    events: Vec<Result<crate::ChatEvent, crate::ProviderError>>,
    refusal: Option<crate::ProviderError>,
}

impl ScriptedChatModel {
    /// Streams `events` for every request.
    pub fn answering(events: Vec<Result<crate::ChatEvent, crate::ProviderError>>) -> Self {
        Self {
            events,
            refusal: None,
        }
    }

    /// Refuses every request with `error` before streaming anything.
    pub fn refusing(error: crate::ProviderError) -> Self {
        Self {
            events: Vec::new(),
            refusal: Some(error),
        }
    }
}

#[async_trait]
impl crate::ChatModel for ScriptedChatModel {
    fn capabilities(&self) -> crate::Capabilities {
        crate::Capabilities::default()
    }

    fn tokenizer(&self) -> std::sync::Arc<dyn tessera_prompts::TokenCounter> {
        std::sync::Arc::new(WordCounter)
    }

    async fn stream(
        &self,
        _request: crate::ChatRequest,
    ) -> Result<crate::ChatStream, crate::ProviderError> {
        match &self.refusal {
            Some(error) => Err(error.clone()),
            None => Ok(Box::pin(futures_util::stream::iter(self.events.clone()))),
        }
    }
}

/// Counts whitespace-separated words as tokens (encoding `words`).
#[derive(Debug, Clone, Copy, Default)]
pub struct WordCounter;

impl tessera_prompts::TokenCounter for WordCounter {
    fn encoding(&self) -> &str {
        "words"
    }

    fn count(&self, text: &str) -> u32 {
        u32::try_from(text.split_whitespace().count()).unwrap_or(u32::MAX)
    }
}
