//! The `OrganizationStore` contract, run against every adapter: SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{Duration, TimeZone, Utc};
use tessera_kernel::{ActorKind, AuditRecord, DomainError, Limit, OrganizationId, PageRequest};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Backend, SqlOrganizationStore,
    testing::{TestDatabase, text_rows},
};

async fn a_creation_and_its_audit_record_commit_together(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlOrganizationStore::new(db.database.clone());
    let acme = organization("Acme", Plan::Pro);
    let record = |org: &Organization| {
        AuditRecord::by_operator(
            &org.id,
            ActorKind::Operator,
            "tessera-admin",
            "organization.create",
            "organization",
            org.id.as_str(),
            org.created_at,
        )
    };
    store.insert(&acme, &[record(&acme)]).await.unwrap();
    let events = || {
        text_rows(
            &db.database,
            "SELECT organization_id || ' ' || action || ' ' || actor_id AS value FROM audit_events",
        )
    };
    let expected = [format!("{} organization.create tessera-admin", acme.id)];
    assert_eq!(events().await, expected);
    // A refused creation (the same id again) leaves no second event.
    assert!(store.insert(&acme, &[record(&acme)]).await.is_err());
    assert_eq!(events().await, expected);
    // A refused event (for an organization that does not exist) undoes the creation.
    let globex = organization("Globex", Plan::Free);
    let stray = record(&organization("Nowhere", Plan::Free));
    assert!(store.insert(&globex, &[stray]).await.is_err());
    assert_eq!(store.get(&globex.id).await.unwrap(), None);
}

fn organization(name: &str, plan: Plan) -> Organization {
    // Microsecond precision, as the domain's clock produces.
    let at = Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456);
    Organization {
        id: OrganizationId::generate(),
        name: name.to_owned(),
        plan,
        created_at: at,
        updated_at: at + Duration::seconds(1),
    }
}

async fn inserted_records_read_back_unchanged(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlOrganizationStore::new(db.database.clone());
    let acme = organization("Acme – Ünïcode ✓", Plan::Enterprise);
    store.insert(&acme, &[]).await.unwrap();
    assert_eq!(store.get(&acme.id).await.unwrap(), Some(acme));
}

async fn unknown_ids_are_absent(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlOrganizationStore::new(db.database.clone());
    assert_eq!(store.get(&OrganizationId::generate()).await.unwrap(), None);
    assert_eq!(store.count().await.unwrap(), 0);
}

async fn duplicate_ids_conflict(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlOrganizationStore::new(db.database.clone());
    let acme = organization("Acme", Plan::Free);
    store.insert(&acme, &[]).await.unwrap();
    let again = store.insert(&acme, &[]).await.unwrap_err();
    assert!(
        matches!(
            again,
            DomainError::Conflict {
                code: "already_exists",
                ..
            }
        ),
        "{again:?}"
    );
}

async fn list_pages_in_creation_order(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlOrganizationStore::new(db.database.clone());
    let mut created = Vec::new();
    for i in 0..5 {
        let org = organization(&format!("org {i}"), Plan::Pro);
        store.insert(&org, &[]).await.unwrap();
        created.push(org);
    }
    let limit = Limit::new(2).unwrap();
    let first = store.list(&PageRequest::first(limit)).await.unwrap();
    assert_eq!(
        first,
        created[..3],
        "a page fetches one extra row to tell whether more exist"
    );
    let second = store
        .list(&PageRequest {
            limit,
            after: Some(created[1].id.clone()),
        })
        .await
        .unwrap();
    assert_eq!(second, created[2..5]);
    let last = store
        .list(&PageRequest {
            limit,
            after: Some(created[4].id.clone()),
        })
        .await
        .unwrap();
    assert!(last.is_empty());
    assert_eq!(store.count().await.unwrap(), 5);
}

async fn migrations_are_idempotent(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let again = tessera_store::Database::migrate(&db.url).await.unwrap();
    assert!(again.is_empty(), "nothing left to apply: {again:?}");
    db.database.ping().await.unwrap();
}

tessera_store::on_both_databases!(
    a_creation_and_its_audit_record_commit_together,
    inserted_records_read_back_unchanged,
    unknown_ids_are_absent,
    duplicate_ids_conflict,
    list_pages_in_creation_order,
    migrations_are_idempotent,
);
