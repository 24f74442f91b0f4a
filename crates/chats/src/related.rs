//! A chat's related objects, read when a reader asks for them (`expand`): the chat's model as
//! it is now, and the particles its system prompt composed when the chat began. The rules
//! live here rather than in a handler: a model id that is not a user model's names a base
//! model of the catalog; a model deleted since reads as gone; a system prompt deleted since
//! composes to nothing. The two ports are implemented below for the models and prompts
//! domains' services.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId};
use tessera_models::{BaseModel, LifecycleState, ModelError, ModelId, ModelService, ModelView};
use tessera_prompts::{ComposedParticle, PromptError, PromptService, SystemPromptId};

use crate::Chat;

/// Which related objects a reader asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expansion {
    pub model: bool,
    /// The particle versions of the chat's system prompt.
    pub versions: bool,
    /// The particles of the chat's system prompt.
    pub particles: bool,
}

/// A chat's model as it is now.
#[derive(Debug, Clone, PartialEq)]
pub enum RelatedModel {
    /// A model of the organization.
    User(Box<ModelView>),
    /// A base model of the catalog, with its lifecycle state now.
    Base(Box<BaseModel>, LifecycleState),
}

/// What was asked for; `None` where it was not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Related {
    /// `Some(None)`: asked for, and the model was deleted since.
    pub model: Option<Option<RelatedModel>>,
    /// With `versions` or `particles`: the particles of the chat's system prompt as composed
    /// at the chat's creation; empty when it has none or it was deleted since.
    pub composition: Option<Vec<ComposedParticle>>,
}

/// Where a chat's model is read.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait RelatedModels: Send + Sync {
    /// The organization's model `id`; `None` when there is none.
    async fn user_model(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
    ) -> Result<Option<ModelView>, DomainError>;

    /// The catalog's base model `id` with its lifecycle state now; `None` when there is none.
    fn base_model(&self, id: &str) -> Option<(BaseModel, LifecycleState)>;
}

/// Where the composition of a chat's system prompt is read.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Compositions: Send + Sync {
    /// The particles the system prompt `id` composed at `at`; `None` when there is no such
    /// prompt (any longer).
    async fn composition(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
        at: DateTime<Utc>,
    ) -> Result<Option<Vec<ComposedParticle>>, DomainError>;
}

/// Reads the related objects of chats.
#[derive(Clone)]
pub struct ChatRelations {
    models: Arc<dyn RelatedModels>,
    prompts: Arc<dyn Compositions>,
}

impl ChatRelations {
    pub fn new(models: Arc<dyn RelatedModels>, prompts: Arc<dyn Compositions>) -> Self {
        Self { models, prompts }
    }

    /// What `expansion` asks for of `chat`; nothing is read that was not asked for.
    pub async fn related(&self, chat: &Chat, expansion: Expansion) -> Result<Related, DomainError> {
        let model = if expansion.model {
            Some(self.model(chat).await?)
        } else {
            None
        };
        let composition = if expansion.versions || expansion.particles {
            Some(self.composition(chat).await?)
        } else {
            None
        };
        Ok(Related { model, composition })
    }

    async fn model(&self, chat: &Chat) -> Result<Option<RelatedModel>, DomainError> {
        let id = &chat.model.model_id;
        match id.parse::<ModelId>() {
            Ok(user) => Ok(self
                .models
                .user_model(&chat.organization_id, &user)
                .await?
                .map(|view| RelatedModel::User(Box::new(view)))),
            Err(_) => Ok(self
                .models
                .base_model(id)
                .map(|(model, state)| RelatedModel::Base(Box::new(model), state))),
        }
    }

    async fn composition(&self, chat: &Chat) -> Result<Vec<ComposedParticle>, DomainError> {
        let Some(id) = &chat.model.system_prompt_id else {
            return Ok(Vec::new());
        };
        let composed = self
            .prompts
            .composition(&chat.organization_id, id, chat.created_at)
            .await?;
        Ok(composed.unwrap_or_default())
    }
}

#[async_trait]
impl RelatedModels for ModelService {
    async fn user_model(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
    ) -> Result<Option<ModelView>, DomainError> {
        match self.get(organization, id).await {
            Ok(view) => Ok(Some(view)),
            Err(ModelError::NotFound(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    fn base_model(&self, id: &str) -> Option<(BaseModel, LifecycleState)> {
        self.base_models()
            .into_iter()
            .find(|(model, _)| model.id == id)
    }
}

#[async_trait]
impl Compositions for PromptService {
    async fn composition(
        &self,
        organization: &OrganizationId,
        id: &SystemPromptId,
        at: DateTime<Utc>,
    ) -> Result<Option<Vec<ComposedParticle>>, DomainError> {
        match self.compose(organization, id, Some(at)).await {
            Ok(composition) => Ok(Some(composition.particles)),
            Err(PromptError::SystemPromptNotFound(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use tessera_prompts::{Category, ParticleId, ParticleVersionId};

    use super::*;
    use crate::ModelSnapshot;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
            .single()
            .unwrap_or_default()
    }

    fn chat(model_id: &str, system_prompt_id: Option<SystemPromptId>) -> Chat {
        Chat {
            id: crate::ChatId::generate(),
            organization_id: OrganizationId::generate(),
            owner: "alice".to_owned(),
            model: ModelSnapshot {
                model_id: model_id.to_owned(),
                base_model_id: "local/smollm2-135m".to_owned(),
                system_prompt: None,
                system_prompt_id,
            },
            title: None,
            status: None,
            error: None,
            deleted_at: None,
            created_at: at(),
            updated_at: at(),
        }
    }

    fn particle() -> ComposedParticle {
        ComposedParticle {
            id: ParticleId::generate(),
            version_id: ParticleVersionId::generate(),
            version: 3,
            category: Category::Role,
            token_count: 12,
        }
    }

    fn relations(models: MockRelatedModels, prompts: MockCompositions) -> ChatRelations {
        ChatRelations::new(Arc::new(models), Arc::new(prompts))
    }

    #[tokio::test]
    async fn nothing_asked_reads_nothing() {
        // Mocks without expectations fail any call.
        let relations = relations(MockRelatedModels::new(), MockCompositions::new());
        let chat = chat("mdl_x", Some(SystemPromptId::generate()));
        let related = relations.related(&chat, Expansion::default()).await;
        assert_eq!(related, Ok(Related::default()));
    }

    #[tokio::test]
    async fn a_user_model_deleted_since_reads_as_gone() {
        let mut models = MockRelatedModels::new();
        models.expect_user_model().returning(|_, _| Ok(None));
        let relations = relations(models, MockCompositions::new());
        let chat = chat(&ModelId::generate().to_string(), None);
        let expansion = Expansion {
            model: true,
            ..Expansion::default()
        };
        let related = relations.related(&chat, expansion).await;
        assert_eq!(related.map(|r| r.model), Ok(Some(None)));
    }

    #[tokio::test]
    async fn an_id_that_is_no_user_models_names_a_base_model() {
        let mut models = MockRelatedModels::new();
        models
            .expect_base_model()
            .withf(|id| id == "local/smollm2-135m")
            .returning(|_| None);
        let relations = relations(models, MockCompositions::new());
        let chat = chat("local/smollm2-135m", None);
        let expansion = Expansion {
            model: true,
            ..Expansion::default()
        };
        let related = relations.related(&chat, expansion).await;
        assert_eq!(related.map(|r| r.model), Ok(Some(None)));
    }

    #[tokio::test]
    async fn the_composition_is_the_one_at_the_chats_creation() {
        let composed = vec![particle()];
        let expected = composed.clone();
        let mut prompts = MockCompositions::new();
        prompts
            .expect_composition()
            .withf(|_, _, when| *when == at())
            .returning(move |_, _, _| Ok(Some(composed.clone())));
        let relations = relations(MockRelatedModels::new(), prompts);
        let chat = chat("mdl_x", Some(SystemPromptId::generate()));
        let expansion = Expansion {
            versions: true,
            ..Expansion::default()
        };
        let related = relations.related(&chat, expansion).await;
        assert_eq!(related.map(|r| r.composition), Ok(Some(expected)));
    }

    #[tokio::test]
    async fn a_prompt_deleted_since_or_none_composes_to_nothing() {
        let mut prompts = MockCompositions::new();
        prompts.expect_composition().returning(|_, _, _| Ok(None));
        let relations = relations(MockRelatedModels::new(), prompts);
        let expansion = Expansion {
            particles: true,
            ..Expansion::default()
        };
        for chat in [
            chat("mdl_x", Some(SystemPromptId::generate())),
            chat("mdl_x", None),
        ] {
            let related = relations.related(&chat, expansion).await;
            assert_eq!(related.map(|r| r.composition), Ok(Some(Vec::new())));
        }
    }

    #[tokio::test]
    async fn other_failures_are_not_hidden() {
        let mut prompts = MockCompositions::new();
        prompts
            .expect_composition()
            .returning(|_, _, _| Err(DomainError::internal("database down")));
        let relations = relations(MockRelatedModels::new(), prompts);
        let expansion = Expansion {
            particles: true,
            ..Expansion::default()
        };
        let chat = chat("mdl_x", Some(SystemPromptId::generate()));
        assert!(relations.related(&chat, expansion).await.is_err());
    }
}
