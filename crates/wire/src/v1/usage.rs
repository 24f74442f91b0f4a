//! The bodies of `/v1/usage` (and the MCP tool `read_usage`): the query that picks the range,
//! filters and grouping of a usage report, and the report as answered (totals and one page of
//! groups) from the usage domain's report. The repeatable `groupBy` parameter is read from the
//! raw query string by the app.

use serde::{Deserialize, Serialize};
use tessera_usage::{ReportGroup, UsageReport, UsageTotals};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

/// Which usage to report and how to group it.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct UsageQuery {
    /// Start (inclusive): an ISO 8601 date-time with offset (`2026-11-01T00:00:00Z`) or a
    /// date (`2026-11-01`, midnight in `timeZone`). Default: the start of the month `to`
    /// falls in.
    pub from: Option<String>,
    /// End (exclusive), same forms. Default: now.
    pub to: Option<String>,
    /// Only this model (a user model id or a catalog model id).
    pub model_id: Option<String>,
    /// Only this principal (a user's subject or a client id); another principal's needs
    /// `usage:admin`.
    pub user_id: Option<String>,
    /// Only this chat.
    pub chat_id: Option<String>,
    /// `day`, `hour` or `month` (at most one), `model`, `user` (needs `usage:admin`);
    /// repeatable or comma-separated (read from the raw query string).
    #[serde(skip)]
    #[param(rename = "groupBy")]
    pub group_by: Option<Vec<String>>,
    /// IANA time zone for period boundaries, e.g. `Europe/Berlin`. Default: `UTC`.
    pub time_zone: Option<String>,
    /// Groups per page: 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page (same grouping).
    pub cursor: Option<String>,
}

/// Sums over a set of completions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotalsOut {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Part of `outputTokens` spent reasoning.
    pub reasoning_tokens: u64,
    /// Part of `inputTokens` read from a cache (a prompt prefix reused from an earlier
    /// request) rather than processed.
    pub cached_input_tokens: u64,
    pub total_tokens: u64,
    /// Total tokens × each model's credit multiplier.
    pub credits: u64,
    /// Completions counted.
    pub requests: u64,
    /// Part of `requests` answered from the response cache (an earlier answer reused): no
    /// provider was called and they cost 0 credits.
    pub cached_requests: u64,
}

impl From<UsageTotals> for UsageTotalsOut {
    fn from(totals: UsageTotals) -> Self {
        Self {
            input_tokens: totals.input_tokens,
            output_tokens: totals.output_tokens,
            reasoning_tokens: totals.reasoning_tokens,
            cached_input_tokens: totals.cached_input_tokens,
            total_tokens: totals.total_tokens,
            credits: totals.credits,
            requests: totals.requests,
            cached_requests: totals.cached_requests,
        }
    }
}

/// One group: the keys it was grouped by, and its sums.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageGroupOut {
    /// With a period grouping: the period's start in the report's time zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_start: Option<String>,
    /// With `groupBy=model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// With `groupBy=user`: the principal's subject or client id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(flatten)]
    pub totals: UsageTotalsOut,
}

/// Usage of a range: the totals, and the groups page by page (ordered by period, model,
/// user).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageOut {
    pub from: String,
    pub to: String,
    pub time_zone: String,
    pub group_by: Vec<String>,
    pub totals: UsageTotalsOut,
    /// Empty without `groupBy`.
    pub items: Vec<UsageGroupOut>,
    pub next_cursor: Option<String>,
    pub has_more: bool,
    /// Number of groups.
    pub total_count: Option<u64>,
}

fn rfc3339<Tz: chrono::TimeZone>(at: &chrono::DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

impl From<UsageReport> for UsageOut {
    fn from(report: UsageReport) -> Self {
        let page = report.groups;
        Self {
            from: rfc3339(&report.from),
            to: rfc3339(&report.to),
            time_zone: report.time_zone,
            group_by: report.group_by.into_iter().map(str::to_owned).collect(),
            totals: report.totals.into(),
            items: page
                .items
                .into_iter()
                .map(|group: ReportGroup| UsageGroupOut {
                    period_start: group.period_start.as_ref().map(rfc3339),
                    model_id: group.model_id,
                    user_id: group.user_id,
                    totals: group.totals.into(),
                })
                .collect(),
            next_cursor: page.next_cursor.map(|c| c.as_str().to_owned()),
            has_more: page.has_more,
            total_count: page.total_count,
        }
    }
}
