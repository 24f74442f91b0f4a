//! The organization's audit log: who changed what, when and from where, and which credentials
//! were refused, newest first (decision 0026). Its bodies are `tessera_wire::v1::audit`.

use actix_web::{get, web};
use tessera_audit::{AuditQuery, AuditScope};
use tessera_wire::page::PageOf;
use tessera_wire::v1::audit::{AuditEventOut, AuditEventPage, ListAuditEvents};

use crate::{
    caller::Caller,
    extract::ValidQuery,
    problem::{ApiError, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::page_limit;

/// The organization's audit events, newest first: every change made through the API or the
/// admin CLI to clients, API keys, models, system prompts, particles, datasets, files,
/// webhooks and the organization, and refused credentials of its clients and keys.
#[utoipa::path(
    tag = "Audit",
    operation_id = "listAuditEvents",
    params(ListAuditEvents),
    responses(
        (status = 200, description = "A page of audit events", body = AuditEventPage),
        (status = 422, description = "Invalid filter (a malformed time, `to` not after `from`, an unknown `actorKind`), limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/audit-events")]
pub async fn list_audit_events(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListAuditEvents>,
) -> Result<web::Json<AuditEventPage>, ApiError> {
    let limit = page_limit(query.limit)?;
    let filter = AuditQuery {
        from: query.from,
        to: query.to,
        actor_kind: query.actor_kind,
        actor_id: query.actor_id,
        resource_type: query.resource_type,
        resource_id: query.resource_id,
        action: query.action,
        request_id: query.request_id,
    };
    let scope = AuditScope::Organization(caller.organization().clone());
    let page = state
        .audit
        .list(&scope, filter, limit, query.cursor.as_deref())
        .await?;
    Ok(web::Json(PageOf::of(page, AuditEventOut::from)))
}
