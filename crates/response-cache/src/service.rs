//! Cache policies as the API offers them: read, write, delete and list an organization's
//! models' policies, each checked through [`CachePolicySpec::check`] before it is stored;
//! and [`CachePolicyService::effective`], the policy a completion of a model is cached
//! under, from a small cache so that completions do not read the store each time.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{Actor, AuditRecord, Clock, DomainError, LocSegment, OrganizationId};

use crate::{CachePolicySpec, CachePolicyStore, StoredCachePolicy};

/// How long an effective policy is used before it is read again. A change made on this
/// replica forgets its entry at once; other replicas see it within this time.
pub const POLICY_CACHE_TTL_SECS: i64 = 30;
/// The most (organization, model) pairs kept; when full, the cache starts over (simpler
/// than an eviction order, and a refill costs one small read per pair).
pub const POLICY_CACHE_CAPACITY: usize = 4_096;

/// The audit records' resource type; their resource id is the model's id.
pub const AUDIT_RESOURCE: &str = "response_cache_policy";

/// The one thing the response cache domain asks of models: whether a policy may name one.
#[async_trait]
pub trait CacheableModels: Send + Sync {
    /// Whether `model_id` is a catalog model or one of the organization's own models.
    async fn exists(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<bool, DomainError>;
}

/// What the service is built from.
pub struct CachePolicyPorts {
    pub store: Arc<dyn CachePolicyStore>,
    pub models: Arc<dyn CacheableModels>,
    pub clock: Arc<dyn Clock>,
}

/// One cached entry: the model's policy (None: its answers are not cached) and when it
/// expires.
type Entry = (Option<CachePolicySpec>, DateTime<Utc>);

/// Cache policies of organizations' models.
#[derive(Clone)]
pub struct CachePolicyService {
    store: Arc<dyn CachePolicyStore>,
    models: Arc<dyn CacheableModels>,
    clock: Arc<dyn Clock>,
    cache: Arc<Mutex<HashMap<(OrganizationId, String), Entry>>>,
    /// Moves on every change, so a policy read before a change is not kept after it (the
    /// read and the change may interleave).
    generation: Arc<AtomicU64>,
}

impl CachePolicyService {
    pub fn new(ports: CachePolicyPorts) -> Self {
        Self {
            store: ports.store,
            models: ports.models,
            clock: ports.clock,
            cache: Arc::default(),
            generation: Arc::default(),
        }
    }

    /// The stored policy of `model_id`; not found when there is none.
    pub async fn get(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<StoredCachePolicy, DomainError> {
        self.store
            .get(organization, model_id)
            .await?
            .ok_or_else(|| not_found(model_id))
    }

    /// Writes the policy of `model_id` (replacing any), once `spec` is checked: every
    /// problem is a validation error under `body`. The model must exist (a catalog model or
    /// one of the organization's own): not found otherwise.
    pub async fn put(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        model_id: &str,
        spec: CachePolicySpec,
    ) -> Result<StoredCachePolicy, DomainError> {
        let spec = spec
            .check(&[LocSegment::from("body")])
            .map_err(DomainError::Validation)?;
        if !self.models.exists(organization, model_id).await? {
            return Err(DomainError::not_found("model", model_id));
        }
        let now = self.clock.now();
        let policy = StoredCachePolicy {
            organization_id: organization.clone(),
            model_id: model_id.to_owned(),
            spec,
            updated_at: now,
            updated_by: actor.name().to_owned(),
        };
        let audit = audit(
            organization,
            actor,
            "response_cache_policy.update",
            model_id,
            now,
        );
        self.store.put(&policy, &audit).await?;
        self.forget(organization, model_id);
        Ok(policy)
    }

    /// Deletes the policy of `model_id`; not found when there is none. A policy can be
    /// deleted after its model was.
    pub async fn delete(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        model_id: &str,
    ) -> Result<(), DomainError> {
        let now = self.clock.now();
        let audit = audit(
            organization,
            actor,
            "response_cache_policy.delete",
            model_id,
            now,
        );
        if !self.store.delete(organization, model_id, &audit).await? {
            return Err(not_found(model_id));
        }
        self.forget(organization, model_id);
        Ok(())
    }

    /// The organization's policies, by model id.
    pub async fn list(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredCachePolicy>, DomainError> {
        let mut policies = self.store.list(organization).await?;
        // By code point, whatever the database's collation.
        policies.sort_by(|a, b| a.model_id.cmp(&b.model_id));
        Ok(policies)
    }

    /// The policy completions of `model_id` are cached under, `None` when the organization
    /// has none for that model (its answers are neither served from nor kept in the cache).
    /// Kept for [`POLICY_CACHE_TTL_SECS`].
    pub async fn effective(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<CachePolicySpec>, DomainError> {
        let now = self.clock.now();
        let key = (organization.clone(), model_id.to_owned());
        if let Some((policy, expires)) = self.with_cache(|cache| cache.get(&key).cloned())
            && expires > now
        {
            return Ok(policy);
        }
        let generation = self.generation.load(Ordering::Acquire);
        let policy = (self.store.get(organization, model_id).await?).map(|stored| stored.spec);
        let expires = now + Duration::seconds(POLICY_CACHE_TTL_SECS);
        self.with_cache(|cache| {
            if self.generation.load(Ordering::Acquire) != generation {
                return;
            }
            if cache.len() >= POLICY_CACHE_CAPACITY {
                cache.clear();
            }
            cache.insert(key, (policy.clone(), expires));
        });
        Ok(policy)
    }

    /// Drops the model's entry, which a change to its policy makes stale.
    fn forget(&self, organization: &OrganizationId, model_id: &str) {
        self.with_cache(|cache| {
            self.generation.fetch_add(1, Ordering::AcqRel);
            cache.remove(&(organization.clone(), model_id.to_owned()));
        });
    }

    fn with_cache<T>(
        &self,
        f: impl FnOnce(&mut HashMap<(OrganizationId, String), Entry>) -> T,
    ) -> T {
        f(&mut self.cache.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

fn not_found(model_id: &str) -> DomainError {
    DomainError::not_found("response cache policy of model", model_id)
}

/// The audit record of a change; the resource id is the model's id.
fn audit(
    organization: &OrganizationId,
    actor: &Actor,
    action: &str,
    model_id: &str,
    now: DateTime<Utc>,
) -> AuditRecord {
    actor.record(organization, action, AUDIT_RESOURCE, model_id, now)
}
