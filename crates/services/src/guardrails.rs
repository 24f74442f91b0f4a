//! Guardrail policies in the service graph (decision 0061): the policy service over the SQL
//! store, the models a policy may name (the catalog's and the organization's own), and the
//! completion pipeline's [`GuardrailSource`] reading the effective policy, asking its hook
//! over HTTP and counting each decision in the metrics.

use std::sync::Arc;

use async_trait::async_trait;
use tessera_chats::GuardrailSource;
use tessera_guardrails::{
    GuardedModels, GuardedRequest, GuardrailPorts, GuardrailRecord, GuardrailService, Guardrails,
};
use tessera_guardrails_http::HttpGuardrailHook;
use tessera_kernel::{Clock, DomainError, OrganizationId, TargetPolicy};
use tessera_models::{ModelError, ModelId, ModelService};
use tessera_setup::config::GuardrailSettings;
use tessera_store::{Database, SqlGuardrailPolicyStore};

/// The policy service over `database`, and the completions' guardrails whose hooks it
/// asks over HTTP. A hook may name private addresses only with
/// `guardrails.allow_private_targets`, checked when a policy is written and again on the
/// addresses each call connects to.
pub fn build(
    settings: &GuardrailSettings,
    database: &Database,
    models: ModelService,
    clock: Arc<dyn Clock>,
) -> Result<(GuardrailService, PolicyGuardrails), String> {
    let targets = TargetPolicy {
        allow_private_targets: settings.allow_private_targets,
    };
    let hook = HttpGuardrailHook::new(targets).map_err(|e| e.to_string())?;
    let policies = GuardrailService::new(GuardrailPorts {
        store: Arc::new(SqlGuardrailPolicyStore::new(database.clone())),
        models: Arc::new(PolicyModels(models)),
        clock,
        targets,
    });
    let guardrails = PolicyGuardrails {
        policies: policies.clone(),
        guardrails: Guardrails::new(Arc::new(hook)),
    };
    Ok((policies, guardrails))
}

/// The models a policy may name: the catalog's, and the organization's own (response cache
/// policies name the same, `crate::cache_policies`).
pub(crate) struct PolicyModels(pub(crate) ModelService);

#[async_trait]
impl GuardedModels for PolicyModels {
    async fn exists(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<bool, DomainError> {
        if self.0.catalog().get(model_id).is_some() {
            return Ok(true);
        }
        let Ok(id) = model_id.parse::<ModelId>() else {
            return Ok(false);
        };
        match self.0.get(organization, &id).await {
            Ok(_) => Ok(true),
            Err(ModelError::NotFound(_)) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}

/// Completions' guardrails: the organization's policy refined by the model's, its hook
/// asked over HTTP.
pub struct PolicyGuardrails {
    policies: GuardrailService,
    guardrails: Guardrails,
}

#[async_trait]
impl GuardrailSource for PolicyGuardrails {
    async fn begin(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<GuardedRequest>, DomainError> {
        let policy = self.policies.effective(organization, model_id).await?;
        Ok(policy.map(|policy| self.guardrails.begin(policy)))
    }

    fn report(&self, record: &GuardrailRecord) {
        for outcome in record.outcomes() {
            tessera_metrics_prometheus::guardrail_decision(
                outcome.kind.as_str(),
                outcome.direction.as_str(),
                outcome.effect.as_str(),
                outcome.count,
            );
        }
    }
}
