//! Usage: token and credit totals of the organization's completions over a range of time,
//! grouped by period, model and principal. Its bodies are `tessera_wire::v1::usage`; the
//! repeatable `groupBy` parameter is read from the raw query string here.

use actix_web::{HttpRequest, get, web};
use tessera_usage::UsageRequest;
use tessera_wire::v1::usage::{UsageOut, UsageQuery};

use crate::{
    caller::Caller,
    extract::ValidQuery,
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::page_limit;

/// The values of the repeatable `groupBy` query parameter (`groupBy[]` is accepted too).
fn group_by(query: &str) -> Vec<String> {
    form_urlencoded::parse(query.as_bytes())
        .filter(|(key, _)| key == "groupBy" || key == "groupBy[]")
        .map(|(_, value)| value.into_owned())
        .collect()
}

/// Token and credit usage of the organization: totals over a range, and groups by period
/// (in a time zone), model and user. Per-user figures of other principals need
/// `usage:admin`.
#[utoipa::path(
    tag = "Usage",
    operation_id = "getUsage",
    params(UsageQuery),
    responses(
        (status = 200, description = "Totals and one page of groups", body = UsageOut),
        (status = 403, description = "Per-user figures without usage:admin", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid range, grouping, time zone, limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/usage")]
pub async fn get_usage(
    req: HttpRequest,
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<UsageQuery>,
) -> Result<web::Json<UsageOut>, ApiError> {
    let groups = group_by(req.query_string());
    Ok(web::Json(report(&state, &caller, query, groups).await?))
}

/// The organization's usage report (also the MCP tool `read_usage`).
pub(crate) async fn report(
    state: &AppState,
    caller: &Caller,
    query: UsageQuery,
    group_by: Vec<String>,
) -> Result<UsageOut, ApiError> {
    let request = UsageRequest {
        from: query.from,
        to: query.to,
        model_id: query.model_id,
        user_id: query.user_id,
        chat_id: query.chat_id,
        group_by,
        time_zone: query.time_zone,
        limit: page_limit(query.limit)?,
        cursor: query.cursor,
    };
    let report = state.usage.report(caller, request).await?;
    Ok(report.into())
}
