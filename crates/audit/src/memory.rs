//! The in-memory [`AuditEventStore`]: the port's reference implementation (the contract
//! suite runs against it as against the SQL stores), for tests. It keeps no organizations,
//! so it cannot refuse an event of an organization that does not exist as the SQL stores'
//! foreign key does.

use std::{
    collections::BTreeMap,
    ops::Bound,
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditEventId, AuditRecord, DomainError, PageRequest};

use crate::{AuditEventStore, AuditFilter, AuditScope};

#[derive(Default)]
pub struct InMemoryAuditEventStore {
    /// By id, so newest first (by id) is the map in reverse.
    events: Mutex<BTreeMap<AuditEventId, AuditRecord>>,
}

impl InMemoryAuditEventStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<AuditEventId, AuditRecord>) -> T) -> T {
        f(&mut self.events.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Whether `record` is one of `scope`'s and matches every filter that is set (as SQL's `=`,
/// a set filter never matches an absent value).
fn matches(scope: &AuditScope, filter: &AuditFilter, record: &AuditRecord) -> bool {
    let in_scope = match scope {
        AuditScope::Organization(organization) => {
            record.organization_id.as_ref() == Some(organization)
        }
        AuditScope::All => true,
    };
    let is = |wanted: &Option<String>, value: Option<&str>| {
        wanted.as_deref().is_none_or(|wanted| value == Some(wanted))
    };
    in_scope
        && filter.from.is_none_or(|from| record.occurred_at >= from)
        && filter.to.is_none_or(|to| record.occurred_at < to)
        && filter
            .actor_kind
            .is_none_or(|kind| record.actor_kind == kind)
        && is(&filter.actor_id, record.actor_id.as_deref())
        && is(&filter.resource_type, Some(&record.resource_type))
        && is(&filter.resource_id, record.resource_id.as_deref())
        && is(&filter.action, Some(&record.action))
        && is(&filter.request_id, record.request_id.as_deref())
}

#[async_trait]
impl AuditEventStore for InMemoryAuditEventStore {
    async fn insert(&self, record: &AuditRecord) -> Result<(), DomainError> {
        self.with(|events| {
            if events.contains_key(&record.id) {
                return Err(DomainError::Conflict {
                    code: "already_exists",
                    message: format!("audit event {} already exists", record.id),
                });
            }
            events.insert(record.id.clone(), record.clone());
            Ok(())
        })
    }

    async fn list(
        &self,
        scope: &AuditScope,
        filter: &AuditFilter,
        page: &PageRequest<AuditEventId>,
    ) -> Result<Vec<AuditRecord>, DomainError> {
        Ok(self.with(|events| {
            // Keyset pagination: the ids below the last one of the previous page.
            let below = page
                .after
                .as_ref()
                .map_or(Bound::Unbounded, Bound::Excluded);
            events
                .range((Bound::Unbounded, below))
                .rev()
                .map(|(_, record)| record)
                .filter(|record| matches(scope, filter, record))
                .take(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX))
                .cloned()
                .collect()
        }))
    }

    async fn count(&self, scope: &AuditScope, filter: &AuditFilter) -> Result<u64, DomainError> {
        Ok(self.with(|events| {
            events
                .values()
                .filter(|record| matches(scope, filter, record))
                .count() as u64
        }))
    }

    async fn delete_before(&self, before: DateTime<Utc>) -> Result<u64, DomainError> {
        Ok(self.with(|events| {
            let count = events.len();
            events.retain(|_, record| record.occurred_at >= before);
            (count - events.len()) as u64
        }))
    }
}
