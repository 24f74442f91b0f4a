//! The `ClientStore` contract (`tessera_identity::contract`, also run against the in-memory
//! store) on SQLite and PostgreSQL, and what only a database can show: the audit events
//! written in each change's transaction, and clients refer to a stored organization.
#![cfg(feature = "identity")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_identity::{
    ClientId, ClientStore,
    contract::{ClientStores, at, client, client_changed, client_created},
};
use tessera_kernel::OrganizationId;
use tessera_store::{
    Backend, Database, SqlClientStore,
    testing::{TestDatabase, store_organization, text_rows},
};

/// A client store over one database, which stores the organizations clients refer to.
struct SqlStores {
    clients: Arc<SqlClientStore>,
    database: Database,
}

#[async_trait]
impl ClientStores for SqlStores {
    fn store(&self) -> Arc<dyn ClientStore> {
        self.clients.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        clients: Arc::new(SqlClientStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_identity::client_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_identity::client_store_contract!(|| super::sql_store(tessera_store::Backend::Postgres));
}

/// Inserts a fresh organization and returns its id.
async fn organization(db: &Database, name: &str) -> OrganizationId {
    let id = OrganizationId::generate();
    store_organization(db, &id, name).await;
    id
}

/// The audit events stored, as `action resource_id`, oldest first.
async fn audit_events(db: &Database) -> Vec<String> {
    text_rows(
        db,
        "SELECT action || ' ' || resource_id AS value FROM audit_events ORDER BY id",
    )
    .await
}

async fn changes_and_their_audit_records_commit_together(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlClientStore::new(db.database.clone());
    let ci = client(&acme, "ci");
    store.insert(&ci, &client_created(&ci)).await.unwrap();
    let created = format!("client.create {}", ci.client.id);
    assert_eq!(
        audit_events(&db.database).await,
        std::slice::from_ref(&created)
    );

    // A refused insert (the same id again) leaves no event.
    assert!(store.insert(&ci, &client_created(&ci)).await.is_err());
    // A change that changes nothing (an unknown client) leaves none either.
    assert!(
        !store
            .revoke(&acme, &ClientId::generate(), at(), &client_changed(&acme))
            .await
            .unwrap()
    );
    assert_eq!(
        audit_events(&db.database).await,
        std::slice::from_ref(&created)
    );

    // A refused event (an organization that does not exist) undoes the change.
    let stray = client_changed(&OrganizationId::generate());
    let refused = store.revoke(&acme, &ci.client.id, at(), &stray).await;
    assert!(refused.is_err(), "{refused:?}");
    let still = store.get(&acme, &ci.client.id).await.unwrap().unwrap();
    assert!(still.revoked_at.is_none(), "the revocation was rolled back");

    assert!(
        store
            .revoke(&acme, &ci.client.id, at(), &client_changed(&acme))
            .await
            .unwrap()
    );
    assert_eq!(
        audit_events(&db.database).await,
        [created, "client.revoke cli_x".to_owned()]
    );
}

async fn clients_need_an_existing_organization(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlClientStore::new(db.database.clone());
    let missing = OrganizationId::generate();
    let orphan = client(&missing, "orphan");
    let refused = store.insert(&orphan, &client_created(&orphan)).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(
        store
            .find_for_authentication(&orphan.client.id)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.count(&missing).await.unwrap(), 0);
}

tessera_store::on_both_databases!(
    changes_and_their_audit_records_commit_together,
    clients_need_an_existing_organization,
);
