//! The example's [`ModelResolver`]: one model, on the embedded engine, for every plan.

use std::sync::Arc;

use async_trait::async_trait;
use tessera_chats::ModelResolver;
use tessera_kernel::OrganizationId;
use tessera_models::{BaseModel, Catalog, ChatModel, ModelError, ResolvedModel, Usability};
use tessera_organizations::Plan;

/// The id completions name the model by.
pub const MODEL_ID: &str = "local/smollm2";

/// The model's description, in the catalog format the models domain reads.
const DESCRIPTION: &str = r#"
[providers.local]
kind = "local"
[[models]]
id = "local/smollm2"
display_name = "SmolLM2 135M"
provider = "local"
model_name = "SmolLM2-135M-Instruct"
context_window = 2048
max_tokens_per_request = 64
credit_multiplier = 1
"#;

pub struct OneModel {
    base: BaseModel,
    engine: Arc<dyn ChatModel>,
}

impl OneModel {
    pub fn new(engine: Arc<dyn ChatModel>) -> anyhow::Result<Self> {
        let catalog = Catalog::parse(DESCRIPTION, |_| None)?;
        let base = catalog
            .get(MODEL_ID)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("{MODEL_ID} is not in the description"))?;
        Ok(Self { base, engine })
    }
}

#[async_trait]
impl ModelResolver for OneModel {
    async fn resolve(
        &self,
        _: &OrganizationId,
        model_id: &str,
        plan: Plan,
    ) -> Result<ResolvedModel, ModelError> {
        self.resolve_base(model_id, plan)
    }

    fn resolve_base(&self, base_model_id: &str, _: Plan) -> Result<ResolvedModel, ModelError> {
        if base_model_id != self.base.id {
            return Err(ModelError::UnknownBaseModel(base_model_id.to_owned()));
        }
        Ok(ResolvedModel {
            model: None,
            base: self.base.clone(),
            usability: Usability::Usable,
            chat_model: self.engine.clone(),
        })
    }
}
