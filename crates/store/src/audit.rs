//! The audit log's rows (`audit_events`): the stores of audited changes write their events
//! with `record_audit!` inside the transactions that make the changes; `SqlAuditStore`
//! (`audit_log`, with the `audit` feature) reads them.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use tessera_kernel::{ActorKind, AuditRecord, DomainError};

use crate::schema::audit_events;
use crate::time::utc;

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
            occurred_at: utc(row.occurred_at),
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
