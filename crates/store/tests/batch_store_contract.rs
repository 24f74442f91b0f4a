//! The `BatchStore` contract (`tessera_batches::contract`) on SQLite and PostgreSQL: batches
//! within their organization, claims under a lease only its holder renews, answers kept and
//! counted once, and a runner over the store that takes over a stopped one or stops at a
//! cancel.
#![cfg(feature = "batches")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_batches::{BatchStore, contract::BatchStores};
use tessera_kernel::OrganizationId;
use tessera_store::{
    Backend, Database, SqlBatchStore,
    testing::{TestDatabase, store_organization},
};

/// A batch store over one database.
struct SqlStores {
    batches: Arc<SqlBatchStore>,
    database: Database,
}

#[async_trait]
impl BatchStores for SqlStores {
    fn store(&self) -> Arc<dyn BatchStore> {
        self.batches.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The store over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        batches: Arc::new(SqlBatchStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_batches::batch_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_batches::batch_store_contract!(|| super::sql_store(tessera_store::Backend::Postgres));
}
