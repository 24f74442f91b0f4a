//! The `OrganizationStore` contract (`tessera_organizations::contract`, also run against
//! the in-memory store) on SQLite and PostgreSQL, and what only a database can show: the
//! audit events written in the creation's and an update's transaction, the settings'
//! defaults of rows written before they existed, and idempotent migrations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tessera_kernel::{ActorKind, AuditRecord};
use tessera_organizations::{
    Organization, OrganizationChange, OrganizationStore, Plan, contract::organization,
};
use tessera_store::{
    Backend, SqlOrganizationStore,
    testing::{TestDatabase, execute, text_rows},
};

/// A store over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlOrganizationStore, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    (SqlOrganizationStore::new(db.database.clone()), db)
}

mod contract_sqlite {
    tessera_organizations::organization_store_contract!(|| super::sql_store(
        tessera_store::Backend::Sqlite
    ));
}

mod contract_postgres {
    tessera_organizations::organization_store_contract!(|| super::sql_store(
        tessera_store::Backend::Postgres
    ));
}

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
}

async fn an_update_and_its_audit_record_commit_together(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlOrganizationStore::new(db.database.clone());
    let acme = organization("Acme", Plan::Pro);
    store.insert(&acme, &[]).await.unwrap();
    let at = acme.updated_at + chrono::Duration::minutes(1);
    let record = AuditRecord::by_operator(
        &acme.id,
        ActorKind::Operator,
        "tessera-admin",
        "organization.update",
        "organization",
        acme.id.as_str(),
        at,
    );
    let on = OrganizationChange {
        image_ocr: Some(true),
    };
    let changed = store.update(&acme.id, &on, at, &[record]).await.unwrap();
    assert!(changed.is_some_and(|organization| organization.image_ocr));
    let events = text_rows(
        &db.database,
        "SELECT organization_id || ' ' || action || ' ' || resource_id AS value FROM audit_events",
    )
    .await;
    assert_eq!(
        events,
        [format!("{} organization.update {}", acme.id, acme.id)]
    );
}

/// Rows written before the setting existed (as the migration finds them) read it as off.
async fn organizations_stored_without_the_setting_read_it_as_off(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    execute(
        &db.database,
        "INSERT INTO organizations (id, name, plan, created_at, updated_at) \
         VALUES ('org_older', 'Older', 'free', '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    )
    .await
    .unwrap();
    let store = SqlOrganizationStore::new(db.database.clone());
    let older = store
        .get(&"org_older".parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(!older.image_ocr);
}

async fn migrations_are_idempotent(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let again = tessera_store::Database::migrate(&db.url).await.unwrap();
    assert!(again.is_empty(), "nothing left to apply: {again:?}");
    db.database.ping().await.unwrap();
}

tessera_store::on_both_databases!(
    a_creation_and_its_audit_record_commit_together,
    an_update_and_its_audit_record_commit_together,
    organizations_stored_without_the_setting_read_it_as_off,
    migrations_are_idempotent,
);
