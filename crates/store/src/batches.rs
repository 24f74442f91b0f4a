//! `BatchStore` on PostgreSQL or SQLite: batches (`batches`) and the answers of their lines
//! kept as they arrive (`batch_results`, dropped when the batch ends). Runners claim the
//! oldest active batch whose lease is free or has lapsed in one `UPDATE … RETURNING`
//! (`FOR UPDATE SKIP LOCKED` on PostgreSQL), like the file processing queue; every later
//! change a runner makes is conditional on it still holding the lease (`leased_by`).

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::{
    prelude::*,
    sql_types::{Text, Timestamp},
};
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use tessera_batches::{
    Batch, BatchEnd, BatchEndpoint, BatchId, BatchProblem, BatchStatus, BatchStore, LineResult,
    RequestCounts,
};
use tessera_kernel::{AuditRecord, DomainError, Metadata, OrganizationId, PageRequest};

use crate::time::utc;
use crate::{
    Backend, Database,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::{batch_results, batches},
};

/// `BatchStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlBatchStore {
    db: Database,
}

impl SqlBatchStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// The statuses a runner claims, as stored (`BatchStatus::ACTIVE`).
fn active() -> [&'static str; 4] {
    BatchStatus::ACTIVE.map(BatchStatus::as_str)
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = batches, treat_none_as_default_value = false)]
struct BatchRow {
    id: String,
    organization_id: String,
    owner: String,
    created_by: String,
    endpoint: String,
    input_file_id: String,
    completion_window: String,
    metadata: String,
    status: String,
    errors: String,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    total: i32,
    completed: i32,
    failed: i32,
    created_at: NaiveDateTime,
    in_progress_at: Option<NaiveDateTime>,
    expires_at: NaiveDateTime,
    finalizing_at: Option<NaiveDateTime>,
    completed_at: Option<NaiveDateTime>,
    failed_at: Option<NaiveDateTime>,
    expired_at: Option<NaiveDateTime>,
    cancelling_at: Option<NaiveDateTime>,
    cancelled_at: Option<NaiveDateTime>,
}

/// A count as stored (refused past `i32::MAX`, far beyond any batch's lines).
fn count(id: &BatchId, what: &str, value: u32) -> Result<i32, DomainError> {
    i32::try_from(value)
        .map_err(|_| DomainError::internal(format!("batch {id}: {what} {value} is too large")))
}

/// The `errors` column: a JSON array of `{code, message, param, line}`.
fn errors_text(problems: &[BatchProblem]) -> String {
    Value::Array(
        problems
            .iter()
            .map(|problem| {
                json!({
                    "code": problem.code,
                    "message": problem.message,
                    "param": problem.param,
                    "line": problem.line,
                })
            })
            .collect(),
    )
    .to_string()
}

/// The `errors` column read back.
fn parse_errors(text: &str) -> Result<Vec<BatchProblem>, String> {
    let items: Vec<Value> = serde_json::from_str(text).map_err(|e| format!("errors: {e}"))?;
    items
        .iter()
        .map(|item| {
            let text = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
            Ok(BatchProblem {
                code: text("code").ok_or_else(|| format!("errors: no code in {item}"))?,
                message: text("message").ok_or_else(|| format!("errors: no message in {item}"))?,
                param: text("param"),
                line: match item.get("line") {
                    None | Some(Value::Null) => None,
                    Some(line) => Some(
                        line.as_u64()
                            .and_then(|line| u32::try_from(line).ok())
                            .ok_or_else(|| format!("errors: line {line}"))?,
                    ),
                },
            })
        })
        .collect()
}

impl TryFrom<&Batch> for BatchRow {
    type Error = DomainError;

    fn try_from(batch: &Batch) -> Result<Self, Self::Error> {
        let owner = serde_json::to_string(&batch.owner).map_err(|e| {
            DomainError::internal(format!("batch {}: cannot store its owner: {e}", batch.id))
        })?;
        let metadata = serde_json::to_string(batch.metadata.pairs()).map_err(|e| {
            DomainError::internal(format!(
                "batch {}: cannot store its metadata: {e}",
                batch.id
            ))
        })?;
        Ok(Self {
            id: batch.id.to_string(),
            organization_id: batch.organization.as_str().to_owned(),
            owner,
            created_by: batch.owner.subject.clone(),
            endpoint: batch.endpoint.as_str().to_owned(),
            input_file_id: batch.input_file_id.clone(),
            completion_window: batch.completion_window.clone(),
            metadata,
            status: batch.status.as_str().to_owned(),
            errors: errors_text(&batch.errors),
            output_file_id: batch.output_file_id.clone(),
            error_file_id: batch.error_file_id.clone(),
            total: count(&batch.id, "total", batch.counts.total)?,
            completed: count(&batch.id, "completed", batch.counts.completed)?,
            failed: count(&batch.id, "failed", batch.counts.failed)?,
            created_at: batch.created_at.naive_utc(),
            in_progress_at: batch.in_progress_at.map(|at| at.naive_utc()),
            expires_at: batch.expires_at.naive_utc(),
            finalizing_at: batch.finalizing_at.map(|at| at.naive_utc()),
            completed_at: batch.completed_at.map(|at| at.naive_utc()),
            failed_at: batch.failed_at.map(|at| at.naive_utc()),
            expired_at: batch.expired_at.map(|at| at.naive_utc()),
            cancelling_at: batch.cancelling_at.map(|at| at.naive_utc()),
            cancelled_at: batch.cancelled_at.map(|at| at.naive_utc()),
        })
    }
}

impl TryFrom<BatchRow> for Batch {
    type Error = DomainError;

    fn try_from(row: BatchRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("batches row {}: {what}", row.id));
        let counted = |what: &str, value: i32| {
            u32::try_from(value).map_err(|_| corrupt(format!("{what} {value}")))
        };
        let metadata: BTreeMap<String, String> =
            serde_json::from_str(&row.metadata).map_err(|e| corrupt(format!("metadata: {e}")))?;
        Ok(Batch {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("{e}")))?,
            owner: serde_json::from_str(&row.owner).map_err(|e| corrupt(format!("owner: {e}")))?,
            endpoint: BatchEndpoint::parse(&row.endpoint)
                .ok_or_else(|| corrupt(format!("endpoint {}", row.endpoint)))?,
            metadata: Metadata::trusted(metadata),
            status: BatchStatus::parse(&row.status)
                .ok_or_else(|| corrupt(format!("status {}", row.status)))?,
            errors: parse_errors(&row.errors).map_err(corrupt)?,
            counts: RequestCounts {
                total: counted("total", row.total)?,
                completed: counted("completed", row.completed)?,
                failed: counted("failed", row.failed)?,
            },
            input_file_id: row.input_file_id,
            completion_window: row.completion_window,
            output_file_id: row.output_file_id,
            error_file_id: row.error_file_id,
            created_at: utc(row.created_at),
            in_progress_at: row.in_progress_at.map(utc),
            expires_at: utc(row.expires_at),
            finalizing_at: row.finalizing_at.map(utc),
            completed_at: row.completed_at.map(utc),
            failed_at: row.failed_at.map(utc),
            expired_at: row.expired_at.map(utc),
            cancelling_at: row.cancelling_at.map(utc),
            cancelled_at: row.cancelled_at.map(utc),
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = batch_results, treat_none_as_default_value = false)]
struct ResultRow {
    batch_id: String,
    line: i32,
    custom_id: String,
    request_id: String,
    status_code: Option<i32>,
    body: String,
}

impl ResultRow {
    fn of(id: &BatchId, result: &LineResult) -> Result<Self, DomainError> {
        Ok(Self {
            batch_id: id.to_string(),
            line: count(id, "line", result.line)?,
            custom_id: result.custom_id.clone(),
            request_id: result.request_id.clone(),
            status_code: result.status_code.map(i32::from),
            body: result.body.to_string(),
        })
    }
}

impl TryFrom<ResultRow> for LineResult {
    type Error = DomainError;

    fn try_from(row: ResultRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| {
            DomainError::internal(format!(
                "batch_results row {} line {}: {what}",
                row.batch_id, row.line
            ))
        };
        Ok(LineResult {
            line: u32::try_from(row.line).map_err(|e| corrupt(format!("{e}")))?,
            status_code: row
                .status_code
                .map(|code| u16::try_from(code).map_err(|_| corrupt(format!("status {code}"))))
                .transpose()?,
            body: serde_json::from_str(&row.body).map_err(|e| corrupt(format!("body: {e}")))?,
            custom_id: row.custom_id,
            request_id: row.request_id,
        })
    }
}

/// The batch a claim took.
#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = Text)]
    id: String,
}

/// The statuses listed are `BatchStatus::ACTIVE` (a test below checks).
const CLAIM_POSTGRES: &str = "UPDATE batches SET leased_by = $1, leased_until = $3 WHERE id = \
     (SELECT id FROM batches WHERE status IN ('validating', 'in_progress', 'finalizing', \
     'cancelling') AND (leased_until IS NULL OR leased_until <= $2) ORDER BY id LIMIT 1 \
     FOR UPDATE SKIP LOCKED) RETURNING id";

/// SQLite numbers `$N` parameters by first appearance, so this one uses `?N`.
const CLAIM_SQLITE: &str = "UPDATE batches SET leased_by = ?1, leased_until = ?3 WHERE id = \
     (SELECT id FROM batches WHERE status IN ('validating', 'in_progress', 'finalizing', \
     'cancelling') AND (leased_until IS NULL OR leased_until <= ?2) ORDER BY id LIMIT 1) \
     RETURNING id";

/// The batch `id` while `runner` holds it.
macro_rules! held {
    ($id:expr, $runner:expr) => {
        batches::table
            .filter(batches::id.eq($id.as_str()))
            .filter(batches::leased_by.eq($runner))
    };
}

/// The organization's batch `id`.
macro_rules! owned {
    ($organization:expr, $id:expr) => {
        batches::table
            .filter(batches::organization_id.eq($organization.as_str()))
            .filter(batches::id.eq($id.as_str()))
    };
}

#[async_trait]
impl BatchStore for SqlBatchStore {
    async fn insert(&self, batch: &Batch, audit: &AuditRecord) -> Result<(), DomainError> {
        let row = BatchRow::try_from(batch)?;
        with_transaction!(&self.db, conn => {
            diesel::insert_into(batches::table)
                .values(&row)
                .execute(conn)
                .await?;
            crate::audit::record_audit!(conn, audit);
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &BatchId,
    ) -> Result<Option<Batch>, DomainError> {
        let row: Option<BatchRow> = with_connection!(&self.db, conn => {
            owned!(organization, id)
                .select(BatchRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(Batch::try_from).transpose()
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<BatchId>,
    ) -> Result<Vec<Batch>, DomainError> {
        let rows: Vec<BatchRow> = with_connection!(&self.db, conn => {
            let mut query = batches::table
                .filter(batches::organization_id.eq(organization.as_str()))
                .into_boxed();
            if let Some(after) = &page.after {
                query = query.filter(batches::id.lt(after.as_str().to_owned()));
            }
            query
                .order(batches::id.desc())
                .limit(page.limit.overfetch())
                .select(BatchRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Batch::try_from).collect()
    }

    async fn request_cancel(
        &self,
        organization: &OrganizationId,
        id: &BatchId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<Option<Batch>, DomainError> {
        let at = at.naive_utc();
        // Active and not already cancelling: only these become `cancelling`.
        let cancellable: Vec<&str> = BatchStatus::ACTIVE
            .into_iter()
            .filter(|status| *status != BatchStatus::Cancelling)
            .map(BatchStatus::as_str)
            .collect();
        let row: Option<BatchRow> = with_transaction!(&self.db, conn => {
            let changed = diesel::update(
                owned!(organization, id).filter(batches::status.eq_any(cancellable.clone())),
            )
            .set((
                batches::status.eq(BatchStatus::Cancelling.as_str()),
                batches::cancelling_at.eq(Some(at)),
            ))
            .execute(conn)
            .await?;
            if changed > 0 {
                crate::audit::record_audit!(conn, audit);
            }
            Ok(owned!(organization, id)
                .select(BatchRow::as_select())
                .first(conn)
                .await
                .optional()?)
        })?;
        row.map(Batch::try_from).transpose()
    }

    async fn claim(
        &self,
        runner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Batch>, DomainError> {
        let sql = match self.db.backend() {
            Backend::Postgres => CLAIM_POSTGRES,
            Backend::Sqlite => CLAIM_SQLITE,
        };
        let (now, lease_until) = (now.naive_utc(), lease_until.naive_utc());
        let row: Option<BatchRow> = with_connection!(&self.db, conn => {
            let claimed: Option<ClaimedRow> = diesel::sql_query(sql)
                .bind::<Text, _>(runner)
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(lease_until)
                .get_result(conn)
                .await
                .optional()
                .map_err(query_error)?;
            match claimed {
                None => None,
                Some(claimed) => batches::table
                    .filter(batches::id.eq(&claimed.id))
                    .select(BatchRow::as_select())
                    .first(conn)
                    .await
                    .optional()
                    .map_err(query_error)?,
            }
        });
        row.map(Batch::try_from).transpose()
    }

    async fn renew(
        &self,
        id: &BatchId,
        runner: &str,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<BatchStatus>, DomainError> {
        let lease_until = lease_until.naive_utc();
        let status: Option<String> = with_transaction!(&self.db, conn => {
            let changed = diesel::update(held!(id, runner).filter(batches::status.eq_any(active())))
                .set(batches::leased_until.eq(Some(lease_until)))
                .execute(conn)
                .await?;
            if changed == 0 {
                return Ok(None);
            }
            Ok(Some(
                batches::table
                    .filter(batches::id.eq(id.as_str()))
                    .select(batches::status)
                    .first::<String>(conn)
                    .await?,
            ))
        })?;
        status
            .map(|status| {
                BatchStatus::parse(&status).ok_or_else(|| {
                    DomainError::internal(format!("batches row {id}: status {status}"))
                })
            })
            .transpose()
    }

    async fn advance(
        &self,
        id: &BatchId,
        runner: &str,
        status: BatchStatus,
        total: u32,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let total = count(id, "total", total)?;
        let at = Some(at.naive_utc());
        let changed: usize = with_connection!(&self.db, conn => {
            let held = diesel::update(
                held!(id, runner).filter(batches::status.ne(BatchStatus::Cancelling.as_str())),
            );
            let moved = (batches::status.eq(status.as_str()), batches::total.eq(total));
            let changed = match status {
                BatchStatus::InProgress => {
                    held.set((moved, batches::in_progress_at.eq(at)))
                        .execute(conn)
                        .await
                }
                BatchStatus::Finalizing => {
                    held.set((moved, batches::finalizing_at.eq(at)))
                        .execute(conn)
                        .await
                }
                _ => held.set(moved).execute(conn).await,
            };
            changed.map_err(query_error)?
        });
        Ok(changed > 0)
    }

    async fn record(
        &self,
        id: &BatchId,
        runner: &str,
        result: &LineResult,
    ) -> Result<bool, DomainError> {
        let row = ResultRow::of(id, result)?;
        let succeeded = result.succeeded();
        with_transaction!(&self.db, conn => {
            let held: i64 = held!(id, runner).count().get_result(conn).await?;
            if held == 0 {
                return Ok(false);
            }
            // A line already kept (a runner that took over ran it again) counts once.
            let inserted = diesel::insert_into(batch_results::table)
                .values(&row)
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
            if inserted > 0 {
                let one = batches::table.filter(batches::id.eq(id.as_str()));
                if succeeded {
                    diesel::update(one)
                        .set(batches::completed.eq(batches::completed + 1))
                        .execute(conn)
                        .await?;
                } else {
                    diesel::update(one)
                        .set(batches::failed.eq(batches::failed + 1))
                        .execute(conn)
                        .await?;
                }
            }
            Ok(true)
        })
    }

    async fn results(&self, id: &BatchId) -> Result<Vec<LineResult>, DomainError> {
        let rows: Vec<ResultRow> = with_connection!(&self.db, conn => {
            batch_results::table
                .filter(batch_results::batch_id.eq(id.as_str()))
                .select(ResultRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(LineResult::try_from).collect()
    }

    async fn finish(
        &self,
        id: &BatchId,
        runner: &str,
        end: &BatchEnd,
    ) -> Result<bool, DomainError> {
        let errors = errors_text(&end.errors);
        let at = end.at.naive_utc();
        let stamp = |status: BatchStatus| (end.status == status).then_some(at);
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(held!(id, runner))
                .set((
                    batches::status.eq(end.status.as_str()),
                    batches::output_file_id.eq(end.output_file_id.as_deref()),
                    batches::error_file_id.eq(end.error_file_id.as_deref()),
                    batches::errors.eq(&errors),
                    batches::completed_at.eq(stamp(BatchStatus::Completed)),
                    batches::cancelled_at.eq(stamp(BatchStatus::Cancelled)),
                    batches::expired_at.eq(stamp(BatchStatus::Expired)),
                    batches::failed_at.eq(stamp(BatchStatus::Failed)),
                    batches::leased_by.eq(None::<String>),
                    batches::leased_until.eq(None::<NaiveDateTime>),
                ))
                .execute(conn)
                .await?;
            if changed == 0 {
                return Ok(false);
            }
            // The files hold the answers now.
            diesel::delete(batch_results::table.filter(batch_results::batch_id.eq(id.as_str())))
                .execute(conn)
                .await?;
            Ok(true)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_take_the_active_statuses() {
        let listed = active()
            .iter()
            .map(|status| format!("'{status}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let listed = format!("status IN ({listed})");
        let unwrapped = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            unwrapped(CLAIM_POSTGRES).contains(&listed),
            "{CLAIM_POSTGRES}"
        );
        assert!(unwrapped(CLAIM_SQLITE).contains(&listed), "{CLAIM_SQLITE}");
    }

    #[test]
    fn errors_round_trip() {
        let problems = vec![
            BatchProblem::at_line(3, "invalid_json", "not JSON"),
            BatchProblem {
                code: "empty_file".into(),
                message: "no lines".into(),
                param: Some("input_file_id".into()),
                line: None,
            },
        ];
        assert_eq!(parse_errors(&errors_text(&problems)), Ok(problems));
        assert_eq!(parse_errors("[]"), Ok(Vec::new()));
        assert!(parse_errors("{}").is_err());
    }
}
