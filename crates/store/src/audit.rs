//! The audit log (`audit_events`): `SqlAuditStore` reads it, appends events that stand alone
//! (refused credentials) and applies retention; the stores of audited changes write their
//! events with `record_audit!` inside the transactions that make the changes.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_audit::{AuditEventStore, AuditFilter, AuditScope};
use tessera_identity::RefusalLog;
use tessera_kernel::{ActorKind, AuditEventId, AuditRecord, DomainError, PageRequest};

use crate::{Database, database::with_connection, error::query_error, schema::audit_events};

/// `AuditEventStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlAuditStore {
    db: Database,
}

impl SqlAuditStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// One stored event.
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_events)]
pub(crate) struct AuditRow {
    id: String,
    organization_id: Option<String>,
    occurred_at: NaiveDateTime,
    actor_kind: String,
    actor_id: Option<String>,
    action: String,
    resource_type: String,
    resource_id: Option<String>,
    address: Option<String>,
    request_id: Option<String>,
}

impl From<&AuditRecord> for AuditRow {
    fn from(record: &AuditRecord) -> Self {
        Self {
            id: record.id.to_string(),
            organization_id: record
                .organization_id
                .as_ref()
                .map(|org| org.as_str().to_owned()),
            occurred_at: record.occurred_at.naive_utc(),
            actor_kind: record.actor_kind.as_str().to_owned(),
            actor_id: record.actor_id.clone(),
            action: record.action.clone(),
            resource_type: record.resource_type.clone(),
            resource_id: record.resource_id.clone(),
            address: record.address.clone(),
            request_id: record.request_id.clone(),
        }
    }
}

impl TryFrom<AuditRow> for AuditRecord {
    type Error = DomainError;

    fn try_from(row: AuditRow) -> Result<Self, Self::Error> {
        let corrupt =
            |what: String| DomainError::internal(format!("audit_events row {}: {what}", row.id));
        Ok(AuditRecord {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization_id: row
                .organization_id
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(|e| corrupt(format!("{e}")))?,
            occurred_at: DateTime::<Utc>::from_naive_utc_and_offset(row.occurred_at, Utc),
            actor_kind: ActorKind::parse(&row.actor_kind)
                .ok_or_else(|| corrupt(format!("actor kind {}", row.actor_kind)))?,
            actor_id: row.actor_id,
            action: row.action,
            resource_type: row.resource_type,
            resource_id: row.resource_id,
            address: row.address,
            request_id: row.request_id,
        })
    }
}

/// Appends `$record` (a `&tessera_kernel::AuditRecord`) to the audit log. Use it inside the
/// `with_transaction!` body that makes the change it records, after the change: the event is
/// then committed if and only if the change is.
macro_rules! record_audit {
    ($conn:expr, $record:expr) => {{
        let record: &tessera_kernel::AuditRecord = $record;
        diesel::insert_into($crate::schema::audit_events::table)
            .values($crate::audit::AuditRow::from(record))
            .execute($conn)
            .await?;
    }};
}
pub(crate) use record_audit;

/// The events of `$scope` matching `$filter`, as a boxed query (for the backend `conn` is).
macro_rules! matching {
    ($scope:expr, $filter:expr) => {{
        let scope: &AuditScope = $scope;
        let filter: &AuditFilter = $filter;
        let mut query = audit_events::table.into_boxed();
        if let AuditScope::Organization(organization) = scope {
            query = query.filter(audit_events::organization_id.eq(organization.as_str()));
        }
        if let Some(from) = filter.from {
            query = query.filter(audit_events::occurred_at.ge(from.naive_utc()));
        }
        if let Some(to) = filter.to {
            query = query.filter(audit_events::occurred_at.lt(to.naive_utc()));
        }
        if let Some(kind) = filter.actor_kind {
            query = query.filter(audit_events::actor_kind.eq(kind.as_str()));
        }
        if let Some(actor) = &filter.actor_id {
            query = query.filter(audit_events::actor_id.eq(actor.clone()));
        }
        if let Some(resource_type) = &filter.resource_type {
            query = query.filter(audit_events::resource_type.eq(resource_type.clone()));
        }
        if let Some(resource) = &filter.resource_id {
            query = query.filter(audit_events::resource_id.eq(resource.clone()));
        }
        if let Some(action) = &filter.action {
            query = query.filter(audit_events::action.eq(action.clone()));
        }
        if let Some(request) = &filter.request_id {
            query = query.filter(audit_events::request_id.eq(request.clone()));
        }
        query
    }};
}

/// Refused credentials are audit events written on their own.
#[async_trait]
impl RefusalLog for SqlAuditStore {
    async fn record(&self, record: &AuditRecord) -> Result<(), DomainError> {
        AuditEventStore::insert(self, record).await
    }
}

#[async_trait]
impl AuditEventStore for SqlAuditStore {
    async fn insert(&self, record: &AuditRecord) -> Result<(), DomainError> {
        let row = AuditRow::from(record);
        with_connection!(&self.db, conn => {
            diesel::insert_into(audit_events::table)
                .values(&row)
                .execute(conn)
                .await
                .map_err(query_error)?;
        });
        Ok(())
    }

    async fn list(
        &self,
        scope: &AuditScope,
        filter: &AuditFilter,
        page: &PageRequest<AuditEventId>,
    ) -> Result<Vec<AuditRecord>, DomainError> {
        let rows: Vec<AuditRow> = with_connection!(&self.db, conn => {
            let mut query = matching!(scope, filter);
            if let Some(after) = &page.after {
                query = query.filter(audit_events::id.lt(after.as_str().to_owned()));
            }
            query
                .order(audit_events::id.desc())
                .limit(page.limit.overfetch())
                .select(AuditRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(AuditRecord::try_from).collect()
    }

    async fn count(&self, scope: &AuditScope, filter: &AuditFilter) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            matching!(scope, filter)
                .count()
                .get_result(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn delete_before(&self, before: DateTime<Utc>) -> Result<u64, DomainError> {
        let before = before.naive_utc();
        let deleted: usize = with_connection!(&self.db, conn => {
            diesel::delete(audit_events::table.filter(audit_events::occurred_at.lt(before)))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(u64::try_from(deleted).unwrap_or_default())
    }
}
