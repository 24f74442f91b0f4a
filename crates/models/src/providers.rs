//! The chat models a deployment can reach, and the resolution of a user model into
//! everything a chat needs: the model, its base model, whether it may be used, and the
//! provider that generates for it.

use std::{collections::HashMap, sync::Arc};

use tessera_kernel::OrganizationId;
use tessera_organizations::Plan;

use crate::{
    BaseModel, ChatModel, ModelError, ModelId, ModelService, Usability, UserModel, usability,
};

/// Chat models by base-model id, built at start-up from the catalog.
#[derive(Clone, Default)]
pub struct Providers(HashMap<String, Arc<dyn ChatModel>>);

impl Providers {
    pub fn insert(&mut self, base_model_id: impl Into<String>, model: Arc<dyn ChatModel>) {
        self.0.insert(base_model_id.into(), model);
    }

    pub fn get(&self, base_model_id: &str) -> Option<Arc<dyn ChatModel>> {
        self.0.get(base_model_id).cloned()
    }
}

/// A user model ready to generate.
#[derive(Clone)]
pub struct ResolvedModel {
    pub model: UserModel,
    pub base: BaseModel,
    /// `Deprecated` carries the sunset to announce (`Deprecation`/`Sunset` headers).
    pub usability: Usability,
    pub chat_model: Arc<dyn ChatModel>,
}

impl ModelService {
    /// Everything a chat needs to generate with one of the organization's models, or why it
    /// cannot: unknown model (404), retired (410), disabled (409), premium on a free plan
    /// (403), or no provider configured for its base model (503).
    pub async fn resolve(
        &self,
        organization: &OrganizationId,
        id: &ModelId,
        plan: Plan,
    ) -> Result<ResolvedModel, ModelError> {
        let view = self.get(organization, id).await?;
        let Some(base) = view.parent else {
            return Err(ModelError::EndOfLife {
                model: view.model.parent_model_id,
                replacement: None,
            });
        };
        let usability = usability(&base, view.model.enabled, plan, self.now())?;
        let chat_model = self
            .providers()
            .get(&base.id)
            .ok_or_else(|| ModelError::ProviderUnavailable(base.id.clone()))?;
        Ok(ResolvedModel {
            model: view.model,
            base,
            usability,
            chat_model,
        })
    }
}
