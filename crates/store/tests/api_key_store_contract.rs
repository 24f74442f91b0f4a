//! The `ApiKeyStore` contract (`tessera_identity::contract`, also run against the in-memory
//! store) on SQLite and PostgreSQL, and what only a database can show: the audit events
//! written in each change's transaction, keys refer to a stored organization, and the row
//! holds nothing that could be the secret.
#![cfg(feature = "identity")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_identity::{
    ApiKeyId, ApiKeyStore,
    contract::{ApiKeyStores, at, key, key_changed, key_created},
};
use tessera_kernel::OrganizationId;
use tessera_store::{
    Backend, Database, SqlApiKeyStore,
    testing::{TestDatabase, store_organization, text_rows},
};

/// A key store over one database, which stores the organizations keys refer to.
struct SqlStores {
    keys: Arc<SqlApiKeyStore>,
    database: Database,
}

#[async_trait]
impl ApiKeyStores for SqlStores {
    fn store(&self) -> Arc<dyn ApiKeyStore> {
        self.keys.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        keys: Arc::new(SqlApiKeyStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_identity::api_key_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_identity::api_key_store_contract!(|| super::sql_store(
        tessera_store::Backend::Postgres
    ));
}

/// Inserts a fresh organization and returns its id.
async fn organization(db: &Database, name: &str) -> OrganizationId {
    let id = OrganizationId::generate();
    store_organization(db, &id, name).await;
    id
}

async fn changes_and_their_audit_records_commit_together(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let events = || {
        text_rows(
            &db.database,
            "SELECT action || ' ' || resource_id AS value FROM audit_events ORDER BY id",
        )
    };
    let bot = key(&acme, "bot");
    store.insert(&bot, &key_created(&bot)).await.unwrap();
    let created = format!("api_key.create {}", bot.key.id);
    assert_eq!(events().await, std::slice::from_ref(&created));
    // A refused insert (the same hash again) leaves no event, nor does revoking nothing.
    let mut twin = key(&acme, "twin");
    twin.secret_hash = bot.secret_hash.clone();
    assert!(store.insert(&twin, &key_created(&twin)).await.is_err());
    assert!(
        !store
            .revoke(&acme, &ApiKeyId::generate(), at(), &key_changed(&acme))
            .await
            .unwrap()
    );
    assert_eq!(events().await, std::slice::from_ref(&created));
    // A refused event undoes the change it records.
    let stray = key_changed(&OrganizationId::generate());
    assert!(
        store
            .revoke(&acme, &bot.key.id, at(), &stray)
            .await
            .is_err()
    );
    assert!(
        store.get(&acme, &bot.key.id).await.unwrap().is_some(),
        "still active"
    );
    assert!(
        store
            .revoke(&acme, &bot.key.id, at(), &key_changed(&acme))
            .await
            .unwrap()
    );
    assert_eq!(events().await, [created, "api_key.revoke key_x".to_owned()]);
}

async fn keys_need_an_existing_organization(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let orphan = key(&OrganizationId::generate(), "orphan");
    assert!(store.insert(&orphan, &key_created(&orphan)).await.is_err());
    assert_eq!(store.find_by_hash(&orphan.secret_hash).await.unwrap(), None);
}

/// The table holds the hash it was given and nothing else that could be the secret.
async fn the_row_holds_what_it_was_given(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let bot = key(&acme, "bot");
    store.insert(&bot, &key_created(&bot)).await.unwrap();
    let rows = text_rows(
        &db.database,
        "SELECT id || ' ' || name || ' ' || scopes || ' ' || secret_hash || ' ' || created_by AS value FROM api_keys",
    )
    .await;
    assert_eq!(
        rows,
        [format!(
            "{} bot chats:invoke models:read {} cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
            bot.key.id, bot.secret_hash.0
        )]
    );
}

tessera_store::on_both_databases!(
    changes_and_their_audit_records_commit_together,
    keys_need_an_existing_organization,
    the_row_holds_what_it_was_given,
);
