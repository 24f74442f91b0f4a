//! The resolution of a user model into everything a chat needs: the model, its base model,
//! whether it may be used, and the provider that generates for it; and the deployments'
//! health as the model service reports it.

use std::sync::Arc;

use tessera_kernel::OrganizationId;
use tessera_organizations::Plan;

use crate::{
    BaseModel, ChatModel, DeploymentHealth, ModelError, ModelId, ModelService, Usability,
    UserModel, usability,
};

/// A model ready to generate: a user model with its base model, or a base model used
/// directly.
#[derive(Clone)]
pub struct ResolvedModel {
    /// `None` when a catalog base model is used directly.
    pub model: Option<UserModel>,
    pub base: BaseModel,
    /// `Deprecated` carries the sunset to announce (`Deprecation`/`Sunset` headers).
    pub usability: Usability,
    pub chat_model: Arc<dyn ChatModel>,
}

impl ModelService {
    /// Each catalog model served by a remote provider, with its deployments' health.
    pub async fn deployment_health(&self) -> Vec<(String, Vec<DeploymentHealth>)> {
        let mut models = Vec::new();
        for model in self.catalog().models() {
            if let Some(health) = self.providers().health(&model.id).await {
                models.push((model.id.clone(), health));
            }
        }
        models
    }

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
        let mut resolved = self.resolve_usable(base, view.model.enabled, plan)?;
        resolved.model = Some(view.model);
        Ok(resolved)
    }

    /// A catalog base model, used directly: unknown → 404, otherwise as `resolve`.
    pub fn resolve_base(
        &self,
        base_model_id: &str,
        plan: Plan,
    ) -> Result<ResolvedModel, ModelError> {
        let base = self
            .catalog()
            .get(base_model_id)
            .cloned()
            .ok_or_else(|| ModelError::UnknownBaseModel(base_model_id.to_owned()))?;
        self.resolve_usable(base, true, plan)
    }

    /// What a chat names as its model: a user model id (`mdl_…`) or a catalog base-model id.
    pub async fn resolve_any(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        plan: Plan,
    ) -> Result<ResolvedModel, ModelError> {
        match model_id.parse::<ModelId>() {
            Ok(id) => self.resolve(organization, &id, plan).await,
            Err(_) => self.resolve_base(model_id, plan),
        }
    }

    fn resolve_usable(
        &self,
        base: BaseModel,
        enabled: bool,
        plan: Plan,
    ) -> Result<ResolvedModel, ModelError> {
        let usability = usability(&base, enabled, plan, self.now())?;
        let chat_model = self
            .providers()
            .get(&base.id)
            .ok_or_else(|| ModelError::ProviderUnavailable(base.id.clone()))?;
        Ok(ResolvedModel {
            model: None,
            base,
            usability,
            chat_model,
        })
    }
}
