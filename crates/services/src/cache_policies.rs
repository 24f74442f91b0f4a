//! Response cache policies in the service graph: the policy service over the SQL store, and
//! the models a policy may name (the catalog's and the organization's own, as for guardrail
//! policies).

use std::sync::Arc;

use async_trait::async_trait;
use tessera_guardrails::GuardedModels;
use tessera_kernel::{Clock, DomainError, OrganizationId};
use tessera_models::ModelService;
use tessera_response_cache::{CachePolicyPorts, CachePolicyService, CacheableModels};
use tessera_store::{Database, SqlCachePolicyStore};

use crate::guardrails::PolicyModels;

/// The cache policy service over `database`.
pub fn build(
    database: &Database,
    models: ModelService,
    clock: Arc<dyn Clock>,
) -> CachePolicyService {
    CachePolicyService::new(CachePolicyPorts {
        store: Arc::new(SqlCachePolicyStore::new(database.clone())),
        models: Arc::new(PolicyModels(models)),
        clock,
    })
}

/// The same models a guardrail policy may name.
#[async_trait]
impl CacheableModels for PolicyModels {
    async fn exists(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<bool, DomainError> {
        GuardedModels::exists(self, organization, model_id).await
    }
}
