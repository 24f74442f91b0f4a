//! `CachePolicyService` over the in-memory store: specs checked under `body` before they are
//! stored, a policy only for a model that exists, audit records, the list by model id, and
//! the effective policy: kept 30 s, forgotten at once on change, never kept when read
//! before a change that interleaved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{Actor, AuditRecord, Clock, DomainError, LocSegment, OrganizationId};
use tessera_response_cache::{
    CachePolicyPorts, CachePolicyService, CachePolicySpec, CachePolicyStore, CacheableModels,
    POLICY_CACHE_TTL_SECS, StoredCachePolicy,
    contract::{at, audit, full_spec, policy},
    memory::InMemoryCachePolicyStore,
};
use tokio::sync::Notify;

struct Models;

#[async_trait]
impl CacheableModels for Models {
    async fn exists(&self, _: &OrganizationId, model_id: &str) -> Result<bool, DomainError> {
        Ok(model_id != "unknown")
    }
}

struct Fixed(Mutex<DateTime<Utc>>);

impl Fixed {
    fn advance(&self, seconds: i64) {
        *self.0.lock().unwrap() += Duration::seconds(seconds);
    }
}

impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

/// The in-memory store, whose next `get` can be held after it has read (to interleave a
/// change with an effective policy's read).
#[derive(Default)]
struct HeldStore {
    inner: InMemoryCachePolicyStore,
    hold: Mutex<Option<(Arc<Notify>, Arc<Notify>)>>,
}

#[async_trait]
impl CachePolicyStore for HeldStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<StoredCachePolicy>, DomainError> {
        let read = self.inner.get(organization, model_id).await;
        let hold = self.hold.lock().unwrap().take();
        if let Some((reached, release)) = hold {
            reached.notify_one();
            release.notified().await;
        }
        read
    }

    async fn list(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredCachePolicy>, DomainError> {
        self.inner.list(organization).await
    }

    async fn put(
        &self,
        policy: &StoredCachePolicy,
        audit: &AuditRecord,
    ) -> Result<(), DomainError> {
        self.inner.put(policy, audit).await
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        self.inner.delete(organization, model_id, audit).await
    }
}

fn service() -> (CachePolicyService, Arc<HeldStore>, Arc<Fixed>) {
    let store = Arc::new(HeldStore::default());
    let clock = Arc::new(Fixed(Mutex::new(at(0))));
    let service = CachePolicyService::new(CachePolicyPorts {
        store: store.clone(),
        models: Arc::new(Models),
        clock: clock.clone(),
    });
    (service, store, clock)
}

fn acme() -> OrganizationId {
    "acme".parse().unwrap()
}

fn actor() -> Actor {
    Actor::Operator("ops".into())
}

const MODEL: &str = "local/smollm2-135m-instruct";

#[tokio::test]
async fn an_invalid_spec_is_refused_under_body_and_not_stored() {
    let (service, store, _) = service();
    let bad = CachePolicySpec {
        ttl_seconds: 0,
        ..full_spec()
    };
    // Checked before the model is looked up: an unknown model's bad spec is still a 422.
    for model in [MODEL, "unknown"] {
        let Err(DomainError::Validation(errors)) =
            service.put(&acme(), &actor(), model, bad.clone()).await
        else {
            panic!("accepted");
        };
        let loc: Vec<LocSegment> = vec!["body".into(), "ttlSeconds".into()];
        assert_eq!(errors[0].loc, loc);
        assert_eq!(errors[0].kind, "range");
    }
    assert!(store.inner.audit_records().is_empty());
    assert!(store.inner.list(&acme()).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_policy_needs_its_model() {
    let (service, store, _) = service();
    let refused = service.put(&acme(), &actor(), "unknown", full_spec()).await;
    assert!(
        matches!(refused, Err(DomainError::NotFound { .. })),
        "{refused:?}"
    );
    assert!(store.inner.audit_records().is_empty());
}

#[tokio::test]
async fn changes_are_audited_and_absent_policies_are_not_found() {
    let (service, store, _) = service();
    assert!(matches!(
        service.get(&acme(), MODEL).await,
        Err(DomainError::NotFound { .. })
    ));
    let stored = service
        .put(&acme(), &actor(), MODEL, full_spec())
        .await
        .unwrap();
    assert_eq!(stored.updated_by, "ops");
    assert_eq!(stored.updated_at, at(0));
    assert_eq!(service.get(&acme(), MODEL).await.unwrap(), stored);
    service.delete(&acme(), &actor(), MODEL).await.unwrap();
    assert!(matches!(
        service.delete(&acme(), &actor(), MODEL).await,
        Err(DomainError::NotFound { .. })
    ));
    // A policy outliving its model can still be removed (deleting asks no model).
    store
        .inner
        .put(
            &policy(&acme(), "unknown", full_spec(), 1),
            &audit(&acme(), "response_cache_policy.update", "unknown"),
        )
        .await
        .unwrap();
    service.delete(&acme(), &actor(), "unknown").await.unwrap();
    let recorded: Vec<_> = (store.inner.audit_records().into_iter())
        .map(|r| (r.action, r.resource_type, r.resource_id))
        .collect();
    let record = |action: &str, model: &str| {
        (
            action.to_owned(),
            "response_cache_policy".to_owned(),
            Some(model.to_owned()),
        )
    };
    assert_eq!(
        recorded,
        vec![
            record("response_cache_policy.update", MODEL),
            record("response_cache_policy.delete", MODEL),
            record("response_cache_policy.update", "unknown"),
            record("response_cache_policy.delete", "unknown"),
        ]
    );
}

#[tokio::test]
async fn the_list_is_the_organizations_by_model_id() {
    let (service, _, _) = service();
    for model in [
        "openai/gpt-4o",
        "mdl_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
        MODEL,
    ] {
        service
            .put(&acme(), &actor(), model, full_spec())
            .await
            .unwrap();
    }
    let globex: OrganizationId = "globex".parse().unwrap();
    service
        .put(&globex, &actor(), "openai/o4-mini", full_spec())
        .await
        .unwrap();
    let listed: Vec<String> = (service.list(&acme()).await.unwrap().into_iter())
        .map(|policy| policy.model_id)
        .collect();
    assert_eq!(
        listed,
        vec![
            MODEL.to_owned(),
            "mdl_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".to_owned(),
            "openai/gpt-4o".to_owned(),
        ]
    );
    assert_eq!(service.list(&globex).await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_effective_policy_is_kept_30_s_and_forgotten_on_change() {
    let (service, store, clock) = service();
    assert_eq!(service.effective(&acme(), MODEL).await.unwrap(), None);
    // Written here: seen at once, although "no policy" was cached.
    service
        .put(&acme(), &actor(), MODEL, full_spec())
        .await
        .unwrap();
    assert_eq!(
        service.effective(&acme(), MODEL).await.unwrap(),
        Some(full_spec())
    );
    // Written elsewhere (another replica, straight into the store): seen once the entry
    // expires.
    let elsewhere = CachePolicySpec::default();
    store
        .inner
        .put(
            &policy(&acme(), MODEL, elsewhere.clone(), 1),
            &audit(&acme(), "response_cache_policy.update", MODEL),
        )
        .await
        .unwrap();
    clock.advance(POLICY_CACHE_TTL_SECS - 1);
    assert_eq!(
        service.effective(&acme(), MODEL).await.unwrap(),
        Some(full_spec())
    );
    clock.advance(1);
    assert_eq!(
        service.effective(&acme(), MODEL).await.unwrap(),
        Some(elsewhere)
    );
    // Deleted here: gone at once; another organization and another model never had one.
    service.delete(&acme(), &actor(), MODEL).await.unwrap();
    assert_eq!(service.effective(&acme(), MODEL).await.unwrap(), None);
    let globex: OrganizationId = "globex".parse().unwrap();
    assert_eq!(service.effective(&globex, MODEL).await.unwrap(), None);
    assert_eq!(
        service.effective(&acme(), "openai/gpt-4o").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn a_read_made_before_an_interleaved_change_is_not_kept() {
    let (service, store, _) = service();
    let (reached, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    *store.hold.lock().unwrap() = Some((reached.clone(), release.clone()));
    // The read finds no policy, then waits while one is written.
    let reading = tokio::spawn({
        let service = service.clone();
        async move { service.effective(&acme(), MODEL).await }
    });
    reached.notified().await;
    service
        .put(&acme(), &actor(), MODEL, full_spec())
        .await
        .unwrap();
    release.notify_one();
    assert_eq!(reading.await.unwrap().unwrap(), None);
    // Its stale answer was not cached: the next read sees the policy.
    assert_eq!(
        service.effective(&acme(), MODEL).await.unwrap(),
        Some(full_spec())
    );
}
