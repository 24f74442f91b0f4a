//! `CachePolicyStore` on PostgreSQL or SQLite (`response_cache_policies`: one row per
//! organization and model, the policy as written kept as JSON text).

use async_trait::async_trait;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};
use tessera_response_cache::{CachePolicySpec, CachePolicyStore, StoredCachePolicy};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::response_cache_policies,
};

/// `CachePolicyStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlCachePolicyStore {
    db: Database,
}

impl SqlCachePolicyStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = response_cache_policies)]
struct PolicyRow {
    organization_id: String,
    model_id: String,
    spec: String,
    updated_at: NaiveDateTime,
    updated_by: String,
}

impl PolicyRow {
    fn of(policy: &StoredCachePolicy) -> Result<Self, DomainError> {
        Ok(Self {
            organization_id: policy.organization_id.as_str().to_owned(),
            model_id: policy.model_id.clone(),
            spec: serde_json::to_string(&policy.spec)
                .map_err(|e| DomainError::internal(format!("cache policy as JSON: {e}")))?,
            updated_at: policy.updated_at.naive_utc(),
            updated_by: policy.updated_by.clone(),
        })
    }
}

impl TryFrom<PolicyRow> for StoredCachePolicy {
    type Error = DomainError;

    fn try_from(row: PolicyRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| {
            DomainError::internal(format!(
                "response_cache_policies row {}/{}: {what}",
                row.organization_id, row.model_id
            ))
        };
        let spec: CachePolicySpec =
            serde_json::from_str(&row.spec).map_err(|e| corrupt(format!("spec: {e}")))?;
        Ok(StoredCachePolicy {
            organization_id: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            model_id: row.model_id,
            spec,
            updated_at: utc(row.updated_at),
            updated_by: row.updated_by,
        })
    }
}

macro_rules! one_policy {
    ($organization:expr, $model_id:expr) => {
        response_cache_policies::table
            .filter(response_cache_policies::organization_id.eq($organization.as_str()))
            .filter(response_cache_policies::model_id.eq($model_id))
    };
}

#[async_trait]
impl CachePolicyStore for SqlCachePolicyStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<StoredCachePolicy>, DomainError> {
        let row: Option<PolicyRow> = with_connection!(&self.db, conn => {
            one_policy!(organization, model_id)
                .select(PolicyRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(StoredCachePolicy::try_from).transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredCachePolicy>, DomainError> {
        let rows: Vec<PolicyRow> = with_connection!(&self.db, conn => {
            response_cache_policies::table
                .filter(response_cache_policies::organization_id.eq(organization.as_str()))
                .order(response_cache_policies::model_id.asc())
                .select(PolicyRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(StoredCachePolicy::try_from).collect()
    }

    async fn put(
        &self,
        policy: &StoredCachePolicy,
        audit: &AuditRecord,
    ) -> Result<(), DomainError> {
        let row = PolicyRow::of(policy)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(response_cache_policies::table)
                .values(&row)
                .on_conflict((
                    response_cache_policies::organization_id,
                    response_cache_policies::model_id,
                ))
                .do_update()
                .set((
                    response_cache_policies::spec.eq(excluded(response_cache_policies::spec)),
                    response_cache_policies::updated_at
                        .eq(excluded(response_cache_policies::updated_at)),
                    response_cache_policies::updated_by
                        .eq(excluded(response_cache_policies::updated_by)),
                ))
                .execute(conn)
                .await?;
            record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        model_id: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let deleted = diesel::delete(one_policy!(organization, model_id))
                .execute(conn)
                .await?;
            if deleted > 0 {
                record_audit!(conn, audit);
            }
            Ok(deleted > 0)
        })
    }
}
