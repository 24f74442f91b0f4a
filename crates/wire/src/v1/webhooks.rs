//! The bodies of `/v1/webhooks`: a webhook as answered (with its signing secret only in the
//! answer that creates it), a delivery of an event to one, their pages, the request that
//! registers a webhook, and the names of the events it may subscribe to.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_webhooks::{Delivery, Webhook};
use utoipa::ToSchema;
use validator::Validate;

use crate::paged;

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
    pub fn from(webhook: Webhook, show_secret: bool) -> Self {
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
pub enum WebhookEventName {
    #[schema(rename = "file.ready")]
    FileReady,
    #[schema(rename = "file.failed")]
    FileFailed,
    #[schema(rename = "dataset.updated")]
    DatasetUpdated,
}
