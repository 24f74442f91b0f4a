//! The `AuditEventStore` contract (`tessera_audit::contract`, also run against the
//! in-memory reference) on SQLite and PostgreSQL, and what only a database can show: stored
//! events cannot be changed, and they refer to a stored organization.
#![cfg(feature = "audit")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_audit::{
    AuditEventStore, AuditFilter, AuditScope,
    contract::{AuditStores, at, event, page},
};
use tessera_kernel::{DomainError, OrganizationId};
use tessera_store::{
    Backend, Database, SqlAuditStore,
    testing::{TestDatabase, execute, store_organization},
};

/// An audit event store over one database, which stores the organizations events refer to.
struct SqlStores {
    audit: Arc<SqlAuditStore>,
    database: Database,
}

#[async_trait]
impl AuditStores for SqlStores {
    fn store(&self) -> Arc<dyn AuditEventStore> {
        self.audit.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        audit: Arc::new(SqlAuditStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_audit::audit_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_audit::audit_store_contract!(|| super::sql_store(tessera_store::Backend::Postgres));
}

async fn events_are_append_only_and_name_real_organizations(backend: Backend) {
    let (stores, db) = sql_store(backend).await;
    let acme = OrganizationId::generate();
    stores.organization_exists(&acme, "Acme").await;
    let store = &stores.audit;
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
    // An organization that does not exist is refused (the same id twice is the contract's).
    let stray = event(
        Some(&OrganizationId::generate()),
        "client.create",
        "cli_2",
        at(),
    );
    let error = store.insert(&stray).await.unwrap_err();
    assert!(matches!(error, DomainError::Conflict { .. }), "{error:?}");
}

tessera_store::on_both_databases!(events_are_append_only_and_name_real_organizations);
