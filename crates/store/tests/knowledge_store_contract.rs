//! The `FileStore` and `DatasetStore` contract (`tessera_knowledge::contract`, also run
//! against the in-memory reference) on SQLite and PostgreSQL: records, tenant isolation,
//! the processing queue (leases, retries, crash take-over, concurrent claims), deletion
//! refused while a dataset or snapshot holds a file, dataset versions, snapshots, the index's
//! generations; and what
//! only a database can show: files and datasets refer to a stored organization. The events
//! these stores write to the webhook outbox are checked with the webhook store
//! (`webhook_store_contract.rs`).
#![cfg(feature = "knowledge")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};
use tessera_knowledge::{
    DatasetStore, FileStore, GenerationStore,
    contract::{Fixture, KnowledgeStores, audited, dataset, stored_file},
};
use tessera_store::{
    Backend, Database, SqlDatasetStore, SqlFileStore,
    testing::{TestDatabase, store_organization},
};

/// The file and dataset stores over one database, which stores the organizations files and
/// datasets refer to.
struct SqlStores {
    files: Arc<SqlFileStore>,
    datasets: Arc<SqlDatasetStore>,
    database: Database,
}

#[async_trait]
impl KnowledgeStores for SqlStores {
    fn files(&self) -> Arc<dyn FileStore> {
        self.files.clone()
    }

    fn datasets(&self) -> Arc<dyn DatasetStore> {
        self.datasets.clone()
    }

    fn generations(&self) -> Arc<dyn GenerationStore> {
        self.files.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_stores(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        files: Arc::new(SqlFileStore::new(db.database.clone())),
        datasets: Arc::new(SqlDatasetStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_knowledge::knowledge_store_contract!(|| super::sql_stores(
        tessera_store::Backend::Sqlite
    ));
}

mod contract_postgres {
    tessera_knowledge::knowledge_store_contract!(|| super::sql_stores(
        tessera_store::Backend::Postgres
    ));
}

/// A file or dataset of an organization that is not stored is refused, and nothing is
/// stored (the in-memory reference keeps no organizations, so it cannot refuse them).
async fn references_must_exist(backend: Backend) {
    let (stores, _db) = sql_stores(backend).await;
    let f = Fixture::new(&stores);
    let unknown = OrganizationId::generate();
    let file = stored_file(&unknown, "a.md", 'a');
    let refused = f.files.insert(&file, true, None, &audited(&unknown)).await;
    assert!(
        matches!(&refused, Err(DomainError::Conflict { code, .. }) if *code == "missing_reference"),
        "{refused:?}"
    );
    assert_eq!(f.files.get(&unknown, &file.id).await.unwrap(), None);
    assert_eq!(
        f.files
            .claim_job("w1", file.created_at, file.created_at)
            .await
            .unwrap(),
        None
    );
    let dataset = dataset(&unknown, "Handbook");
    let refused = f.datasets.insert(&dataset, &audited(&unknown)).await;
    assert!(
        matches!(&refused, Err(DomainError::Conflict { code, .. }) if *code == "missing_reference"),
        "{refused:?}"
    );
    assert_eq!(f.datasets.get(&unknown, &dataset.id).await.unwrap(), None);
}

tessera_store::on_both_databases!(references_must_exist);
