//! Deliveries: one per event and subscribed webhook, attempted until the receiver answers
//! 2xx or the attempts run out.

use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::{EventId, EventKind, WebhookId, WebhookSecret};

tessera_kernel::entity_id!(
    /// A delivery's id (sent as `Tessera-Delivery`).
    DeliveryId,
    "whd"
);

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Not yet accepted; attempted again at `next_attempt_at`.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed; no more are made.
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Pending, Self::Delivered, Self::Failed]
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

/// One event on its way to one webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: DeliveryId,
    pub webhook_id: WebhookId,
    pub organization: OrganizationId,
    pub event_id: EventId,
    pub event: EventKind,
    /// The exact JSON body sent on every attempt.
    pub body: String,
    pub status: DeliveryStatus,
    /// Attempts made (or under way).
    pub attempts: u32,
    /// When the next attempt is due; `None` once delivered or failed.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The HTTP status of the last answer, if one came.
    pub last_status_code: Option<u16>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// A due delivery a dispatcher holds a lease on, with what it needs to send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    /// `attempts` already counts this attempt.
    pub delivery: Delivery,
    pub url: String,
    pub secret: WebhookSecret,
}

/// The outcome of one attempt, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub status: DeliveryStatus,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// When to try again (`Pending` only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub at: DateTime<Utc>,
}
