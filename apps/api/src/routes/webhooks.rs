//! Webhooks of the caller's organization: register receivers for `file.ready`,
//! `file.failed` and `dataset.updated`, and see what was delivered to them.

use actix_web::{HttpResponse, delete, get, http::header, post, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_webhooks::{Delivery, NewWebhook, Webhook, WebhookId};
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::paged;
use utoipa::ToSchema;
use validator::Validate;

use crate::{
    access::Caller,
    extract::{ValidJson, ValidQuery, page_limit, path_id},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};

/// A webhook (never its secret, except once in the answer that creates it).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookOut {
    #[schema(example = "whk_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub organization_id: String,
    #[schema(example = "https://hooks.example.com/tessera")]
    pub url: String,
    #[schema(example = json!(["file.ready", "file.failed"]))]
    pub events: Vec<String>,
    pub description: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// Present only in the answer that creates the webhook; store it now. Deliveries carry
    /// `Tessera-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with
    /// this secret>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "whsec_…")]
    pub secret: Option<String>,
}

impl WebhookOut {
    fn from(webhook: Webhook, show_secret: bool) -> Self {
        Self {
            secret: show_secret.then(|| webhook.secret.expose().to_owned()),
            id: webhook.id.to_string(),
            organization_id: webhook.organization.to_string(),
            url: webhook.url,
            events: webhook
                .events
                .iter()
                .map(|kind| kind.as_str().to_owned())
                .collect(),
            description: webhook.description,
            created_by: webhook.created_by,
            created_at: webhook.created_at,
        }
    }
}

paged!(WebhookOut => WebhookPage, "A page of webhooks.");

/// One event on its way to a webhook.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryOut {
    #[schema(example = "whd_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub webhook_id: String,
    /// The same in every delivery and retry of one event (`Tessera-Event-Id`).
    pub event_id: String,
    #[schema(example = "file.ready")]
    pub event: String,
    /// `pending` (to be attempted at `nextAttemptAt`), `delivered` or `failed`.
    #[schema(example = "delivered")]
    pub status: String,
    pub attempts: u32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The HTTP status of the receiver's last answer.
    pub last_status_code: Option<u16>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    /// The JSON body sent: `{id, type, organizationId, createdAt, data}`.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
}

impl From<Delivery> for DeliveryOut {
    fn from(delivery: Delivery) -> Self {
        Self {
            payload: serde_json::from_str(&delivery.body).unwrap_or(serde_json::Value::Null),
            id: delivery.id.to_string(),
            webhook_id: delivery.webhook_id.to_string(),
            event_id: delivery.event_id.to_string(),
            event: delivery.event.as_str().to_owned(),
            status: delivery.status.as_str().to_owned(),
            attempts: delivery.attempts,
            next_attempt_at: delivery.next_attempt_at,
            last_status_code: delivery.last_status_code,
            last_error: delivery.last_error,
            created_at: delivery.created_at,
            delivered_at: delivery.delivered_at,
        }
    }
}

paged!(DeliveryOut => DeliveryPage, "A page of deliveries.");

/// Where events go and which ones.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWebhook {
    /// Absolute `https` (or `http`) URL without credentials; loopback, private and
    /// link-local hosts are refused unless the operator allows them.
    #[schema(
        example = "https://hooks.example.com/tessera",
        pattern = "^[Hh][Tt][Tt][Pp][Ss]?://",
        max_length = 2048
    )]
    pub url: String,
    /// One or more of `file.ready`, `file.failed`, `dataset.updated`.
    #[validate(length(min = 1, max = 16))]
    #[schema(value_type = Vec<WebhookEventName>, min_items = 1, max_items = 16)]
    #[schema(example = json!(["file.ready", "file.failed"]))]
    pub events: Vec<String>,
    /// Up to 500 characters.
    #[schema(max_length = 500)]
    pub description: Option<String>,
}

/// An event a webhook can subscribe to (the document's name for the strings `events` holds).
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum WebhookEventName {
    #[schema(rename = "file.ready")]
    FileReady,
    #[schema(rename = "file.failed")]
    FileFailed,
    #[schema(rename = "dataset.updated")]
    DatasetUpdated,
}

fn webhook_id(text: &str) -> Result<WebhookId, ApiError> {
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
            &caller.0.organization_id,
            &caller.actor(),
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
            &caller.0.organization_id,
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
        .get(&caller.0.organization_id, &id)
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
        .delete(&caller.0.organization_id, &id, &caller.actor())
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
            &caller.0.organization_id,
            &id,
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(web::Json(PageOf::of(page, DeliveryOut::from)))
}
