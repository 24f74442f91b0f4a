//! Webhooks (pure domain). It owns what an organization may register (a URL, the events it
//! wants, a signing secret shown once), what an event says (`file.ready`, `file.failed`,
//! `dataset.updated` and their JSON bodies), how a delivery is signed (HMAC-SHA256 over the
//! timestamp and the body), and the retry schedule a [`Dispatcher`] follows until a receiver
//! answers 2xx or the attempts run out. Events are written to the outbox by the stores whose
//! state change they report, in the same transaction, so none is lost or invented. It knows
//! nothing of HTTP clients or SQL: adapters implement [`WebhookStore`] and [`WebhookSender`].
//! The `memory` feature has the store port's in-memory reference implementation, the
//! `contract` feature its contract suite (`webhook_store_contract!`) for any other.

#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod delivery;
mod dispatcher;
mod event;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod sender;
mod service;
mod signature;
mod store;
mod webhook;

pub use delivery::{AttemptRecord, ClaimedDelivery, Delivery, DeliveryId, DeliveryStatus};
pub use dispatcher::{DispatchSettings, Dispatcher, retry_delay};
pub use event::{DatasetChange, Event, EventId, EventKind};
pub use sender::{OutgoingRequest, SendError, WebhookSender};
pub use service::{MAX_WEBHOOKS_PER_ORGANIZATION, WebhookService};
pub use signature::{
    DELIVERY_HEADER, EVENT_HEADER, EVENT_ID_HEADER, SIGNATURE_HEADER, sign, verify,
};
pub use store::WebhookStore;
pub use tessera_kernel::{TargetPolicy, is_private_address};
pub use webhook::{
    MAX_DESCRIPTION_CHARS, MAX_URL_CHARS, NewWebhook, Webhook, WebhookId, WebhookSecret,
};

#[cfg(any(test, feature = "mocks"))]
pub use sender::MockWebhookSender;
#[cfg(any(test, feature = "mocks"))]
pub use store::MockWebhookStore;
