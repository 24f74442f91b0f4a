//! The `AuditEventStore` contract, for anyone implementing the port: each function checks
//! promises of the trait against a fresh, empty store (an [`AuditStores`]), and
//! [`audit_store_contract!`](crate::audit_store_contract) turns them into tests. Tessera
//! runs it against the in-memory reference (`crate::memory`) and both SQL stores. The event
//! builders are public, for an adapter's own checks beyond the contract.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::{
    ActorKind, AuditEventId, AuditRecord, DomainError, Limit, OrganizationId, PageRequest,
};

use crate::{AuditEventStore, AuditFilter, AuditScope, memory::InMemoryAuditEventStore};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` an [`AuditStores`](crate::contract::AuditStores)
/// (the guard, e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! audit_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            events_are_listed_newest_first_within_their_organization,
            filters_match_exactly,
            retention_deletes_only_older_events,
            duplicate_ids_conflict,
        );
    };
}

/// What the checks run on: an audit event store over one empty state, and a way to make an
/// organization exist before events refer to it (where foreign keys need it).
#[async_trait]
pub trait AuditStores: Send + Sync {
    fn store(&self) -> Arc<dyn AuditEventStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where events refer
    /// to it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl AuditStores for Arc<InMemoryAuditEventStore> {
    fn store(&self) -> Arc<dyn AuditEventStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}
}

/// A fresh organization, made to exist first.
async fn organization(stores: &impl AuditStores, name: &str) -> OrganizationId {
    let id = OrganizationId::generate();
    stores.organization_exists(&id, name).await;
    id
}

/// An instant of microsecond precision, as the domain's clock produces.
pub fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456)
}

/// An event of a client of `organization` (`None`: of no known organization), with every
/// optional field set; its resource type is the part of `action` before the dot.
pub fn event(
    organization: Option<&OrganizationId>,
    action: &str,
    resource_id: &str,
    occurred_at: DateTime<Utc>,
) -> AuditRecord {
    AuditRecord {
        id: AuditEventId::generate(),
        organization_id: organization.cloned(),
        occurred_at,
        actor_kind: ActorKind::Client,
        actor_id: Some("cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".into()),
        action: action.to_owned(),
        resource_type: action.split('.').next().unwrap().to_owned(),
        resource_id: Some(resource_id.to_owned()),
        address: Some("2001:db8::7".into()),
        request_id: Some("0190f5c1-a3e2-7c3d-9b1e-4a0c5d6e7f80".into()),
    }
}

/// A page of `limit` events, after `after` when set.
pub fn page(limit: i64, after: Option<&AuditRecord>) -> PageRequest<AuditEventId> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after: after.map(|record| record.id.clone()),
    }
}

pub async fn events_are_listed_newest_first_within_their_organization(stores: &impl AuditStores) {
    let acme = organization(stores, "Acme").await;
    let globex = organization(stores, "Globex").await;
    let store = stores.store();
    let first = event(Some(&acme), "particle.create", "prt_1", at());
    let foreign = event(Some(&globex), "particle.create", "prt_2", at());
    let mut second = event(Some(&acme), "particle.delete", "prt_1", at());
    // Optional fields left empty read back empty; an anonymous refusal has no organization.
    second.actor_id = None;
    second.address = None;
    second.request_id = None;
    let mut refused = event(None, "authentication.fail", "cli_x", at());
    refused.actor_kind = ActorKind::Anonymous;
    for record in [&first, &foreign, &second, &refused] {
        store.insert(record).await.unwrap();
    }

    let scope = AuditScope::Organization(acme.clone());
    let all = AuditFilter::default();
    let listed = store.list(&scope, &all, &page(20, None)).await.unwrap();
    assert_eq!(listed, vec![second.clone(), first.clone()]);
    assert_eq!(store.count(&scope, &all).await.unwrap(), 2);

    // Keyset pages: after the newest comes the older one, then nothing.
    let one = store.list(&scope, &all, &page(1, None)).await.unwrap();
    assert_eq!(one.len(), 2, "overfetches one row");
    let next = store
        .list(&scope, &all, &page(1, Some(&one[0])))
        .await
        .unwrap();
    assert_eq!(next, vec![first.clone()]);
    assert!(
        store
            .list(&scope, &all, &page(1, Some(&first)))
            .await
            .unwrap()
            .is_empty()
    );

    // Operators see every organization's events and those of none.
    let everything = store
        .list(&AuditScope::All, &all, &page(20, None))
        .await
        .unwrap();
    assert_eq!(everything, vec![refused, second, foreign, first]);
    assert_eq!(store.count(&AuditScope::All, &all).await.unwrap(), 4);
}

pub async fn filters_match_exactly(stores: &impl AuditStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let early = event(Some(&acme), "particle.create", "prt_1", at());
    let mut late = event(
        Some(&acme),
        "api_key.revoke",
        "key_1",
        at() + Duration::hours(1),
    );
    late.actor_kind = ActorKind::ApiKey;
    late.actor_id = Some("key_2".into());
    late.request_id = Some("0190f5c1-a3e2-7c3d-9b1e-4a0c5d6e7f81".into());
    for record in [&early, &late] {
        store.insert(record).await.unwrap();
    }
    let scope = AuditScope::Organization(acme.clone());
    let cases: Vec<(AuditFilter, Vec<&AuditRecord>)> = vec![
        // `from` is inclusive, `to` exclusive.
        (
            AuditFilter {
                from: Some(late.occurred_at),
                ..Default::default()
            },
            vec![&late],
        ),
        (
            AuditFilter {
                to: Some(late.occurred_at),
                ..Default::default()
            },
            vec![&early],
        ),
        (
            AuditFilter {
                from: Some(early.occurred_at),
                to: Some(late.occurred_at + Duration::microseconds(1)),
                ..Default::default()
            },
            vec![&late, &early],
        ),
        (
            AuditFilter {
                actor_kind: Some(ActorKind::ApiKey),
                ..Default::default()
            },
            vec![&late],
        ),
        (
            AuditFilter {
                actor_id: Some("key_2".into()),
                ..Default::default()
            },
            vec![&late],
        ),
        (
            AuditFilter {
                resource_type: Some("particle".into()),
                ..Default::default()
            },
            vec![&early],
        ),
        (
            AuditFilter {
                resource_id: Some("key_1".into()),
                ..Default::default()
            },
            vec![&late],
        ),
        (
            AuditFilter {
                action: Some("particle.create".into()),
                ..Default::default()
            },
            vec![&early],
        ),
        (
            AuditFilter {
                request_id: late.request_id.clone(),
                ..Default::default()
            },
            vec![&late],
        ),
        (
            AuditFilter {
                action: Some("particle".into()),
                ..Default::default()
            },
            vec![],
        ),
        (
            AuditFilter {
                action: Some("particle.create".into()),
                actor_kind: Some(ActorKind::ApiKey),
                ..Default::default()
            },
            vec![],
        ),
    ];
    for (filter, expected) in cases {
        let listed = store.list(&scope, &filter, &page(20, None)).await.unwrap();
        let expected: Vec<AuditRecord> = expected.into_iter().cloned().collect();
        assert_eq!(listed, expected, "{filter:?}");
        assert_eq!(
            store.count(&scope, &filter).await.unwrap(),
            expected.len() as u64,
            "{filter:?}"
        );
    }
}

pub async fn retention_deletes_only_older_events(stores: &impl AuditStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let old = event(
        Some(&acme),
        "client.create",
        "cli_1",
        at() - Duration::days(91),
    );
    let kept = event(
        Some(&acme),
        "client.revoke",
        "cli_1",
        at() - Duration::days(90),
    );
    let mut orphan = event(
        None,
        "authentication.fail",
        "key_1",
        at() - Duration::days(100),
    );
    orphan.actor_kind = ActorKind::Anonymous;
    for record in [&old, &kept, &orphan] {
        store.insert(record).await.unwrap();
    }
    let deleted = store
        .delete_before(at() - Duration::days(90))
        .await
        .unwrap();
    assert_eq!(deleted, 2);
    let left = store
        .list(&AuditScope::All, &AuditFilter::default(), &page(20, None))
        .await
        .unwrap();
    assert_eq!(left, vec![kept]);
}

/// Events are appended once: the same id again (with the same or other contents) is
/// refused and leaves the first unchanged.
pub async fn duplicate_ids_conflict(stores: &impl AuditStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let record = event(Some(&acme), "client.create", "cli_1", at());
    store.insert(&record).await.unwrap();
    let again = AuditRecord {
        action: "client.revoke".into(),
        ..record.clone()
    };
    for duplicate in [&record, &again] {
        let error = store.insert(duplicate).await.unwrap_err();
        assert!(
            matches!(
                error,
                DomainError::Conflict {
                    code: "already_exists",
                    ..
                }
            ),
            "{error:?}"
        );
    }
    let listed = store
        .list(&AuditScope::All, &AuditFilter::default(), &page(20, None))
        .await
        .unwrap();
    assert_eq!(listed, vec![record]);
}
