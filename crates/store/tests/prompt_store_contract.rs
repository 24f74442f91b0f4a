//! The `ParticleStore` and `SystemPromptStore` contract (`tessera_prompts::contract`, also
//! run against the in-memory reference) on SQLite and PostgreSQL, every check of it.
#![cfg(feature = "prompts")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_kernel::OrganizationId;
use tessera_prompts::{ParticleStore, SystemPromptStore, contract::PromptStores};
use tessera_store::{
    Backend, Database, SqlPromptStore,
    testing::{TestDatabase, store_organization},
};

/// Both prompt stores over one database, which stores the organizations records refer to.
struct SqlStores {
    prompts: Arc<SqlPromptStore>,
    database: Database,
}

#[async_trait]
impl PromptStores for SqlStores {
    fn particles(&self) -> Arc<dyn ParticleStore> {
        self.prompts.clone()
    }

    fn prompts(&self) -> Arc<dyn SystemPromptStore> {
        self.prompts.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        prompts: Arc::new(SqlPromptStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_prompts::prompt_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_prompts::prompt_store_contract!(|| super::sql_store(tessera_store::Backend::Postgres));
}
