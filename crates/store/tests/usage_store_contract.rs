//! The `UsageStore` contract (`tessera_usage::contract`, also run against the in-memory
//! reference) on SQLite and PostgreSQL, and what only a database can show: records refer to
//! a stored organization, and PostgreSQL's group commit of concurrent records.
#![cfg(feature = "chats")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_kernel::{DomainError, OrganizationId};
use tessera_store::{
    Backend, Database, SqlUsageStore,
    testing::{TestDatabase, store_organization},
};
use tessera_usage::{
    UsageId, UsageRecord, UsageStore,
    contract::{UsageStores, query, record, sum},
};

/// A usage store over one database, which stores the organizations records refer to.
struct SqlStores {
    usage: Arc<SqlUsageStore>,
    database: Database,
}

#[async_trait]
impl UsageStores for SqlStores {
    fn store(&self) -> Arc<dyn UsageStore> {
        self.usage.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        usage: Arc::new(SqlUsageStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_usage::usage_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_usage::usage_store_contract!(|| super::sql_store(tessera_store::Backend::Postgres));
}

/// A unique message id.
fn message_id() -> String {
    UsageId::generate().as_str().replacen("usg_", "msg_", 1)
}

async fn records_need_an_existing_organization(backend: Backend) {
    let (stores, _db) = sql_store(backend).await;
    let orphan = record(&OrganizationId::generate(), "2026-09-01T10:00:00Z", 1);
    let refused = stores.usage.record(&orphan).await;
    assert!(
        matches!(
            refused,
            Err(DomainError::Conflict {
                code: "missing_reference",
                ..
            })
        ),
        "{refused:?}"
    );
}

tessera_store::on_both_databases!(records_need_an_existing_organization);

/// On PostgreSQL, records written at the same time share statements (the group commit of
/// stateless completions' usage); a record that cannot be written fails alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_records_are_group_committed_on_postgres() {
    let (stores, _db) = sql_store(Backend::Postgres).await;
    let acme = OrganizationId::generate();
    stores.organization_exists(&acme, "Acme").await;
    let store = &stores.usage;
    let records: Vec<UsageRecord> = (0..40)
        .map(|i| record(&acme, "2026-09-01T10:00:00Z", 10 + i))
        .collect();
    let mut writes = records.clone();
    // A record id already taken, in the middle of the crowd.
    writes.push(UsageRecord {
        message_id: message_id(),
        ..records[3].clone()
    });
    let written =
        futures_util::future::join_all(writes.iter().map(|record| store.record(record))).await;
    let refused: Vec<usize> = (0..written.len())
        .filter(|&i| written[i].is_err())
        .collect();
    assert_eq!(refused.len(), 1, "{written:?}");
    assert!(matches!(
        written[refused[0]],
        Err(DomainError::Conflict { .. })
    ));
    let stats = store.group_commit_stats().unwrap();
    assert!(stats.batches >= 1 && stats.batched_writes >= 2, "{stats:?}");
    let recorded: Vec<&UsageRecord> = (0..writes.len())
        .filter(|i| !refused.contains(i))
        .map(|i| &writes[i])
        .collect();
    let day = query(&acme, "2026-09-01T00:00:00Z", "2026-09-02T00:00:00Z");
    let got = store.aggregate(&day).await.unwrap();
    assert_eq!(got.totals, sum(recorded));
}
