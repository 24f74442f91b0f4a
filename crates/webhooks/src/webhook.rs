//! A webhook registration: where an organization wants its events, which ones, and the
//! secret that signs them.

use std::fmt;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::EventKind;

tessera_kernel::entity_id!(
    /// A webhook's id.
    WebhookId,
    "whk"
);

/// The longest URL a webhook may have.
pub const MAX_URL_CHARS: usize = 2048;
/// The longest description a webhook may have.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// The key that signs a webhook's deliveries. The receiver needs it in clear text to check
/// signatures, so unlike a client secret it is kept, not hashed; it is shown once and never
/// appears in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    const PREFIX: &'static str = "whsec_";

    /// 256 random bits, URL-safe, with a recognisable prefix (for secret scanners).
    pub fn generate() -> Self {
        let bytes: [u8; 32] = rand::random();
        Self(format!("{}{}", Self::PREFIX, URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// A secret read back from storage.
    pub fn stored(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// A registered webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub id: WebhookId,
    pub organization: OrganizationId,
    /// Absolute `https` (or `http`) URL the events are POSTed to.
    pub url: String,
    /// The events it receives, sorted, without repeats.
    pub events: Vec<EventKind>,
    pub description: Option<String>,
    pub secret: WebhookSecret,
    /// The principal that registered it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
}

impl Webhook {
    pub fn wants(&self, kind: EventKind) -> bool {
        self.events.contains(&kind)
    }
}

/// What a caller asks to register, before validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWebhook {
    pub url: String,
    /// Event names, e.g. `file.ready`.
    pub events: Vec<String>,
    pub description: Option<String>,
}
