//! Guardrail policies as the API offers them: read, write, delete and list an
//! organization's policy and its models', each checked through [`GuardrailPolicy::new`]
//! before it is stored; and [`GuardrailService::effective`], the compiled policy a
//! completion of a model is checked against (the organization's refined by the model's),
//! from a small cache so that completions do not read and compile policies each time.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{Actor, Clock, DomainError, LocSegment, OrganizationId, TargetPolicy};

use crate::{GuardrailPolicy, GuardrailPolicyStore, PolicyScope, PolicySpec, StoredPolicy};

/// How long a compiled policy is used before it is read again. A change made on this
/// replica empties its entries at once; other replicas see it within this time.
pub const CACHE_TTL_SECS: i64 = 30;
/// The most (organization, model) pairs kept compiled; when full, the cache starts over
/// (simpler than an eviction order, and a refill costs two small reads per pair).
pub const CACHE_CAPACITY: usize = 4_096;

/// The one thing the guardrails domain asks of models: whether a policy may name one.
#[async_trait]
pub trait GuardedModels: Send + Sync {
    /// Whether `model_id` is a catalog model or one of the organization's own models.
    async fn exists(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<bool, DomainError>;
}

/// What the service is built from.
pub struct GuardrailPorts {
    pub store: Arc<dyn GuardrailPolicyStore>,
    pub models: Arc<dyn GuardedModels>,
    pub clock: Arc<dyn Clock>,
    /// Which hosts a policy's hook may name.
    pub targets: TargetPolicy,
}

/// One compiled entry: the effective policy (None: no policy applies) and when it expires.
type Entry = (Option<GuardrailPolicy>, DateTime<Utc>);

/// Guardrail policies of organizations and their models.
#[derive(Clone)]
pub struct GuardrailService {
    store: Arc<dyn GuardrailPolicyStore>,
    models: Arc<dyn GuardedModels>,
    clock: Arc<dyn Clock>,
    targets: TargetPolicy,
    cache: Arc<Mutex<HashMap<(OrganizationId, String), Entry>>>,
    /// Moves on every change, so a policy compiled from a read made before a change is not
    /// kept after it (the read and the change may interleave).
    generation: Arc<AtomicU64>,
}

impl GuardrailService {
    pub fn new(ports: GuardrailPorts) -> Self {
        Self {
            store: ports.store,
            models: ports.models,
            clock: ports.clock,
            targets: ports.targets,
            cache: Arc::default(),
            generation: Arc::default(),
        }
    }

    /// The stored policy of `scope`; not found when there is none.
    pub async fn get(
        &self,
        organization: &OrganizationId,
        scope: &PolicyScope,
    ) -> Result<StoredPolicy, DomainError> {
        self.store
            .get(organization, scope)
            .await?
            .ok_or_else(|| not_found(scope))
    }

    /// Writes the policy of `scope` (replacing any), once `spec` is checked: every problem
    /// is a validation error under `body`. A model's policy needs the model to exist.
    pub async fn put(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        scope: PolicyScope,
        spec: PolicySpec,
    ) -> Result<StoredPolicy, DomainError> {
        GuardrailPolicy::new(spec.clone(), self.targets, &[LocSegment::from("body")])?;
        if let PolicyScope::Model(model_id) = &scope
            && !self.models.exists(organization, model_id).await?
        {
            return Err(DomainError::not_found("model", model_id));
        }
        let now = self.clock.now();
        let policy = StoredPolicy {
            organization_id: organization.clone(),
            scope,
            spec,
            updated_at: now,
            updated_by: actor.name().to_owned(),
        };
        let audit = audit(
            organization,
            actor,
            "guardrail_policy.update",
            &policy.scope,
            now,
        );
        self.store.put(&policy, &audit).await?;
        self.forget(organization, &policy.scope);
        Ok(policy)
    }

    /// Deletes the policy of `scope`; not found when there is none. A model's policy can be
    /// deleted after its model was.
    pub async fn delete(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        scope: &PolicyScope,
    ) -> Result<(), DomainError> {
        let now = self.clock.now();
        let audit = audit(organization, actor, "guardrail_policy.delete", scope, now);
        if !self.store.delete(organization, scope, &audit).await? {
            return Err(not_found(scope));
        }
        self.forget(organization, scope);
        Ok(())
    }

    /// The organization's model policies, by model id.
    pub async fn list_models(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredPolicy>, DomainError> {
        let mut policies = self.store.list_models(organization).await?;
        policies.sort_by(|a, b| a.scope.cmp(&b.scope));
        Ok(policies)
    }

    /// The policy a completion of `model_id` is checked against: the organization's refined
    /// by the model's, either alone when the other is absent, `None` when neither exists (or
    /// both are empty). Compiled policies are kept for [`CACHE_TTL_SECS`].
    pub async fn effective(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<GuardrailPolicy>, DomainError> {
        let now = self.clock.now();
        let key = (organization.clone(), model_id.to_owned());
        if let Some((policy, expires)) = self.with_cache(|cache| cache.get(&key).cloned())
            && expires > now
        {
            return Ok(policy);
        }
        let generation = self.generation.load(Ordering::Acquire);
        let model = PolicyScope::Model(model_id.to_owned());
        let organization_policy = self
            .compiled(organization, &PolicyScope::Organization)
            .await?;
        let model_policy = self.compiled(organization, &model).await?;
        let policy = match (organization_policy, model_policy) {
            (Some(organization), Some(model)) => Some(organization.refined_by(&model)),
            (one, None) | (None, one) => one,
        }
        .filter(|policy| !policy.is_empty());
        let expires = now + Duration::seconds(CACHE_TTL_SECS);
        self.with_cache(|cache| {
            if self.generation.load(Ordering::Acquire) != generation {
                return;
            }
            if cache.len() >= CACHE_CAPACITY {
                cache.clear();
            }
            cache.insert(key, (policy.clone(), expires));
        });
        Ok(policy)
    }

    /// The stored policy of `scope`, compiled. A stored policy that no longer compiles
    /// (a bound tightened since it was written) is an internal error, not a silent pass.
    async fn compiled(
        &self,
        organization: &OrganizationId,
        scope: &PolicyScope,
    ) -> Result<Option<GuardrailPolicy>, DomainError> {
        let Some(stored) = self.store.get(organization, scope).await? else {
            return Ok(None);
        };
        GuardrailPolicy::new(stored.spec, self.targets, &[])
            .map(Some)
            .map_err(|error| {
                DomainError::internal(format!(
                    "stored guardrail policy of {organization} ({} {}) no longer compiles: {error}",
                    scope.kind(),
                    scope.model_id()
                ))
            })
    }

    /// Drops what a change to `scope` makes stale: the organization's every entry for its
    /// own policy, the model's entry for a model's.
    fn forget(&self, organization: &OrganizationId, scope: &PolicyScope) {
        self.with_cache(|cache| {
            self.generation.fetch_add(1, Ordering::AcqRel);
            match scope {
                PolicyScope::Organization => cache.retain(|(org, _), _| org != organization),
                PolicyScope::Model(model) => {
                    cache.remove(&(organization.clone(), model.clone()));
                }
            }
        });
    }

    fn with_cache<T>(
        &self,
        f: impl FnOnce(&mut HashMap<(OrganizationId, String), Entry>) -> T,
    ) -> T {
        f(&mut self.cache.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

fn not_found(scope: &PolicyScope) -> DomainError {
    match scope {
        PolicyScope::Organization => {
            DomainError::not_found("guardrail policy", "of the organization")
        }
        PolicyScope::Model(model) => DomainError::not_found("guardrail policy of model", model),
    }
}

/// The audit record of a change; the resource id is the scope (`organization` or
/// `model:<id>`).
fn audit(
    organization: &OrganizationId,
    actor: &Actor,
    action: &str,
    scope: &PolicyScope,
    now: DateTime<Utc>,
) -> tessera_kernel::AuditRecord {
    let resource = match scope {
        PolicyScope::Organization => "organization".to_owned(),
        PolicyScope::Model(model) => format!("model:{model}"),
    };
    actor.record(organization, action, "guardrail_policy", &resource, now)
}
