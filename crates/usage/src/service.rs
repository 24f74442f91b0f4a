use std::sync::Arc;

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveTime, Utc};
use chrono_tz::Tz;
use tessera_kernel::{Caller, Clock, CursorCodec, DomainError, FieldError, Limit, Page, Scope};

use crate::{
    GroupKey, GroupQuery, Grouping, Period, UsageFilter, UsageGroup, UsageStore, UsageTotals,
    zone::{local_instant, local_time, offset_spans},
};

/// The longest range one report covers.
pub const MAX_RANGE_DAYS: i64 = 3_660;

/// A report request as it arrives (strings are parsed and checked here).
#[derive(Debug, Clone, Default)]
pub struct UsageRequest {
    /// RFC 3339 instant, or a date (midnight in `time_zone`); defaults to the start of the
    /// month `to` falls in.
    pub from: Option<String>,
    /// RFC 3339 instant or date (exclusive); defaults to now.
    pub to: Option<String>,
    pub model_id: Option<String>,
    pub user_id: Option<String>,
    pub chat_id: Option<String>,
    /// `day`, `hour`, `month` (at most one of them), `model`, `user`.
    pub group_by: Vec<String>,
    /// An IANA time zone name; UTC by default.
    pub time_zone: Option<String>,
    pub limit: Limit,
    pub cursor: Option<String>,
}

/// One group of a report, its period start in the report's time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportGroup {
    pub period_start: Option<DateTime<FixedOffset>>,
    pub model_id: Option<String>,
    pub user_id: Option<String>,
    pub totals: UsageTotals,
}

/// Usage of a range: totals and one page of groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageReport {
    pub from: DateTime<FixedOffset>,
    pub to: DateTime<FixedOffset>,
    pub time_zone: String,
    pub group_by: Vec<&'static str>,
    pub totals: UsageTotals,
    pub groups: Page<ReportGroup>,
}

/// Usage reports.
#[derive(Clone)]
pub struct UsageService {
    store: Arc<dyn UsageStore>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
}

fn invalid(field: &str, msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(["query".into(), field.into()], msg, kind)
}

impl UsageService {
    pub fn new(store: Arc<dyn UsageStore>, clock: Arc<dyn Clock>, cursors: CursorCodec) -> Self {
        Self {
            store,
            clock,
            cursors,
        }
    }

    /// Totals and groups of the organization's usage; per-principal figures (grouping by
    /// user, or another principal's `userId`) need `sees_users`.
    pub async fn report(
        &self,
        caller: &Caller,
        request: UsageRequest,
    ) -> Result<UsageReport, DomainError> {
        let mut errors = Vec::new();
        let zone = match request.time_zone.as_deref() {
            None => Some(Tz::UTC),
            Some(name) => name.parse::<Tz>().ok().or_else(|| {
                errors.push(invalid(
                    "timeZone",
                    format!("`{name}` is not an IANA time zone name (e.g. Europe/Berlin)"),
                    "value_error",
                ));
                None
            }),
        };
        let grouping = parse_grouping(&request.group_by, &mut errors);
        let zone = zone.unwrap_or(Tz::UTC);
        let to = match request.to.as_deref() {
            None => Some(self.clock.now()),
            Some(text) => parse_instant(zone, text, "to", &mut errors),
        };
        let from = match (request.from.as_deref(), to) {
            (Some(text), _) => parse_instant(zone, text, "from", &mut errors),
            (None, Some(to)) => Some(month_start(zone, to)),
            (None, None) => None,
        };
        if let (Some(from), Some(to)) = (from, to) {
            if from >= to {
                errors.push(invalid("from", "must be before `to`", "value_error"));
            } else if to - from > Duration::days(MAX_RANGE_DAYS) {
                errors.push(invalid(
                    "from",
                    format!("a report covers at most {MAX_RANGE_DAYS} days"),
                    "value_error",
                ));
            }
        }
        let after = match request.cursor.as_deref() {
            Some(cursor) => match self.cursors.decode::<GroupKey>(
                &group_list(grouping),
                caller.organization().as_str(),
                cursor,
            ) {
                Ok(key) => Some(key),
                Err(error) => return Err(error.into()),
            },
            None => None,
        };
        let (Some(from), Some(to), true) = (from, to, errors.is_empty()) else {
            return Err(DomainError::Validation(errors));
        };
        let others = request
            .user_id
            .as_deref()
            .is_some_and(|user| user != caller.subject());
        // Other principals' usage needs `usage:admin`.
        if !caller.holds(&Scope::USAGE_ADMIN) && (grouping.user || others) {
            return Err(DomainError::Forbidden {
                code: "insufficient_scope",
                message: "per-user usage of other principals needs the usage:admin scope".into(),
            });
        }

        let query = GroupQuery {
            filter: UsageFilter {
                organization: caller.organization().clone(),
                from,
                to,
                model_id: request.model_id,
                user_id: request.user_id,
                chat_id: request.chat_id,
            },
            grouping,
            offsets: offset_spans(zone, from, to),
            after,
            limit: if grouping.is_empty() {
                0
            } else {
                request.limit.get() + 1
            },
        };
        let aggregate = self.store.aggregate(&query).await?;
        let groups = Page::from_overfetch(
            aggregate.groups,
            request.limit,
            Some(if grouping.is_empty() {
                0
            } else {
                aggregate.group_count
            }),
            |group| {
                self.cursors.encode(
                    &group_list(grouping),
                    caller.organization().as_str(),
                    &group.key,
                )
            },
        )
        .map(|UsageGroup { key, totals }| ReportGroup {
            period_start: key.period.map(|local| local_instant(zone, local)),
            model_id: key.model_id,
            user_id: key.user_id,
            totals,
        });
        Ok(UsageReport {
            from: from.with_timezone(&zone).fixed_offset(),
            to: to.with_timezone(&zone).fixed_offset(),
            time_zone: zone.name().to_owned(),
            group_by: grouping.names(),
            totals: aggregate.totals,
            groups,
        })
    }
}

/// Cursors name the grouping they page through, so one cannot continue another's list.
fn group_list(grouping: Grouping) -> String {
    format!("usage-groups:{}", grouping.names().join(","))
}

fn parse_grouping(names: &[String], errors: &mut Vec<FieldError>) -> Grouping {
    let mut grouping = Grouping::default();
    for name in names.iter().flat_map(|n| n.split(',')).map(str::trim) {
        let period = match name {
            "hour" => Some(Period::Hour),
            "day" => Some(Period::Day),
            "month" => Some(Period::Month),
            "model" => {
                grouping.model = true;
                None
            }
            "user" => {
                grouping.user = true;
                None
            }
            other => {
                errors.push(invalid(
                    "groupBy",
                    format!("`{other}` is not one of day, hour, month, model, user"),
                    "enum",
                ));
                None
            }
        };
        if let Some(period) = period {
            if grouping.period.is_some_and(|p| p != period) {
                errors.push(invalid(
                    "groupBy",
                    "at most one of day, hour and month",
                    "value_error",
                ));
            }
            grouping.period = Some(period);
        }
    }
    grouping
}

/// An RFC 3339 instant, or a date meaning its local midnight in `zone`.
fn parse_instant(
    zone: Tz,
    text: &str,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Some(local_instant(zone, date.and_time(NaiveTime::MIN)).with_timezone(&Utc));
    }
    errors.push(invalid(
        field,
        "expected an ISO 8601 date (2026-11-01) or date-time with offset \
         (2026-11-01T00:00:00Z)",
        "datetime_parsing",
    ));
    None
}

/// Local midnight of the first day of the month `at` falls in.
fn month_start(zone: Tz, at: DateTime<Utc>) -> DateTime<Utc> {
    let local = local_time(zone, at);
    let first = local.date().with_day(1).unwrap_or(local.date());
    local_instant(zone, first.and_time(NaiveTime::MIN)).with_timezone(&Utc)
}
