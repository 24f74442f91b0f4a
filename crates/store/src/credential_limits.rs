//! `CredentialLimitsStore` on PostgreSQL or SQLite (`credential_limits`: one row per API key
//! or client with limits, the model allow-list kept as a JSON array).

use std::collections::BTreeSet;

use async_trait::async_trait;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;
use tessera_identity::{CredentialBudget, CredentialLimits, CredentialLimitsStore, OnSpent};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId};
use tessera_usage::BudgetPeriod;

use crate::time::utc;
use crate::{
    Database,
    audit::record_audit,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::credential_limits,
};

/// `CredentialLimitsStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlCredentialLimitsStore {
    db: Database,
}

impl SqlCredentialLimitsStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = credential_limits)]
struct LimitsRow {
    organization_id: String,
    credential: String,
    models: Option<String>,
    budget_credits: Option<i64>,
    budget_period: Option<String>,
    budget_on_spent: Option<String>,
    updated_at: NaiveDateTime,
}

impl LimitsRow {
    fn of(limits: &CredentialLimits) -> Result<Self, DomainError> {
        let models = (limits.models.as_ref())
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| DomainError::internal(format!("model allow-list as JSON: {e}")))?;
        let budget = limits.budget.as_ref();
        Ok(Self {
            organization_id: limits.organization_id.as_str().to_owned(),
            credential: limits.credential.clone(),
            models,
            budget_credits: budget
                .map(|b| i64::try_from(b.credits))
                .transpose()
                .map_err(|_| DomainError::internal("a budget beyond 2^63 credits"))?,
            budget_period: budget.map(|b| b.period.as_str().to_owned()),
            budget_on_spent: budget.map(|b| b.on_spent.as_str().to_owned()),
            updated_at: limits.updated_at.naive_utc(),
        })
    }
}

impl TryFrom<LimitsRow> for CredentialLimits {
    type Error = DomainError;

    fn try_from(row: LimitsRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| {
            DomainError::internal(format!(
                "credential_limits row {}/{}: {what}",
                row.organization_id, row.credential
            ))
        };
        let models = (row.models.as_deref())
            .map(serde_json::from_str::<BTreeSet<String>>)
            .transpose()
            .map_err(|e| corrupt(format!("models: {e}")))?;
        let budget = match (
            &row.budget_credits,
            &row.budget_period,
            &row.budget_on_spent,
        ) {
            (None, None, None) => None,
            (Some(credits), Some(period), Some(on_spent)) => Some(CredentialBudget {
                credits: u64::try_from(*credits)
                    .map_err(|_| corrupt(format!("budget_credits {credits}")))?,
                period: BudgetPeriod::parse(period)
                    .ok_or_else(|| corrupt(format!("budget_period {period}")))?,
                on_spent: OnSpent::parse(on_spent)
                    .ok_or_else(|| corrupt(format!("budget_on_spent {on_spent}")))?,
            }),
            _ => return Err(corrupt("a budget set in part".into())),
        };
        Ok(CredentialLimits {
            organization_id: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            credential: row.credential,
            models,
            budget,
            updated_at: utc(row.updated_at),
        })
    }
}

macro_rules! one_credential {
    ($organization:expr, $credential:expr) => {
        credential_limits::table
            .filter(credential_limits::organization_id.eq($organization.as_str()))
            .filter(credential_limits::credential.eq($credential))
    };
}

#[async_trait]
impl CredentialLimitsStore for SqlCredentialLimitsStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        credential: &str,
    ) -> Result<Option<CredentialLimits>, DomainError> {
        let row: Option<LimitsRow> = with_connection!(&self.db, conn => {
            one_credential!(organization, credential)
                .select(LimitsRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(CredentialLimits::try_from).transpose()
    }

    async fn put(&self, limits: &CredentialLimits, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = LimitsRow::of(limits)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(credential_limits::table)
                .values(&row)
                .on_conflict((credential_limits::organization_id, credential_limits::credential))
                .do_update()
                .set((
                    credential_limits::models.eq(excluded(credential_limits::models)),
                    credential_limits::budget_credits.eq(excluded(credential_limits::budget_credits)),
                    credential_limits::budget_period.eq(excluded(credential_limits::budget_period)),
                    credential_limits::budget_on_spent
                        .eq(excluded(credential_limits::budget_on_spent)),
                    credential_limits::updated_at.eq(excluded(credential_limits::updated_at)),
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
        credential: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        with_transaction!(&self.db, conn => {
            let deleted = diesel::delete(one_credential!(organization, credential))
                .execute(conn)
                .await?;
            if deleted > 0 {
                record_audit!(conn, audit);
            }
            Ok(deleted > 0)
        })
    }
}
