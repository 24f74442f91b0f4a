//! The `GuardrailPolicyStore` contract, for anyone implementing the port: each function
//! checks promises of the trait against a fresh, empty store (a [`GuardrailPolicyStores`]),
//! and [`guardrail_policy_store_contract!`](crate::guardrail_policy_store_contract) turns
//! them into tests: policies read back exactly within their organization and scope only, a
//! put replaces the policy of its scope, model policies are listed without the
//! organization's, a delete removes its scope alone, and audit records are kept exactly
//! with the changes they record. Tessera runs it against the in-memory reference
//! (`crate::memory`) and both SQL stores.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::{ActorKind, AuditRecord, OrganizationId};

use crate::{
    Action, AppliesTo, DenyRuleSpec, GuardrailPolicyStore, ListSpec, PiiKind, PiiRuleSpec,
    PolicyScope, PolicySpec, StoredPolicy, memory::InMemoryGuardrailPolicyStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` a
/// [`GuardrailPolicyStores`](crate::contract::GuardrailPolicyStores) (the guard, e.g. a
/// throwaway database, lives until the test ends).
#[macro_export]
macro_rules! guardrail_policy_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            policies_read_back_exactly_within_their_organization_and_scope,
            a_put_replaces_the_policy_of_its_scope,
            model_policies_are_listed_without_the_organizations,
            a_delete_removes_its_scope_alone,
            changes_and_their_audit_records_commit_together,
        );
    };
}

/// What the checks run on: a policy store over one empty state, a way to make the
/// organizations policies refer to exist first, and the audit records written.
#[async_trait]
pub trait GuardrailPolicyStores: Send + Sync {
    fn store(&self) -> Arc<dyn GuardrailPolicyStore>;

    /// Makes the organization `id` (named `name`) exist; nothing for stores that keep no
    /// organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);

    /// Every audit record written so far, oldest first.
    async fn recorded_audit(&self) -> Vec<AuditRecord>;
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl GuardrailPolicyStores for Arc<InMemoryGuardrailPolicyStore> {
    fn store(&self) -> Arc<dyn GuardrailPolicyStore> {
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

/// The audit record of `action` on `scope` of `organization`.
pub fn audit(organization: &OrganizationId, action: &str, scope: &PolicyScope) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        action,
        "guardrail_policy",
        &format!("{}:{}", scope.kind(), scope.model_id()),
        at(0),
    )
}

/// A policy using every part of a spec, so reading it back checks them all.
pub fn full_spec() -> PolicySpec {
    PolicySpec {
        pii: vec![PiiRuleSpec {
            id: "emails".into(),
            kind: PiiKind::Email,
            action: Action::Redact,
            applies_to: AppliesTo::Both,
        }],
        deny: vec![DenyRuleSpec {
            id: "projects".into(),
            words: vec!["Project Ñandú".into()],
            patterns: vec![r"\bACME-\d{4}\b".into()],
            action: Action::Block,
            applies_to: AppliesTo::Input,
        }],
        allow: ListSpec {
            words: vec!["support@tessera.dev".into()],
            patterns: Vec::new(),
        },
        max_input_chars: Some(20_000),
        hook: None,
    }
}

/// A policy of `scope` in `organization`, written at `at(seconds)`.
pub fn policy(
    organization: &OrganizationId,
    scope: PolicyScope,
    spec: PolicySpec,
    seconds: i64,
) -> StoredPolicy {
    StoredPolicy {
        organization_id: organization.clone(),
        scope,
        spec,
        updated_at: at(seconds),
        updated_by: "ops".into(),
    }
}

fn organization(id: &str) -> OrganizationId {
    id.parse().unwrap()
}

fn model(id: &str) -> PolicyScope {
    PolicyScope::Model(id.into())
}

async fn two_organizations(stores: &dyn GuardrailPolicyStores) -> (OrganizationId, OrganizationId) {
    let (acme, globex) = (organization("acme"), organization("globex"));
    stores.organization_exists(&acme, "Acme").await;
    stores.organization_exists(&globex, "Globex").await;
    (acme, globex)
}

async fn put(stores: &dyn GuardrailPolicyStores, policy: &StoredPolicy) {
    let record = audit(
        &policy.organization_id,
        "guardrail_policy.update",
        &policy.scope,
    );
    stores.store().put(policy, &record).await.unwrap();
}

pub async fn policies_read_back_exactly_within_their_organization_and_scope(
    stores: &dyn GuardrailPolicyStores,
) {
    let (acme, globex) = two_organizations(stores).await;
    let store = stores.store();
    let org = policy(&acme, PolicyScope::Organization, full_spec(), 1);
    let base = policy(&acme, model("local/smollm2-135m"), PolicySpec::default(), 2);
    put(stores, &org).await;
    put(stores, &base).await;
    assert_eq!(
        store.get(&acme, &PolicyScope::Organization).await.unwrap(),
        Some(org)
    );
    assert_eq!(
        store
            .get(&acme, &model("local/smollm2-135m"))
            .await
            .unwrap(),
        Some(base)
    );
    assert_eq!(
        store
            .get(&globex, &PolicyScope::Organization)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .get(&globex, &model("local/smollm2-135m"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.get(&acme, &model("other")).await.unwrap(), None);
}

pub async fn a_put_replaces_the_policy_of_its_scope(stores: &dyn GuardrailPolicyStores) {
    let (acme, _) = two_organizations(stores).await;
    let store = stores.store();
    put(
        stores,
        &policy(&acme, PolicyScope::Organization, full_spec(), 1),
    )
    .await;
    let mut changed = policy(&acme, PolicyScope::Organization, PolicySpec::default(), 5);
    changed.updated_by = "someone-else".into();
    put(stores, &changed).await;
    assert_eq!(
        store.get(&acme, &PolicyScope::Organization).await.unwrap(),
        Some(changed)
    );
}

pub async fn model_policies_are_listed_without_the_organizations(
    stores: &dyn GuardrailPolicyStores,
) {
    let (acme, globex) = two_organizations(stores).await;
    let store = stores.store();
    put(
        stores,
        &policy(&acme, PolicyScope::Organization, full_spec(), 1),
    )
    .await;
    let first = policy(&acme, model("a-model"), full_spec(), 2);
    let second = policy(&acme, model("b-model"), PolicySpec::default(), 3);
    put(stores, &second).await;
    put(stores, &first).await;
    put(stores, &policy(&globex, model("c-model"), full_spec(), 4)).await;
    let mut listed = store.list_models(&acme).await.unwrap();
    listed.sort_by(|a, b| a.scope.cmp(&b.scope));
    assert_eq!(listed, vec![first, second]);
    assert_eq!(store.list_models(&globex).await.unwrap().len(), 1);
}

pub async fn a_delete_removes_its_scope_alone(stores: &dyn GuardrailPolicyStores) {
    let (acme, globex) = two_organizations(stores).await;
    let store = stores.store();
    let org = policy(&acme, PolicyScope::Organization, full_spec(), 1);
    let of_model = policy(&acme, model("a-model"), full_spec(), 2);
    let other = policy(&globex, PolicyScope::Organization, full_spec(), 3);
    for policy in [&org, &of_model, &other] {
        put(stores, policy).await;
    }
    let record = audit(&acme, "guardrail_policy.delete", &PolicyScope::Organization);
    assert!(
        store
            .delete(&acme, &PolicyScope::Organization, &record)
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete(&acme, &PolicyScope::Organization, &record)
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&acme, &PolicyScope::Organization).await.unwrap(),
        None
    );
    assert_eq!(
        store.get(&acme, &model("a-model")).await.unwrap(),
        Some(of_model)
    );
    assert_eq!(
        store
            .get(&globex, &PolicyScope::Organization)
            .await
            .unwrap(),
        Some(other)
    );
}

pub async fn changes_and_their_audit_records_commit_together(stores: &dyn GuardrailPolicyStores) {
    let (acme, _) = two_organizations(stores).await;
    let store = stores.store();
    let before = stores.recorded_audit().await.len();
    let scope = model("a-model");
    let written = audit(&acme, "guardrail_policy.update", &scope);
    store
        .put(&policy(&acme, scope.clone(), full_spec(), 1), &written)
        .await
        .unwrap();
    let deleted = audit(&acme, "guardrail_policy.delete", &scope);
    assert!(store.delete(&acme, &scope, &deleted).await.unwrap());
    // Deleting what is not there records nothing.
    let nothing = audit(&acme, "guardrail_policy.delete", &scope);
    assert!(!store.delete(&acme, &scope, &nothing).await.unwrap());
    let recorded = stores.recorded_audit().await;
    assert_eq!(recorded[before..], [written, deleted]);
}
