//! The `CachePolicyStore` contract (`tessera_response_cache::contract`, also run against the
//! in-memory reference) on SQLite and PostgreSQL, and what only a database can show: an
//! audit record that cannot be written (its organization does not exist) undoes the change
//! it records, and the policies of an organization are its own in the database too.
#![cfg(all(feature = "response-cache", feature = "audit"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use tessera_audit::{AuditEventStore, AuditFilter, AuditScope};
use tessera_kernel::{AuditRecord, Limit, OrganizationId, PageRequest};
use tessera_response_cache::{
    CachePolicyStore,
    contract::{CachePolicyStores, audit, full_spec, policy},
};
use tessera_store::{
    Backend, Database, SqlAuditStore, SqlCachePolicyStore,
    testing::{TestDatabase, store_organization},
};

/// A policy store over one database, which stores the organizations policies refer to and
/// keeps the audit records in its audit log.
struct SqlStores {
    policies: Arc<SqlCachePolicyStore>,
    audit: SqlAuditStore,
    database: Database,
}

#[async_trait]
impl CachePolicyStores for SqlStores {
    fn store(&self) -> Arc<dyn CachePolicyStore> {
        self.policies.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }

    async fn recorded_audit(&self) -> Vec<AuditRecord> {
        // The audit log lists newest first, in pages; the contract wants oldest first.
        let limit = Limit::new(100).unwrap();
        let mut records = Vec::new();
        let mut after = None;
        loop {
            let page = PageRequest { limit, after };
            let mut listed = self
                .audit
                .list(&AuditScope::All, &AuditFilter::default(), &page)
                .await
                .unwrap();
            let more = listed.len() > limit.get() as usize;
            listed.truncate(limit.get() as usize);
            after = listed.last().map(|record| record.id.clone());
            records.extend(listed);
            if !more {
                break;
            }
        }
        records.reverse();
        records
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        policies: Arc::new(SqlCachePolicyStore::new(db.database.clone())),
        audit: SqlAuditStore::new(db.database.clone()),
        database: db.database.clone(),
    };
    (stores, db)
}

mod cache_policies_sqlite {
    tessera_response_cache::cache_policy_store_contract!(|| super::sql_store(
        tessera_store::Backend::Sqlite
    ));
}

mod cache_policies_postgres {
    tessera_response_cache::cache_policy_store_contract!(|| super::sql_store(
        tessera_store::Backend::Postgres
    ));
}

async fn an_unwritable_audit_record_undoes_the_change(backend: Backend) {
    let (stores, _db) = sql_store(backend).await;
    let acme: OrganizationId = "acme".parse().unwrap();
    stores.organization_exists(&acme, "Acme").await;
    let stray: OrganizationId = "nowhere".parse().unwrap();
    let written = policy(&acme, "a-model", full_spec(), 1);
    let refused = stores
        .policies
        .put(
            &written,
            &audit(&stray, "response_cache_policy.update", "a-model"),
        )
        .await;
    assert!(refused.is_err());
    assert_eq!(stores.policies.get(&acme, "a-model").await.unwrap(), None);
    // And a delete whose record cannot be written keeps the policy.
    stores
        .policies
        .put(
            &written,
            &audit(&acme, "response_cache_policy.update", "a-model"),
        )
        .await
        .unwrap();
    let refused = stores
        .policies
        .delete(
            &acme,
            "a-model",
            &audit(&stray, "response_cache_policy.delete", "a-model"),
        )
        .await;
    assert!(refused.is_err());
    assert_eq!(
        stores.policies.get(&acme, "a-model").await.unwrap(),
        Some(written)
    );
}

#[tokio::test]
async fn an_unwritable_audit_record_undoes_the_cache_policy_change_on_sqlite() {
    an_unwritable_audit_record_undoes_the_change(Backend::Sqlite).await;
}

#[tokio::test]
async fn an_unwritable_audit_record_undoes_the_cache_policy_change_on_postgres() {
    an_unwritable_audit_record_undoes_the_change(Backend::Postgres).await;
}
