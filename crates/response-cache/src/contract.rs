//! The `CachePolicyStore` contract, for anyone implementing the port: each function checks
//! promises of the trait against a fresh, empty store (a [`CachePolicyStores`]), and
//! [`cache_policy_store_contract!`](crate::cache_policy_store_contract) turns them into
//! tests: policies read back exactly within their organization and model only, a put
//! replaces the policy of its model, an organization's policies are listed by model id
//! without another's, a delete removes its model's alone, and audit records are kept exactly
//! with the changes they record. Tessera runs it against the in-memory reference
//! (`crate::memory`) and both SQL stores.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::{ActorKind, AuditRecord, OrganizationId};

use crate::{
    CachePolicySpec, CachePolicyStore, SemanticSpec, StoredCachePolicy,
    memory::InMemoryCachePolicyStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` a
/// [`CachePolicyStores`](crate::contract::CachePolicyStores) (the guard, e.g. a throwaway
/// database, lives until the test ends).
#[macro_export]
macro_rules! cache_policy_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            cache_policies_read_back_exactly_within_their_organization_and_model,
            a_put_replaces_the_policy_of_its_model,
            an_organizations_policies_are_listed_by_model_id,
            a_delete_removes_its_models_policy_alone,
            cache_policy_changes_and_their_audit_records_commit_together,
        );
    };
}

/// What the checks run on: a policy store over one empty state, a way to make the
/// organizations policies refer to exist first, and the audit records written.
#[async_trait]
pub trait CachePolicyStores: Send + Sync {
    fn store(&self) -> Arc<dyn CachePolicyStore>;

    /// Makes the organization `id` (named `name`) exist; nothing for stores that keep no
    /// organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);

    /// Every audit record written so far, oldest first.
    async fn recorded_audit(&self) -> Vec<AuditRecord>;
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl CachePolicyStores for Arc<InMemoryCachePolicyStore> {
    fn store(&self) -> Arc<dyn CachePolicyStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}

    async fn recorded_audit(&self) -> Vec<AuditRecord> {
        self.audit_records()
    }
}

/// A fixed instant `seconds` after the contract's origin, in whole microseconds (what both
/// databases keep).
pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 3, 1, 2, 3).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

/// The audit record of `action` on the policy of `model_id` in `organization`.
pub fn audit(organization: &OrganizationId, action: &str, model_id: &str) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        action,
        "response_cache_policy",
        model_id,
        at(0),
    )
}

/// A policy using every part of a spec (numbers a JSON round trip keeps exactly), so reading
/// it back checks them all.
pub fn full_spec() -> CachePolicySpec {
    CachePolicySpec {
        ttl_seconds: 86_400,
        semantic: Some(SemanticSpec { threshold: 0.875 }),
        max_temperature: 0.25,
    }
}

/// The policy of `model_id` in `organization`, written at `at(seconds)`.
pub fn policy(
    organization: &OrganizationId,
    model_id: &str,
    spec: CachePolicySpec,
    seconds: i64,
) -> StoredCachePolicy {
    StoredCachePolicy {
        organization_id: organization.clone(),
        model_id: model_id.to_owned(),
        spec,
        updated_at: at(seconds),
        updated_by: "ops".into(),
    }
}

fn organization(id: &str) -> OrganizationId {
    id.parse().unwrap()
}

async fn two_organizations(stores: &dyn CachePolicyStores) -> (OrganizationId, OrganizationId) {
    let (acme, globex) = (organization("acme"), organization("globex"));
    stores.organization_exists(&acme, "Acme").await;
    stores.organization_exists(&globex, "Globex").await;
    (acme, globex)
}

async fn put(stores: &dyn CachePolicyStores, policy: &StoredCachePolicy) {
    let record = audit(
        &policy.organization_id,
        "response_cache_policy.update",
        &policy.model_id,
    );
    stores.store().put(policy, &record).await.unwrap();
}

pub async fn cache_policies_read_back_exactly_within_their_organization_and_model(
    stores: &dyn CachePolicyStores,
) {
    let (acme, globex) = two_organizations(stores).await;
    let store = stores.store();
    let catalog = policy(&acme, "local/smollm2-135m-instruct", full_spec(), 1);
    let own = policy(
        &acme,
        "mdl_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
        CachePolicySpec::default(),
        2,
    );
    put(stores, &catalog).await;
    put(stores, &own).await;
    assert_eq!(
        store
            .get(&acme, "local/smollm2-135m-instruct")
            .await
            .unwrap(),
        Some(catalog)
    );
    assert_eq!(
        store
            .get(&acme, "mdl_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")
            .await
            .unwrap(),
        Some(own)
    );
    assert_eq!(
        store
            .get(&globex, "local/smollm2-135m-instruct")
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.get(&acme, "local").await.unwrap(), None);
    assert_eq!(store.get(&acme, "other").await.unwrap(), None);
}

pub async fn a_put_replaces_the_policy_of_its_model(stores: &dyn CachePolicyStores) {
    let (acme, _) = two_organizations(stores).await;
    let store = stores.store();
    put(stores, &policy(&acme, "a-model", full_spec(), 1)).await;
    let mut changed = policy(&acme, "a-model", CachePolicySpec::default(), 5);
    changed.updated_by = "someone-else".into();
    put(stores, &changed).await;
    assert_eq!(store.get(&acme, "a-model").await.unwrap(), Some(changed));
    assert_eq!(store.list(&acme).await.unwrap().len(), 1);
}

pub async fn an_organizations_policies_are_listed_by_model_id(stores: &dyn CachePolicyStores) {
    let (acme, globex) = two_organizations(stores).await;
    let store = stores.store();
    assert_eq!(store.list(&acme).await.unwrap(), Vec::new());
    let first = policy(&acme, "a-model", full_spec(), 1);
    let second = policy(&acme, "b-model", CachePolicySpec::default(), 2);
    let third = policy(&acme, "c-model", full_spec(), 3);
    for written in [&third, &first, &second] {
        put(stores, written).await;
    }
    put(stores, &policy(&globex, "b-model", full_spec(), 4)).await;
    assert_eq!(store.list(&acme).await.unwrap(), vec![first, second, third]);
    let theirs = store.list(&globex).await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].organization_id, globex);
}

pub async fn a_delete_removes_its_models_policy_alone(stores: &dyn CachePolicyStores) {
    let (acme, globex) = two_organizations(stores).await;
    let store = stores.store();
    let gone = policy(&acme, "a-model", full_spec(), 1);
    let kept = policy(&acme, "b-model", full_spec(), 2);
    let other = policy(&globex, "a-model", full_spec(), 3);
    for written in [&gone, &kept, &other] {
        put(stores, written).await;
    }
    let record = audit(&acme, "response_cache_policy.delete", "a-model");
    assert!(store.delete(&acme, "a-model", &record).await.unwrap());
    assert!(!store.delete(&acme, "a-model", &record).await.unwrap());
    assert_eq!(store.get(&acme, "a-model").await.unwrap(), None);
    assert_eq!(store.get(&acme, "b-model").await.unwrap(), Some(kept));
    assert_eq!(store.get(&globex, "a-model").await.unwrap(), Some(other));
}

pub async fn cache_policy_changes_and_their_audit_records_commit_together(
    stores: &dyn CachePolicyStores,
) {
    let (acme, _) = two_organizations(stores).await;
    let store = stores.store();
    let before = stores.recorded_audit().await.len();
    let written = audit(&acme, "response_cache_policy.update", "a-model");
    store
        .put(&policy(&acme, "a-model", full_spec(), 1), &written)
        .await
        .unwrap();
    let deleted = audit(&acme, "response_cache_policy.delete", "a-model");
    assert!(store.delete(&acme, "a-model", &deleted).await.unwrap());
    // Deleting what is not there records nothing.
    let nothing = audit(&acme, "response_cache_policy.delete", "a-model");
    assert!(!store.delete(&acme, "a-model", &nothing).await.unwrap());
    let recorded = stores.recorded_audit().await;
    assert_eq!(recorded[before..], [written, deleted]);
}
