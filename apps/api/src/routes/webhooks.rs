//! Webhooks of the caller's organization: register receivers for `file.ready`,
//! `file.failed` and `dataset.updated`, and see what was delivered to them. Its bodies are
//! `tessera_wire::v1::webhooks`.

use actix_web::{HttpResponse, delete, get, http::header, post, web};
use tessera_webhooks::{NewWebhook, WebhookId};
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::v1::webhooks::{
    CreateWebhook, DeliveryOut, DeliveryPage, WebhookOut, WebhookPage,
};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_kernel::DomainError;
use tessera_wire::parse::{page_limit, path_id};

fn webhook_id(text: &str) -> Result<WebhookId, DomainError> {
    path_id(text, "webhook")
}

/// Register a webhook; the answer holds its signing secret, shown only this once.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "createWebhook",
    request_body = CreateWebhook,
    responses(
        (status = 201, description = "Created; `secret` is shown only now", body = WebhookOut),
        (status = 409, description = "The organization has the most webhooks it may have", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid URL, unknown event or too long description", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/webhooks")]
pub async fn create_webhook(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateWebhook>,
) -> Result<HttpResponse, ApiError> {
    let webhook = state
        .webhooks
        .service
        .create(
            caller.organization(),
            caller.actor(),
            NewWebhook {
                url: body.url,
                events: body.events,
                description: body.description,
            },
        )
        .await?;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/v1/webhooks/{}", webhook.id)))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(WebhookOut::from(webhook, true)))
}

/// List the organization's webhooks, newest first.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "listWebhooks",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of webhooks", body = WebhookPage),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/webhooks")]
pub async fn list_webhooks(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<WebhookPage>, ApiError> {
    let page = state
        .webhooks
        .service
        .list(
            caller.organization(),
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(web::Json(PageOf::of(page, |w| WebhookOut::from(w, false))))
}

/// One webhook of the organization.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "getWebhook",
    params(("webhook_id" = String, Path, description = "The webhook id")),
    responses(
        (status = 200, description = "The webhook", body = WebhookOut),
        (status = 404, description = "No such webhook in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/webhooks/{webhook_id}")]
pub async fn get_webhook(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<WebhookOut>, ApiError> {
    let id = webhook_id(&path)?;
    let webhook = state
        .webhooks
        .service
        .get(caller.organization(), &id)
        .await?;
    Ok(web::Json(WebhookOut::from(webhook, false)))
}

/// Delete a webhook; deliveries not yet sent are dropped.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "deleteWebhook",
    params(("webhook_id" = String, Path, description = "The webhook id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such webhook in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/webhooks/{webhook_id}")]
pub async fn delete_webhook(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = webhook_id(&path)?;
    state
        .webhooks
        .service
        .delete(caller.organization(), &id, caller.actor())
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The webhook's deliveries, newest first: status, attempts, the receiver's last answer.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "listWebhookDeliveries",
    params(("webhook_id" = String, Path, description = "The webhook id"), PageQuery),
    responses(
        (status = 200, description = "A page of deliveries", body = DeliveryPage),
        (status = 404, description = "No such webhook in this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/webhooks/{webhook_id}/deliveries")]
pub async fn list_deliveries(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<DeliveryPage>, ApiError> {
    let id = webhook_id(&path)?;
    let page = state
        .webhooks
        .service
        .deliveries(
            caller.organization(),
            &id,
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(web::Json(PageOf::of(page, DeliveryOut::from)))
}
