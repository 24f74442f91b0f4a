//! The in-memory [`WebhookStore`]: the port's reference implementation (the contract suite
//! runs against it as against the SQL stores), for tests. No other store shares its
//! transactions, so events reach its outbox through [`InMemoryWebhookStore::record_event`],
//! which stands for the write another domain's store makes with the change it reports. It
//! keeps no organizations, so it cannot refuse a webhook of one that does not exist as the
//! SQL stores' foreign key does.

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{
    AttemptRecord, ClaimedDelivery, Delivery, DeliveryId, DeliveryStatus, Event, Webhook,
    WebhookId, WebhookStore,
};

/// A delivery and the lease a dispatcher may hold on it.
struct Queued {
    delivery: Delivery,
    leased_by: Option<String>,
    leased_until: Option<DateTime<Utc>>,
}

#[derive(Default)]
struct State {
    /// By id, so newest first (by id) is the map in reverse.
    webhooks: BTreeMap<WebhookId, Webhook>,
    deliveries: BTreeMap<DeliveryId, Queued>,
    audit: Vec<AuditRecord>,
}

/// The in-memory [`WebhookStore`].
#[derive(Default)]
pub struct InMemoryWebhookStore {
    state: Mutex<State>,
}

/// At most `page.limit.overfetch()` of `records` (ordered by id), newest first, before the
/// page's cursor (keyset pagination on descending ids).
fn newest_first<'a, K: Ord + 'a, V: 'a>(
    records: impl DoubleEndedIterator<Item = (&'a K, &'a V)>,
    page: &PageRequest<K>,
) -> impl Iterator<Item = &'a V> {
    let after = page.after.as_ref();
    records
        .rev()
        .filter(move |(id, _)| after.is_none_or(|after| *id < after))
        .take(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX))
        .map(|(_, record)| record)
}

impl InMemoryWebhookStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the state. A poisoned lock still guards a whole state: no change here
    /// panics halfway.
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Writes `event` to the outbox as the store of the change it reports would: one
    /// pending delivery, due at once, for every webhook of its organization subscribed to
    /// its kind, all carrying the event's id and body.
    pub fn record_event(&self, event: &Event) {
        let body = event.body();
        self.with(|state| {
            let subscribed: Vec<WebhookId> = state
                .webhooks
                .values()
                .filter(|webhook| webhook.organization == event.organization)
                .filter(|webhook| webhook.wants(event.kind))
                .map(|webhook| webhook.id.clone())
                .collect();
            for webhook_id in subscribed {
                let delivery = Delivery {
                    id: DeliveryId::generate(),
                    webhook_id,
                    organization: event.organization.clone(),
                    event_id: event.id.clone(),
                    event: event.kind,
                    body: body.clone(),
                    status: DeliveryStatus::Pending,
                    attempts: 0,
                    next_attempt_at: Some(event.created_at),
                    last_status_code: None,
                    last_error: None,
                    created_at: event.created_at,
                    delivered_at: None,
                };
                let queued = Queued {
                    delivery,
                    leased_by: None,
                    leased_until: None,
                };
                state.deliveries.insert(queued.delivery.id.clone(), queued);
            }
        });
    }

    /// The audit records written with the changes made, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        self.with(|state| state.audit.clone())
    }
}

#[async_trait]
impl WebhookStore for InMemoryWebhookStore {
    async fn insert(&self, webhook: &Webhook, audit: &AuditRecord) -> Result<(), DomainError> {
        self.with(|state| {
            if state.webhooks.contains_key(&webhook.id) {
                return Err(DomainError::Conflict {
                    code: "already_exists",
                    message: format!("webhook {} already exists", webhook.id),
                });
            }
            state.webhooks.insert(webhook.id.clone(), webhook.clone());
            state.audit.push(audit.clone());
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
    ) -> Result<Option<Webhook>, DomainError> {
        Ok(self.with(|state| {
            state
                .webhooks
                .get(id)
                .filter(|webhook| &webhook.organization == organization)
                .cloned()
        }))
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<WebhookId>,
    ) -> Result<Vec<Webhook>, DomainError> {
        Ok(self.with(|state| {
            let of_organization = state
                .webhooks
                .iter()
                .filter(|(_, webhook)| &webhook.organization == organization);
            newest_first(of_organization, page).cloned().collect()
        }))
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            state
                .webhooks
                .values()
                .filter(|webhook| &webhook.organization == organization)
                .count() as u64
        }))
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        id: &WebhookId,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let owned = state
                .webhooks
                .get(id)
                .is_some_and(|webhook| &webhook.organization == organization);
            if !owned {
                return false;
            }
            state
                .deliveries
                .retain(|_, queued| &queued.delivery.webhook_id != id);
            state.webhooks.remove(id);
            state.audit.push(audit.clone());
            true
        }))
    }

    async fn deliveries(
        &self,
        organization: &OrganizationId,
        webhook: &WebhookId,
        page: &PageRequest<DeliveryId>,
    ) -> Result<Vec<Delivery>, DomainError> {
        Ok(self.with(|state| {
            let of_webhook = state.deliveries.iter().filter(|(_, queued)| {
                &queued.delivery.organization == organization
                    && &queued.delivery.webhook_id == webhook
            });
            newest_first(of_webhook, page)
                .map(|queued| queued.delivery.clone())
                .collect()
        }))
    }

    async fn count_deliveries(
        &self,
        organization: &OrganizationId,
        webhook: &WebhookId,
    ) -> Result<u64, DomainError> {
        Ok(self.with(|state| {
            state
                .deliveries
                .values()
                .filter(|queued| {
                    &queued.delivery.organization == organization
                        && &queued.delivery.webhook_id == webhook
                })
                .count() as u64
        }))
    }

    async fn claim_due(
        &self,
        worker: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<ClaimedDelivery>, DomainError> {
        Ok(self.with(|state| {
            // Due and pending, without a live lease (an expired one is a dead dispatcher's);
            // the oldest due first, ties by id, as the SQL stores order them.
            let due = state
                .deliveries
                .values()
                .filter(|queued| {
                    queued.delivery.status == DeliveryStatus::Pending
                        && queued.delivery.next_attempt_at.is_some_and(|at| at <= now)
                        && queued.leased_until.is_none_or(|until| until <= now)
                })
                .min_by_key(|queued| (queued.delivery.next_attempt_at, &queued.delivery.id))
                .map(|queued| queued.delivery.id.clone())?;
            let queued = state.deliveries.get_mut(&due)?;
            queued.delivery.attempts += 1;
            queued.leased_by = Some(worker.to_owned());
            queued.leased_until = Some(lease_until);
            let webhook = state.webhooks.get(&queued.delivery.webhook_id)?;
            Some(ClaimedDelivery {
                delivery: queued.delivery.clone(),
                url: webhook.url.clone(),
                secret: webhook.secret.clone(),
            })
        }))
    }

    async fn record_attempt(
        &self,
        id: &DeliveryId,
        worker: &str,
        record: &AttemptRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.with(|state| {
            let Some(queued) = state
                .deliveries
                .get_mut(id)
                .filter(|queued| queued.leased_by.as_deref() == Some(worker))
            else {
                return false;
            };
            let delivery = &mut queued.delivery;
            delivery.status = record.status;
            delivery.last_status_code = record.status_code;
            delivery.last_error.clone_from(&record.error);
            delivery.next_attempt_at = record.next_attempt_at;
            delivery.delivered_at =
                (record.status == DeliveryStatus::Delivered).then_some(record.at);
            queued.leased_by = None;
            queued.leased_until = None;
            true
        }))
    }
}
