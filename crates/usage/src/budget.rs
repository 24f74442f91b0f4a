//! Monthly credit budgets: an organization's spend in the current UTC calendar month
//! against its budget. The spend is read from the store and cached briefly per
//! organization, so a busy organization costs one aggregate per cache period; a budget can
//! be overshot by what completes within that period (and by completions already running).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use tessera_kernel::{Clock, DomainError, OrganizationId};

use crate::{GroupQuery, Grouping, OffsetSpan, UsageFilter, UsageStore};

/// An organization's monthly budget and what it has spent of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetStatus {
    pub monthly_credits: u64,
    /// Credits spent this month (as of the cached read).
    pub used: u64,
    /// When the month ends and the budget starts afresh.
    pub resets_at: DateTime<Utc>,
}

impl BudgetStatus {
    pub fn exhausted(&self) -> bool {
        self.used >= self.monthly_credits
    }
}

/// The UTC calendar month `at` falls in: its first instant and the next month's.
pub fn utc_month(at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let first = |year: i32, month: u32| {
        NaiveDate::from_ymd_opt(year, month, 1)
            .and_then(|date| date.and_hms_opt(0, 0, 0))
            .map(|start| start.and_utc())
            .unwrap_or(at)
    };
    let start = first(at.year(), at.month());
    let end = if at.month() == 12 {
        first(at.year() + 1, 1)
    } else {
        first(at.year(), at.month() + 1)
    };
    (start, end)
}

struct Cached {
    month_start: DateTime<Utc>,
    read_at: DateTime<Utc>,
    used: u64,
}

/// Month-to-date spend per organization, read through a short-lived cache.
#[derive(Clone)]
pub struct BudgetGuard {
    store: Arc<dyn UsageStore>,
    clock: Arc<dyn Clock>,
    cache_for: Duration,
    spent: Arc<Mutex<HashMap<OrganizationId, Cached>>>,
}

impl BudgetGuard {
    pub fn new(store: Arc<dyn UsageStore>, clock: Arc<dyn Clock>, cache_for: Duration) -> Self {
        Self {
            store,
            clock,
            cache_for,
            spent: Arc::default(),
        }
    }

    /// The organization's spend this month against `monthly_credits`.
    pub async fn status(
        &self,
        organization: &OrganizationId,
        monthly_credits: u64,
    ) -> Result<BudgetStatus, DomainError> {
        let now = self.clock.now();
        let (month_start, resets_at) = utc_month(now);
        let cached = self
            .spent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(organization)
            .filter(|c| c.month_start == month_start && now - c.read_at < self.cache_for)
            .map(|c| c.used);
        let used = match cached {
            Some(used) => used,
            None => {
                let used = self.read(organization, month_start, resets_at).await?;
                self.spent
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(
                        organization.clone(),
                        Cached {
                            month_start,
                            read_at: now,
                            used,
                        },
                    );
                used
            }
        };
        Ok(BudgetStatus {
            monthly_credits,
            used,
            resets_at,
        })
    }

    async fn read(
        &self,
        organization: &OrganizationId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, DomainError> {
        let query = GroupQuery {
            filter: UsageFilter {
                organization: organization.clone(),
                from,
                to,
                model_id: None,
                user_id: None,
                chat_id: None,
            },
            grouping: Grouping::default(),
            offsets: vec![OffsetSpan {
                since: from,
                offset_seconds: 0,
            }],
            after: None,
            limit: 0,
        };
        Ok(self.store.aggregate(&query).await?.totals.credits)
    }
}

#[cfg(test)]
mod tests {
    use tessera_kernel::{ManualClock, PrincipalKind};

    use super::*;
    use crate::{Tokens, UsageId, UsageRecord, memory::InMemoryUsageStore};

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn months_end_where_the_next_begins() {
        assert_eq!(
            utc_month(at("2026-12-31T23:59:59Z")),
            (at("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(
            utc_month(at("2026-02-10T08:00:00Z")),
            (at("2026-02-01T00:00:00Z"), at("2026-03-01T00:00:00Z"))
        );
    }

    async fn spend(store: &InMemoryUsageStore, org: &OrganizationId, when: &str, credits: u64) {
        store
            .record(&UsageRecord {
                id: UsageId::generate(),
                organization_id: org.clone(),
                principal: "p".into(),
                principal_kind: PrincipalKind::Client,
                chat_id: "c".into(),
                message_id: UsageId::generate().to_string(),
                model_id: "m".into(),
                parent_model_id: "m".into(),
                provider: "local".into(),
                tokens: Tokens::default(),
                credits,
                latency_ms: 0,
                finish_reason: "stop".into(),
                created_at: at(when),
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_spend_counts_this_month_only_and_is_cached_briefly() {
        let store = Arc::new(InMemoryUsageStore::new());
        let clock = Arc::new(ManualClock::new(at("2026-11-22T10:00:00Z")));
        let guard = BudgetGuard::new(store.clone(), clock.clone(), Duration::seconds(10));
        let org = OrganizationId::generate();
        spend(&store, &org, "2026-10-31T23:59:59Z", 500).await;
        spend(&store, &org, "2026-11-01T00:00:00Z", 60).await;
        spend(
            &store,
            &OrganizationId::generate(),
            "2026-11-02T00:00:00Z",
            900,
        )
        .await;
        let status = guard.status(&org, 100).await.unwrap();
        assert_eq!(status.used, 60);
        assert!(!status.exhausted());
        assert_eq!(status.resets_at, at("2026-12-01T00:00:00Z"));

        spend(&store, &org, "2026-11-22T09:00:00Z", 40).await;
        // Within the cache period the earlier read stands.
        assert_eq!(guard.status(&org, 100).await.unwrap().used, 60);
        clock.advance(Duration::seconds(10));
        let status = guard.status(&org, 100).await.unwrap();
        assert_eq!(status.used, 100);
        assert!(status.exhausted());

        // A new month starts afresh, cache or not.
        clock.advance(Duration::days(9));
        assert_eq!(guard.status(&org, 100).await.unwrap().used, 0);
    }
}
