//! The response cache in the service graph (decision 0063): the completion pipeline's
//! [`ResponseCache`] reading a model's effective policy from the policies' service,
//! embedding questions with the knowledge embedder, keeping answers in this process's
//! memory, and counting each lookup in the metrics.

use std::sync::Arc;

use async_trait::async_trait;
use tessera_chats::{CacheStatus, ChatError, ResponseCache};
use tessera_kernel::{DomainError, OrganizationId};
use tessera_knowledge::Embedder;
use tessera_response_cache::{
    CachePolicyService, CachePolicySpec, InMemoryResponseCache, ResponseCacheStore,
};
use tessera_setup::config::ResponseCacheSettings;

/// The response cache completions use.
pub struct PolicyResponseCache {
    policies: CachePolicyService,
    /// The semantic cache's embedder; without one, policies serve exact matches only.
    embedder: Option<Arc<dyn Embedder>>,
    store: Arc<dyn ResponseCacheStore>,
}

impl PolicyResponseCache {
    pub fn new(
        settings: &ResponseCacheSettings,
        policies: CachePolicyService,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Self {
        let store = InMemoryResponseCache::new(
            settings.max_entries,
            settings.max_mib.saturating_mul(1 << 20),
        );
        Self {
            policies,
            embedder,
            store: Arc::new(store),
        }
    }
}

#[async_trait]
impl ResponseCache for PolicyResponseCache {
    async fn policy(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<CachePolicySpec>, ChatError> {
        let policy = self.policies.effective(organization, model_id).await?;
        Ok(policy.map(|mut policy| {
            if self.embedder.is_none() {
                policy.semantic = None;
            }
            policy
        }))
    }

    async fn embed(&self, question: &str) -> Result<Vec<f32>, ChatError> {
        let Some(embedder) = &self.embedder else {
            return Err(DomainError::internal("the semantic cache has no embedder").into());
        };
        // Questions are compared with questions: both embedded the same way, as queries.
        embedder
            .embed_query(question.to_owned())
            .await
            .map_err(|error| {
                DomainError::Unavailable {
                    message: format!("the embedder failed: {error}"),
                }
                .into()
            })
    }

    fn store(&self) -> Arc<dyn ResponseCacheStore> {
        self.store.clone()
    }

    fn looked_up(&self, status: CacheStatus) {
        tessera_metrics_prometheus::response_cache_lookup(status.as_str());
    }
}
