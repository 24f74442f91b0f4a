//! Which model answers a completion: the port through which the chats domain resolves a
//! model id to a callable model, and its implementation over the models domain's service.

use async_trait::async_trait;
use tessera_kernel::OrganizationId;
use tessera_models::{ModelError, ModelService, ResolvedModel};
use tessera_organizations::Plan;

/// Resolves the models completions name. A service embedding the chats domain may bring
/// its own (a fixed model, a registry of its own); Tessera's is [`ModelService`].
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ModelResolver: Send + Sync {
    /// The organization's model or a catalog base model named `model_id`, if `plan` may use
    /// it now (the lifecycle rule decides: end of life, disabled, premium on a free plan).
    async fn resolve(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        plan: Plan,
    ) -> Result<ResolvedModel, ModelError>;

    /// The base model a chat was created on: a chat keeps its base model and its system
    /// prompt, whatever became of the model it was started with.
    fn resolve_base(&self, base_model_id: &str, plan: Plan) -> Result<ResolvedModel, ModelError>;
}

#[async_trait]
impl ModelResolver for ModelService {
    async fn resolve(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        plan: Plan,
    ) -> Result<ResolvedModel, ModelError> {
        self.resolve_any(organization, model_id, plan).await
    }

    fn resolve_base(&self, base_model_id: &str, plan: Plan) -> Result<ResolvedModel, ModelError> {
        ModelService::resolve_base(self, base_model_id, plan)
    }
}
