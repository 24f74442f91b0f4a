//! Reading the audit log, recording events that stand alone, and retention.

use std::sync::Arc;

use chrono::Duration;
use tessera_kernel::{
    AuditEventId, AuditRecord, Clock, CursorCodec, DomainError, Limit, Page, PageRequest,
};

use crate::{AuditEventStore, AuditQuery, AuditScope};

const CURSOR_LIST: &str = "audit-events";

/// How long events are kept: `None` keeps them forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retention(pub Option<Duration>);

impl Retention {
    /// `days` days; 0 keeps events forever.
    pub fn days(days: u32) -> Self {
        Self((days > 0).then(|| Duration::days(i64::from(days))))
    }
}

/// Lists an organization's audit events (or, for operators, everyone's), records events that
/// have no change to share a transaction with, and deletes expired ones.
#[derive(Clone)]
pub struct AuditService {
    store: Arc<dyn AuditEventStore>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    retention: Retention,
}

impl AuditService {
    pub fn new(
        store: Arc<dyn AuditEventStore>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
        retention: Retention,
    ) -> Self {
        Self {
            store,
            clock,
            cursors,
            retention,
        }
    }

    /// The events of `scope` matching `query`, newest first. Cursors are bound to the scope
    /// (an organization's cannot page through another's or everyone's).
    pub async fn list(
        &self,
        scope: &AuditScope,
        query: AuditQuery,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<AuditRecord>, DomainError> {
        let filter = query.check().map_err(DomainError::Validation)?;
        let owner = match scope {
            AuditScope::Organization(organization) => organization.as_str(),
            AuditScope::All => "",
        };
        let after = cursor
            .map(|c| self.cursors.decode::<AuditEventId>(CURSOR_LIST, owner, c))
            .transpose()
            .map_err(DomainError::from)?;
        let rows = self
            .store
            .list(scope, &filter, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(scope, &filter).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors.encode(CURSOR_LIST, owner, &last.id)
        }))
    }

    /// Writes an event that records no change (a refused credential). A failure is the
    /// caller's to log: it must never turn a refusal into another answer.
    pub async fn record(&self, record: &AuditRecord) -> Result<(), DomainError> {
        self.store.insert(record).await
    }

    /// Deletes the events older than the retention period; how many.
    pub async fn prune(&self) -> Result<u64, DomainError> {
        match self.retention.0 {
            None => Ok(0),
            Some(keep) => self.store.delete_before(self.clock.now() - keep).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use mockall::predicate::eq;
    use tessera_kernel::{ActorKind, ManualClock, OrganizationId};

    use super::*;
    use crate::MockAuditEventStore;

    fn service(store: MockAuditEventStore, retention: Retention) -> AuditService {
        let now = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
        AuditService::new(
            Arc::new(store),
            Arc::new(ManualClock::new(now)),
            CursorCodec::new([7; 32]),
            retention,
        )
    }

    fn record(organization: &OrganizationId) -> AuditRecord {
        AuditRecord::by_operator(
            organization,
            ActorKind::Operator,
            "ops",
            "client.create",
            "client",
            "cli_1",
            Utc::now(),
        )
    }

    #[tokio::test]
    async fn pages_continue_with_their_cursor_in_their_scope_only() {
        let acme = OrganizationId::generate();
        let rows: Vec<AuditRecord> = (0..3).map(|_| record(&acme)).collect();
        let mut store = MockAuditEventStore::new();
        let all = rows.clone();
        store.expect_list().times(1).returning(move |_, _, page| {
            assert_eq!(page.after, None);
            Ok(all.clone())
        });
        store.expect_count().returning(|_, _| Ok(3));
        let audit = service(store, Retention::default());
        let scope = AuditScope::Organization(acme.clone());
        let page = audit
            .list(&scope, AuditQuery::default(), Limit::new(2).unwrap(), None)
            .await
            .unwrap();
        assert_eq!(page.items.len(), 2);
        assert!(page.has_more);
        let cursor = page.next_cursor.unwrap();
        // Another organization cannot use it.
        let other = AuditScope::Organization(OrganizationId::generate());
        let error = audit
            .list(
                &other,
                AuditQuery::default(),
                Limit::default(),
                Some(cursor.as_str()),
            )
            .await
            .unwrap_err();
        assert!(matches!(error, DomainError::Validation(_)), "{error:?}");
    }

    #[tokio::test]
    async fn bad_filters_never_reach_the_store() {
        let audit = service(MockAuditEventStore::new(), Retention::default());
        let error = audit
            .list(
                &AuditScope::All,
                AuditQuery {
                    actor_kind: Some("root".into()),
                    ..AuditQuery::default()
                },
                Limit::default(),
                None,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, DomainError::Validation(_)), "{error:?}");
    }

    #[tokio::test]
    async fn prune_deletes_what_is_older_than_the_retention() {
        let mut store = MockAuditEventStore::new();
        store
            .expect_delete_before()
            .with(eq(Utc.with_ymd_and_hms(2026, 5, 2, 0, 0, 0).unwrap()))
            .times(1)
            .returning(|_| Ok(4));
        assert_eq!(
            service(store, Retention::days(30)).prune().await.unwrap(),
            4
        );
        // 0 days: kept forever, the store is not asked.
        let kept = service(MockAuditEventStore::new(), Retention::days(0));
        assert_eq!(kept.prune().await.unwrap(), 0);
    }
}
