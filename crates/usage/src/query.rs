use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_kernel::OrganizationId;

/// A calendar period usage can be grouped by, in the report's time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Hour,
    Day,
    Month,
}

impl Period {
    /// The start of the period `local` falls in.
    pub fn start(self, local: NaiveDateTime) -> NaiveDateTime {
        use chrono::{Datelike, NaiveTime, Timelike};
        let date = local.date();
        match self {
            Period::Hour => date.and_hms_opt(local.hour(), 0, 0),
            Period::Day => Some(date.and_time(NaiveTime::MIN)),
            Period::Month => date.with_day(1).map(|d| d.and_time(NaiveTime::MIN)),
        }
        .unwrap_or(local)
    }
}

/// What a report groups by: at most one period, and any of model and user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Grouping {
    pub period: Option<Period>,
    pub model: bool,
    pub user: bool,
}

impl Grouping {
    pub fn is_empty(&self) -> bool {
        self.period.is_none() && !self.model && !self.user
    }

    /// The `groupBy` values this grouping answers to, in a fixed order.
    pub fn names(&self) -> Vec<&'static str> {
        let period = self.period.map(|period| match period {
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Month => "month",
        });
        period
            .into_iter()
            .chain(self.model.then_some("model"))
            .chain(self.user.then_some("user"))
            .collect()
    }
}

/// Which records a report covers: one organization, `from` (inclusive) to `to`
/// (exclusive), optionally one model, one principal and one chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageFilter {
    pub organization: OrganizationId,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub model_id: Option<String>,
    pub user_id: Option<String>,
    pub chat_id: Option<String>,
}

/// The report's time zone's UTC offset from `since` on (until the next span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetSpan {
    pub since: DateTime<Utc>,
    /// Seconds east of UTC.
    pub offset_seconds: i32,
}

/// The identity of one group: the local start of its period, its model and its principal
/// (each `None` when not grouped by). Groups are ordered by this key; pages continue after one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupKey {
    pub period: Option<NaiveDateTime>,
    pub model_id: Option<String>,
    pub user_id: Option<String>,
}

/// Sums over a set of usage records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    pub cached_input_tokens: u64,
    pub total_tokens: u64,
    pub credits: u64,
    pub requests: u64,
    /// Part of `requests` answered from the response cache (no provider called).
    pub cached_requests: u64,
}

impl UsageTotals {
    pub fn add(&mut self, other: &UsageTotals) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.total_tokens += other.total_tokens;
        self.credits += other.credits;
        self.requests += other.requests;
        self.cached_requests += other.cached_requests;
    }
}

/// One group's sums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageGroup {
    pub key: GroupKey,
    pub totals: UsageTotals,
}

/// What a store is asked for: the filtered records' totals, how many groups they form, and
/// the groups after `after` in key order, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupQuery {
    pub filter: UsageFilter,
    pub grouping: Grouping,
    /// Cover `filter.from..filter.to`, the first starting at `filter.from`. Periods are
    /// computed on `created_at + offset` of the span the record falls in.
    pub offsets: Vec<OffsetSpan>,
    pub after: Option<GroupKey>,
    pub limit: u32,
}

/// A store's answer to a [`GroupQuery`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aggregate {
    pub totals: UsageTotals,
    pub group_count: u64,
    pub groups: Vec<UsageGroup>,
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;

    #[test]
    fn periods_start_where_expected() {
        let at = NaiveDate::from_ymd_opt(2026, 11, 22)
            .unwrap()
            .and_hms_opt(13, 45, 12)
            .unwrap();
        let start = |period: Period| period.start(at).to_string();
        assert_eq!(start(Period::Hour), "2026-11-22 13:00:00");
        assert_eq!(start(Period::Day), "2026-11-22 00:00:00");
        assert_eq!(start(Period::Month), "2026-11-01 00:00:00");
    }

    #[test]
    fn groupings_name_themselves_in_order() {
        let grouping = Grouping {
            period: Some(Period::Day),
            model: true,
            user: true,
        };
        assert_eq!(grouping.names(), ["day", "model", "user"]);
        assert!(Grouping::default().is_empty());
    }
}
