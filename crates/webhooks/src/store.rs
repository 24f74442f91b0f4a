//! The storage port of webhooks and their deliveries.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{AttemptRecord, ClaimedDelivery, Delivery, DeliveryId, Webhook, WebhookId};

/// Webhooks and their delivery outbox. Deliveries are created by the stores whose state
/// changes the events report (a file becoming ready, a dataset changing), inside the same
/// transaction, one per subscribed webhook; this port only reads and settles them.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Inserts the webhook and, in the same transaction, its audit record.
    async fn insert(&self, webhook: &Webhook, audit: &AuditRecord) -> Result<(), DomainError>;

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
    ) -> Result<Option<Webhook>, DomainError>;

    /// Newest first, at most `limit + 1`.
    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<WebhookId>,
    ) -> Result<Vec<Webhook>, DomainError>;

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError>;

    /// Deletes the webhook and its deliveries (pending ones are never sent); `false` when
    /// the organization has no such webhook.
    /// Deletes the webhook and writes `audit` in the same transaction; false (and no record)
    /// when the organization has no such webhook.
    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// The webhook's deliveries, newest first, at most `limit + 1`.
    async fn deliveries(
        &self,
        organization: &OrganizationId,
        webhook: &WebhookId,
        page: &PageRequest<DeliveryId>,
    ) -> Result<Vec<Delivery>, DomainError>;

    async fn count_deliveries(
        &self,
        organization: &OrganizationId,
        webhook: &WebhookId,
    ) -> Result<u64, DomainError>;

    /// Takes the oldest due pending delivery without a live lease, counts the attempt and
    /// leases it to `worker` until `lease_until`; `None` when nothing is due. A dispatcher
    /// that dies mid-attempt loses its lease, and the delivery is attempted again.
    async fn claim_due(
        &self,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedDelivery>, DomainError>;

    /// Stores an attempt's outcome and releases the lease; `false` when `worker` no longer
    /// holds it (the outcome is then dropped: another dispatcher owns the delivery).
    async fn record_attempt(
        &self,
        id: &DeliveryId,
        worker: &str,
        record: &AttemptRecord,
    ) -> Result<bool, DomainError>;
}
