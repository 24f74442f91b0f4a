//! The `OrganizationStore` contract (`tessera_organizations::contract`, also run against
//! the in-memory store) on SQLite and PostgreSQL, and what only a database can show: the
//! audit events written in the creation's transaction, and idempotent migrations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use tessera_kernel::{ActorKind, AuditRecord};
use tessera_organizations::{Organization, OrganizationStore, Plan, contract::organization};
use tessera_store::{
    Backend, SqlOrganizationStore,
    testing::{TestDatabase, text_rows},
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

async fn migrations_are_idempotent(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let again = tessera_store::Database::migrate(&db.url).await.unwrap();
    assert!(again.is_empty(), "nothing left to apply: {again:?}");
    db.database.ping().await.unwrap();
}

tessera_store::on_both_databases!(
    a_creation_and_its_audit_record_commit_together,
    migrations_are_idempotent,
);
