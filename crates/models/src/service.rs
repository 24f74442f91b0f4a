use std::sync::Arc;

use tessera_kernel::{
    Actor, Clock, CursorCodec, DomainError, FieldError, Limit, OrganizationId, Page, PageRequest,
};
use tessera_prompts::{PromptError, PromptService, SystemPromptId};

use crate::{
    BaseModel, Catalog, LifecycleState, ModelChanges, ModelError, ModelId, ModelStore, ModelView,
    NewUserModel, Providers, UserModel, lifecycle_state,
};

const MODEL_LIST: &str = "models";

/// The longest system prompt override, in characters.
pub const MAX_SYSTEM_PROMPT_CHARS: usize = 32_768;
/// The most metadata keys a model may carry.
pub const MAX_METADATA_KEYS: usize = 64;

/// The catalog and organizations' user models.
#[derive(Clone)]
pub struct ModelService {
    store: Arc<dyn ModelStore>,
    catalog: Arc<Catalog>,
    prompts: PromptService,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    /// When the catalog was loaded: the creation time shown for base models.
    loaded_at: chrono::DateTime<chrono::Utc>,
    providers: Providers,
}

/// What a completion may name now ([`ModelService::nameable`]).
#[derive(Debug, Clone)]
pub struct NameableModels {
    /// The catalog's usable base models.
    pub base: Vec<BaseModel>,
    /// The organization's own usable models.
    pub own: Vec<ModelView>,
}

impl ModelService {
    pub fn new(
        store: Arc<dyn ModelStore>,
        catalog: Arc<Catalog>,
        prompts: PromptService,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Self {
        Self {
            providers: Providers::default(),
            loaded_at: clock.now(),
            store,
            catalog,
            prompts,
            clock,
            cursors,
        }
    }

    /// Generate through these providers (`resolve`).
    pub fn with_providers(mut self, providers: Providers) -> Self {
        self.providers = providers;
        self
    }

    pub(crate) fn providers(&self) -> &Providers {
        &self.providers
    }

    pub(crate) fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// When the catalog was loaded (base models' `createdAt`/`updatedAt`).
    pub fn catalog_loaded_at(&self) -> chrono::DateTime<chrono::Utc> {
        self.loaded_at
    }

    /// Every base model with its lifecycle state now.
    pub fn base_models(&self) -> Vec<(BaseModel, LifecycleState)> {
        let now = self.clock.now();
        self.catalog
            .models()
            .iter()
            .map(|model| {
                let state = lifecycle_state(model.enabled, model.end_of_life_at, now);
                (model.clone(), state)
            })
            .collect()
    }

    /// `create_by` the service itself (`Actor::System`): for tests and embedding services.
    pub async fn create(
        &self,
        organization: &OrganizationId,
        new: NewUserModel,
    ) -> Result<ModelView, ModelError> {
        self.create_by(&Actor::System, organization, new).await
    }

    /// Creates a user model; the audit record (`model.create`) is written with it.
    pub async fn create_by(
        &self,
        actor: &Actor,
        organization: &OrganizationId,
        new: NewUserModel,
    ) -> Result<ModelView, ModelError> {
        let mut invalid = Vec::new();
        invalid.extend(self.check_parent(&new.parent_model_id).err());
        invalid.extend(self.check_override(new.system_prompt.as_deref()).err());
        invalid.extend(check_metadata(&new.metadata).err());
        if let Some(id) = &new.system_prompt_id {
            invalid.extend(self.check_system_prompt(organization, id).await?.err());
        }
        if !invalid.is_empty() {
            return Err(ModelError::Invalid(invalid));
        }
        let now = self.clock.now();
        let model = UserModel {
            id: ModelId::generate(),
            organization_id: organization.clone(),
            parent_model_id: new.parent_model_id,
            display_name: new.display_name.into_inner(),
            description: new.description.map(|d| d.into_inner()),
            system_prompt_id: new.system_prompt_id,
            system_prompt: new.system_prompt,
            metadata: new.metadata,
            enabled: true,
            created_at: now,
            updated_at: now,
        };
        let audit = actor.record(
            organization,
            "model.create",
            "model",
            model.id.as_str(),
            now,
        );
        self.store.insert(&model, &audit).await?;
        Ok(self.view(model))
    }

    pub async fn get(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
    ) -> Result<ModelView, ModelError> {
        self.store
            .get(organization, id)
            .await?
            .map(|model| self.view(model))
            .ok_or_else(|| ModelError::NotFound(id.clone()))
    }

    pub async fn list(
        &self,
        organization: &OrganizationId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<ModelView>, ModelError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<ModelId>(MODEL_LIST, organization.as_str(), c)
            })
            .transpose()
            .map_err(DomainError::from)?;
        let rows = self
            .store
            .list(organization, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(organization).await?;
        let page = Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors
                .encode(MODEL_LIST, organization.as_str(), &last.id)
        });
        Ok(page.map(|model| self.view(model)))
    }

    /// The models a completion may name now (active or deprecated): the catalog's base
    /// models, then every one of the organization's own models (all pages).
    pub async fn nameable(
        &self,
        organization: &OrganizationId,
    ) -> Result<NameableModels, ModelError> {
        let base = self
            .base_models()
            .into_iter()
            .filter(|(_, lifecycle)| lifecycle.takes_completions())
            .map(|(base, _)| base)
            .collect();
        let mut own = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .list(organization, Limit::LARGEST, cursor.as_deref())
                .await?;
            own.extend(
                page.items
                    .into_iter()
                    .filter(|view| view.lifecycle.takes_completions()),
            );
            match page.next_cursor {
                Some(next) if page.has_more => cursor = Some(next.as_str().to_owned()),
                _ => break,
            }
        }
        Ok(NameableModels { base, own })
    }

    /// One of the organization's own models, if a completion may name it now; `None` for
    /// one it has not, or that is disabled or retired.
    pub async fn nameable_own(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
    ) -> Result<Option<ModelView>, ModelError> {
        match self.get(organization, id).await {
            Ok(view) => Ok(view.lifecycle.takes_completions().then_some(view)),
            Err(ModelError::NotFound(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Applies changes; switching `parentModelId` keeps the model's id (new chats use the
    /// new base model, existing conversations keep their history).
    pub async fn update(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
        changes: ModelChanges,
    ) -> Result<ModelView, ModelError> {
        self.update_by(&Actor::System, organization, id, changes)
            .await
    }

    /// `update`, audited as `model.update` by `actor`.
    pub async fn update_by(
        &self,
        actor: &Actor,
        organization: &OrganizationId,
        id: &ModelId,
        changes: ModelChanges,
    ) -> Result<ModelView, ModelError> {
        let mut model = self.get(organization, id).await?.model;
        let mut invalid = Vec::new();
        if let Some(parent) = &changes.parent_model_id {
            invalid.extend(self.check_parent(parent).err());
        }
        if let Some(Some(text)) = &changes.system_prompt {
            invalid.extend(self.check_override(Some(text)).err());
        }
        if let Some(metadata) = &changes.metadata {
            invalid.extend(check_metadata(metadata).err());
        }
        if let Some(Some(prompt)) = &changes.system_prompt_id {
            invalid.extend(self.check_system_prompt(organization, prompt).await?.err());
        }
        if !invalid.is_empty() {
            return Err(ModelError::Invalid(invalid));
        }
        if let Some(name) = changes.display_name {
            model.display_name = name.into_inner();
        }
        if let Some(description) = changes.description {
            model.description = description.map(|d| d.into_inner());
        }
        if let Some(parent) = changes.parent_model_id {
            model.parent_model_id = parent;
        }
        if let Some(prompt) = changes.system_prompt_id {
            model.system_prompt_id = prompt;
        }
        if let Some(text) = changes.system_prompt {
            model.system_prompt = text;
        }
        if let Some(metadata) = changes.metadata {
            model.metadata = metadata;
        }
        if let Some(enabled) = changes.enabled {
            model.enabled = enabled;
        }
        model.updated_at = self.clock.now();
        let audit = actor.record(
            organization,
            "model.update",
            "model",
            id.as_str(),
            model.updated_at,
        );
        if !self.store.update(&model, &audit).await? {
            return Err(ModelError::NotFound(id.clone()));
        }
        Ok(self.view(model))
    }

    pub async fn delete(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
        actor: &Actor,
    ) -> Result<(), ModelError> {
        let audit = actor.record(
            organization,
            "model.delete",
            "model",
            id.as_str(),
            self.clock.now(),
        );
        if self.store.delete(organization, id, &audit).await? {
            Ok(())
        } else {
            Err(ModelError::NotFound(id.clone()))
        }
    }

    fn view(&self, model: UserModel) -> ModelView {
        let parent = self.catalog.get(&model.parent_model_id).cloned();
        ModelView::new(model, parent, self.clock.now())
    }

    fn check_parent(&self, id: &str) -> Result<(), FieldError> {
        match self.catalog.get(id) {
            Some(_) => Ok(()),
            None => Err(FieldError::new(
                ["body".into(), "parentModelId".into()],
                format!("`{id}` is not a model of the catalog (GET /v1/models/catalog)"),
                "not_found",
            )),
        }
    }

    fn check_override(&self, text: Option<&str>) -> Result<(), FieldError> {
        let Some(text) = text else { return Ok(()) };
        let chars = text.chars().count();
        if text.trim().is_empty() || chars > MAX_SYSTEM_PROMPT_CHARS {
            return Err(FieldError::new(
                ["body".into(), "systemPrompt".into()],
                format!(
                    "must be 1 to {MAX_SYSTEM_PROMPT_CHARS} characters and not blank (use null to remove it)"
                ),
                "value_error",
            ));
        }
        Ok(())
    }

    /// The system prompt must be the organization's or a system profile.
    async fn check_system_prompt(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
    ) -> Result<Result<(), FieldError>, ModelError> {
        match self.prompts.get_system_prompt(organization, id).await {
            Ok(_) => Ok(Ok(())),
            Err(PromptError::SystemPromptNotFound(_)) => Ok(Err(FieldError::new(
                ["body".into(), "systemPromptId".into()],
                format!("system prompt {id} was not found"),
                "not_found",
            ))),
            Err(other) => Err(ModelError::Domain(other.into())),
        }
    }
}

fn check_metadata(metadata: &serde_json::Map<String, serde_json::Value>) -> Result<(), FieldError> {
    if metadata.len() > MAX_METADATA_KEYS {
        return Err(FieldError::new(
            ["body".into(), "metadata".into()],
            format!("at most {MAX_METADATA_KEYS} keys"),
            "value_error",
        ));
    }
    Ok(())
}
