//! Credit budgets: an organization's spend in the current UTC calendar month against its
//! budget, and a credential's (an API key's or a client's) spend in its budget's current UTC
//! day, week or month. The spend is read from the store and cached briefly per organization
//! or credential, so a busy one costs one aggregate per cache period; a budget can be
//! overshot by what completes within that period (and by completions already running).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use tessera_kernel::{Clock, DomainError, OrganizationId};

use crate::{GroupQuery, Grouping, OffsetSpan, UsageFilter, UsageStore};

/// A budget's and what has been spent of it in its current period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetStatus {
    /// The budget: credits per period.
    pub credits: u64,
    /// Credits spent this period (as of the cached read).
    pub used: u64,
    /// When the period ends and the budget starts afresh.
    pub resets_at: DateTime<Utc>,
}

impl BudgetStatus {
    pub fn exhausted(&self) -> bool {
        self.used >= self.credits
    }
}

/// The UTC calendar period a budget renews with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetPeriod {
    Day,
    /// ISO weeks: Monday 00:00 UTC to the next Monday.
    Week,
    Month,
}

impl BudgetPeriod {
    pub const ALL: [BudgetPeriod; 3] = [Self::Day, Self::Week, Self::Month];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|period| period.as_str() == text)
    }

    /// The period `at` falls in: its first instant and the next period's.
    pub fn span(self, at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        let midnight = at
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .map_or(at, |start| start.and_utc());
        match self {
            Self::Day => (midnight, midnight + Duration::days(1)),
            Self::Week => {
                let start =
                    midnight - Duration::days(i64::from(at.weekday().num_days_from_monday()));
                (start, start + Duration::days(7))
            }
            Self::Month => utc_month(at),
        }
    }
}

/// Whose spend a budget limits: an organization's, or one credential's within it (an API
/// key's or a client's id, as usage records name the principal).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Spender {
    pub organization: OrganizationId,
    pub principal: Option<String>,
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
    period_start: DateTime<Utc>,
    read_at: DateTime<Utc>,
    used: u64,
}

/// Period-to-date spend per organization or credential, read through a short-lived cache.
#[derive(Clone)]
pub struct BudgetGuard {
    store: Arc<dyn UsageStore>,
    clock: Arc<dyn Clock>,
    cache_for: Duration,
    spent: Arc<Mutex<HashMap<(Spender, BudgetPeriod), Cached>>>,
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
        let spender = Spender {
            organization: organization.clone(),
            principal: None,
        };
        self.spent_of(&spender, BudgetPeriod::Month, monthly_credits)
            .await
    }

    /// What `spender` has spent in the current `period` against `credits`.
    pub async fn spent_of(
        &self,
        spender: &Spender,
        period: BudgetPeriod,
        credits: u64,
    ) -> Result<BudgetStatus, DomainError> {
        let now = self.clock.now();
        let (period_start, resets_at) = period.span(now);
        let key = (spender.clone(), period);
        let cached = self
            .spent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&key)
            .filter(|c| c.period_start == period_start && now - c.read_at < self.cache_for)
            .map(|c| c.used);
        let used = match cached {
            Some(used) => used,
            None => {
                let used = self.read(spender, period_start, resets_at).await?;
                self.spent
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(
                        key,
                        Cached {
                            period_start,
                            read_at: now,
                            used,
                        },
                    );
                used
            }
        };
        Ok(BudgetStatus {
            credits,
            used,
            resets_at,
        })
    }

    async fn read(
        &self,
        spender: &Spender,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, DomainError> {
        let query = GroupQuery {
            filter: UsageFilter {
                organization: spender.organization.clone(),
                from,
                to,
                model_id: None,
                user_id: spender.principal.clone(),
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
        spend_as(store, org, "p", when, credits).await;
    }

    async fn spend_as(
        store: &InMemoryUsageStore,
        org: &OrganizationId,
        principal: &str,
        when: &str,
        credits: u64,
    ) {
        store
            .record(&UsageRecord {
                id: UsageId::generate(),
                organization_id: org.clone(),
                principal: principal.into(),
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
                cached: false,
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

    #[test]
    fn periods_are_utc_days_iso_weeks_and_months() {
        let at_noon = at("2026-12-03T12:30:00Z"); // a Thursday
        assert_eq!(
            BudgetPeriod::Day.span(at_noon),
            (at("2026-12-03T00:00:00Z"), at("2026-12-04T00:00:00Z"))
        );
        assert_eq!(
            BudgetPeriod::Week.span(at_noon),
            (at("2026-11-30T00:00:00Z"), at("2026-12-07T00:00:00Z"))
        );
        assert_eq!(
            BudgetPeriod::Week.span(at("2026-11-30T00:00:00Z")),
            (at("2026-11-30T00:00:00Z"), at("2026-12-07T00:00:00Z"))
        );
        assert_eq!(
            BudgetPeriod::Month.span(at_noon),
            (at("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))
        );
        for period in BudgetPeriod::ALL {
            assert_eq!(BudgetPeriod::parse(period.as_str()), Some(period));
        }
        assert_eq!(BudgetPeriod::parse("year"), None);
    }

    #[tokio::test]
    async fn a_credentials_spend_counts_its_own_records_in_its_period() {
        let store = Arc::new(InMemoryUsageStore::new());
        let clock = Arc::new(ManualClock::new(at("2026-12-03T12:00:00Z")));
        let guard = BudgetGuard::new(store.clone(), clock.clone(), Duration::seconds(10));
        let org = OrganizationId::generate();
        let key = Spender {
            organization: org.clone(),
            principal: Some("key_a".into()),
        };
        spend_as(&store, &org, "key_a", "2026-12-02T23:59:59Z", 500).await;
        spend_as(&store, &org, "key_a", "2026-12-03T01:00:00Z", 30).await;
        spend_as(&store, &org, "key_b", "2026-12-03T02:00:00Z", 70).await;
        let today = guard.spent_of(&key, BudgetPeriod::Day, 40).await.unwrap();
        assert_eq!((today.used, today.exhausted()), (30, false));
        assert_eq!(today.resets_at, at("2026-12-04T00:00:00Z"));
        let week = guard.spent_of(&key, BudgetPeriod::Week, 40).await.unwrap();
        assert_eq!((week.used, week.exhausted()), (530, true));
        // The organization's spend is everyone's.
        assert_eq!(guard.status(&org, 1000).await.unwrap().used, 600);
        clock.advance(Duration::days(1));
        assert_eq!(
            guard
                .spent_of(&key, BudgetPeriod::Day, 40)
                .await
                .unwrap()
                .used,
            0
        );
    }
}
