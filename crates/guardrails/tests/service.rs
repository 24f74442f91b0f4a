//! `GuardrailService` over the in-memory store: specs checked under `body` before they are
//! stored, a model's policy only for a model that exists, audit records, and the effective
//! policy (the organization's refined by the model's) with its cache forgotten on change.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use tessera_guardrails::{
    GuardedModels, GuardrailPorts, GuardrailService, PolicyScope, PolicySpec,
    contract::{at, full_spec},
    memory::InMemoryGuardrailPolicyStore,
};
use tessera_kernel::{Actor, Clock, DomainError, LocSegment, OrganizationId, TargetPolicy};

struct Models;

#[async_trait]
impl GuardedModels for Models {
    async fn exists(&self, _: &OrganizationId, model_id: &str) -> Result<bool, DomainError> {
        Ok(model_id != "unknown")
    }
}

struct Fixed(Mutex<DateTime<Utc>>);

impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

fn service() -> (
    GuardrailService,
    Arc<InMemoryGuardrailPolicyStore>,
    Arc<Fixed>,
) {
    let store = Arc::new(InMemoryGuardrailPolicyStore::new());
    let clock = Arc::new(Fixed(Mutex::new(at(0))));
    let service = GuardrailService::new(GuardrailPorts {
        store: store.clone(),
        models: Arc::new(Models),
        clock: clock.clone(),
        targets: TargetPolicy::default(),
    });
    (service, store, clock)
}

fn acme() -> OrganizationId {
    "acme".parse().unwrap()
}

fn actor() -> Actor {
    Actor::Operator("ops".into())
}

fn spec(json: serde_json::Value) -> PolicySpec {
    serde_json::from_value(json).unwrap()
}

#[tokio::test]
async fn an_invalid_spec_is_refused_under_body_and_not_stored() {
    let (service, store, _) = service();
    let bad = spec(serde_json::json!({"deny": [{"id": "x", "patterns": ["(unclosed"]}]}));
    let Err(DomainError::Validation(errors)) = service
        .put(&acme(), &actor(), PolicyScope::Organization, bad)
        .await
    else {
        panic!("accepted");
    };
    let loc: Vec<LocSegment> = vec![
        "body".into(),
        "deny".into(),
        LocSegment::Index(0),
        "patterns".into(),
        LocSegment::Index(0),
    ];
    assert_eq!(errors[0].loc, loc);
    assert_eq!(errors[0].kind, "pattern_invalid");
    assert!(store.audit_records().is_empty());
}

#[tokio::test]
async fn a_model_policy_needs_the_model() {
    let (service, _, _) = service();
    let refused = service
        .put(
            &acme(),
            &actor(),
            PolicyScope::Model("unknown".into()),
            full_spec(),
        )
        .await;
    assert!(
        matches!(refused, Err(DomainError::NotFound { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn crud_is_audited_and_absent_policies_are_not_found() {
    let (service, store, _) = service();
    let scope = PolicyScope::Organization;
    assert!(matches!(
        service.get(&acme(), &scope).await,
        Err(DomainError::NotFound { .. })
    ));
    let stored = service
        .put(&acme(), &actor(), scope.clone(), full_spec())
        .await
        .unwrap();
    assert_eq!(service.get(&acme(), &scope).await.unwrap(), stored);
    assert_eq!(stored.updated_by, "ops");
    service.delete(&acme(), &actor(), &scope).await.unwrap();
    assert!(matches!(
        service.delete(&acme(), &actor(), &scope).await,
        Err(DomainError::NotFound { .. })
    ));
    let actions: Vec<_> = store
        .audit_records()
        .into_iter()
        .map(|r| (r.action, r.resource_id))
        .collect();
    assert_eq!(
        actions,
        vec![
            (
                "guardrail_policy.update".to_owned(),
                Some("organization".to_owned())
            ),
            (
                "guardrail_policy.delete".to_owned(),
                Some("organization".to_owned())
            ),
        ]
    );
}

#[tokio::test]
async fn the_effective_policy_is_the_organizations_refined_by_the_models() {
    let (service, _, clock) = service();
    assert!(service.effective(&acme(), "m").await.unwrap().is_none());
    let organization =
        spec(serde_json::json!({"pii": [{"id": "emails", "kind": "email", "action": "block"}]}));
    service
        .put(&acme(), &actor(), PolicyScope::Organization, organization)
        .await
        .unwrap();
    let effective = service.effective(&acme(), "m").await.unwrap().unwrap();
    assert_eq!(effective.spec().pii[0].id, "emails");
    // A model's rule of the same id replaces the organization's; the cache is forgotten.
    let model = spec(
        serde_json::json!({"pii": [{"id": "emails", "kind": "email", "action": "redact"}], "maxInputChars": 10}),
    );
    service
        .put(&acme(), &actor(), PolicyScope::Model("m".into()), model)
        .await
        .unwrap();
    let effective = service.effective(&acme(), "m").await.unwrap().unwrap();
    assert_eq!(effective.max_input_chars(), Some(10));
    assert!(
        service
            .effective(&acme(), "other")
            .await
            .unwrap()
            .unwrap()
            .max_input_chars()
            .is_none()
    );
    // Removing the organization's policy leaves the model's alone.
    service
        .delete(&acme(), &actor(), &PolicyScope::Organization)
        .await
        .unwrap();
    let effective = service.effective(&acme(), "other").await.unwrap();
    assert!(effective.is_none());
    assert!(service.effective(&acme(), "m").await.unwrap().is_some());
    // Another organization sees none of it.
    let globex: OrganizationId = "globex".parse().unwrap();
    assert!(service.effective(&globex, "m").await.unwrap().is_none());
    *clock.0.lock().unwrap() = at(0) + Duration::seconds(60);
    assert!(service.effective(&acme(), "m").await.unwrap().is_some());
}
