//! The `IdempotencyStore` contract (`tessera_idempotency::contract`, also run against the
//! in-memory reference) on SQLite and PostgreSQL. All its checks are promises of the port,
//! so this file has no database-only tests.
#![cfg(feature = "idempotency")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_idempotency::{IdempotencyStore, contract::IdempotencyStores};
use tessera_kernel::OrganizationId;
use tessera_store::{
    Backend, Database, SqlIdempotencyStore,
    testing::{TestDatabase, store_organization},
};

/// An idempotency store over one database, which stores the organizations keys refer to.
struct SqlStores {
    idempotency: Arc<SqlIdempotencyStore>,
    database: Database,
}

#[async_trait]
impl IdempotencyStores for SqlStores {
    fn store(&self) -> Arc<dyn IdempotencyStore> {
        self.idempotency.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        idempotency: Arc::new(SqlIdempotencyStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_idempotency::idempotency_store_contract!(|| super::sql_store(
        tessera_store::Backend::Sqlite
    ));
}

mod contract_postgres {
    tessera_idempotency::idempotency_store_contract!(|| super::sql_store(
        tessera_store::Backend::Postgres
    ));
}
