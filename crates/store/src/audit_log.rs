//! The audit log (`audit_events`) as a store of its own: `SqlAuditStore` reads it, appends
//! events that stand alone (refused credentials) and applies retention.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_audit::{AuditEventStore, AuditFilter, AuditScope};
use tessera_identity::RefusalLog;
use tessera_kernel::{AuditEventId, AuditRecord, DomainError, PageRequest};

use crate::{
    Database, audit::AuditRow, database::with_connection, error::query_error, schema::audit_events,
};

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
