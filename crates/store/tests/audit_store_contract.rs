//! The `AuditEventStore` contract, run against every adapter: SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_audit::{AuditEventStore, AuditFilter, AuditScope};
use tessera_kernel::{
    ActorKind, AuditEventId, AuditRecord, DomainError, Limit, OrganizationId, PageRequest,
};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Backend, Database, SqlAuditStore, SqlOrganizationStore,
    testing::{TestDatabase, execute},
};

/// Microsecond precision, as the domain's clock produces.
fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456)
}

async fn organization(db: &Database, name: &str) -> OrganizationId {
    let org = Organization {
        id: OrganizationId::generate(),
        name: name.to_owned(),
        plan: Plan::Pro,
        created_at: at(),
        updated_at: at(),
    };
    SqlOrganizationStore::new(db.clone())
        .insert(&org, &[])
        .await
        .unwrap();
    org.id
}

fn event(
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

fn page(limit: i64, after: Option<&AuditRecord>) -> PageRequest<AuditEventId> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after: after.map(|record| record.id.clone()),
    }
}

async fn events_are_listed_newest_first_within_their_organization(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let globex = organization(&db.database, "Globex").await;
    let store = SqlAuditStore::new(db.database.clone());
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

async fn filters_match_exactly(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlAuditStore::new(db.database.clone());
    let early = event(Some(&acme), "particle.create", "prt_1", at());
    let mut late = event(
        Some(&acme),
        "api_key.revoke",
        "key_1",
        at() + Duration::hours(1),
    );
    late.actor_kind = ActorKind::ApiKey;
    late.actor_id = Some("key_2".into());
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

async fn retention_deletes_only_older_events(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlAuditStore::new(db.database.clone());
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

async fn events_are_append_only_and_name_real_organizations(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlAuditStore::new(db.database.clone());
    let record = event(Some(&acme), "client.create", "cli_1", at());
    store.insert(&record).await.unwrap();
    let refused = execute(
        &db.database,
        "UPDATE audit_events SET action = 'client.revoke'",
    )
    .await;
    assert!(refused.is_err(), "{refused:?}");
    let listed = store
        .list(&AuditScope::All, &AuditFilter::default(), &page(20, None))
        .await
        .unwrap();
    assert_eq!(listed, vec![record.clone()]);
    // The same id twice, or an organization that does not exist, is refused.
    let error = store.insert(&record).await.unwrap_err();
    assert!(matches!(error, DomainError::Conflict { .. }), "{error:?}");
    let stray = event(
        Some(&OrganizationId::generate()),
        "client.create",
        "cli_2",
        at(),
    );
    let error = store.insert(&stray).await.unwrap_err();
    assert!(matches!(error, DomainError::Conflict { .. }), "{error:?}");
}

tessera_store::on_both_databases!(
    events_are_listed_newest_first_within_their_organization,
    filters_match_exactly,
    retention_deletes_only_older_events,
    events_are_append_only_and_name_real_organizations,
);
