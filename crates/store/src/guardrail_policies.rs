//! `GuardrailPolicyStore` on PostgreSQL or SQLite (`guardrail_policies`: one row per
//! organization and scope, the policy as written kept as JSON text).

use async_trait::async_trait;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;
use tessera_guardrails::{GuardrailPolicyStore, PolicyScope, PolicySpec, StoredPolicy};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::guardrail_policies,
};

/// `GuardrailPolicyStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlGuardrailPolicyStore {
    db: Database,
}

impl SqlGuardrailPolicyStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = guardrail_policies)]
struct PolicyRow {
    organization_id: String,
    scope: String,
    model_id: String,
    spec: String,
    updated_at: NaiveDateTime,
    updated_by: String,
}

impl PolicyRow {
    fn of(policy: &StoredPolicy) -> Result<Self, DomainError> {
        Ok(Self {
            organization_id: policy.organization_id.as_str().to_owned(),
            scope: policy.scope.kind().to_owned(),
            model_id: policy.scope.model_id().to_owned(),
            spec: serde_json::to_string(&policy.spec)
                .map_err(|e| DomainError::internal(format!("guardrail policy as JSON: {e}")))?,
            updated_at: policy.updated_at.naive_utc(),
            updated_by: policy.updated_by.clone(),
        })
    }
}

impl TryFrom<PolicyRow> for StoredPolicy {
    type Error = DomainError;

    fn try_from(row: PolicyRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| {
            DomainError::internal(format!(
                "guardrail_policies row {}/{}/{}: {what}",
                row.organization_id, row.scope, row.model_id
            ))
        };
        let scope = match row.scope.as_str() {
            "organization" => PolicyScope::Organization,
            "model" => PolicyScope::Model(row.model_id.clone()),
            other => return Err(corrupt(format!("unknown scope {other}"))),
        };
        let spec: PolicySpec =
            serde_json::from_str(&row.spec).map_err(|e| corrupt(format!("spec: {e}")))?;
        Ok(StoredPolicy {
            organization_id: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            scope,
            spec,
            updated_at: utc(row.updated_at),
            updated_by: row.updated_by,
        })
    }
}

macro_rules! one_policy {
    ($organization:expr, $scope:expr) => {
        guardrail_policies::table
            .filter(guardrail_policies::organization_id.eq($organization.as_str()))
            .filter(guardrail_policies::scope.eq($scope.kind()))
            .filter(guardrail_policies::model_id.eq($scope.model_id()))
    };
}

#[async_trait]
impl GuardrailPolicyStore for SqlGuardrailPolicyStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        scope: &PolicyScope,
    ) -> Result<Option<StoredPolicy>, DomainError> {
        let row: Option<PolicyRow> = with_connection!(&self.db, conn => {
            one_policy!(organization, scope)
                .select(PolicyRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(StoredPolicy::try_from).transpose()
    }

    async fn put(&self, policy: &StoredPolicy, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = PolicyRow::of(policy)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(guardrail_policies::table)
                .values(&row)
                .on_conflict((
                    guardrail_policies::organization_id,
                    guardrail_policies::scope,
                    guardrail_policies::model_id,
                ))
                .do_update()
                .set((
                    guardrail_policies::spec.eq(excluded(guardrail_policies::spec)),
                    guardrail_policies::updated_at.eq(excluded(guardrail_policies::updated_at)),
                    guardrail_policies::updated_by.eq(excluded(guardrail_policies::updated_by)),
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
        scope: &PolicyScope,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let deleted = diesel::delete(one_policy!(organization, scope))
                .execute(conn)
                .await?;
            if deleted > 0 {
                record_audit!(conn, audit);
            }
            Ok(deleted > 0)
        })
    }

    async fn list_models(
        &self,
        organization: &OrganizationId,
    ) -> Result<Vec<StoredPolicy>, DomainError> {
        let rows: Vec<PolicyRow> = with_connection!(&self.db, conn => {
            guardrail_policies::table
                .filter(guardrail_policies::organization_id.eq(organization.as_str()))
                .filter(guardrail_policies::scope.eq("model"))
                .order(guardrail_policies::model_id.asc())
                .select(PolicyRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(StoredPolicy::try_from).collect()
    }
}
