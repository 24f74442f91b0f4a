//! The `WebhookStore` contract, for anyone implementing the port: each function checks
//! promises of the trait against a fresh, empty store (a [`WebhookStores`]), and
//! [`webhook_store_contract!`](crate::webhook_store_contract) turns them into tests.
//! Tessera runs it against the in-memory reference (`crate::memory`) and both SQL stores.
//! Registrations stay within their organization; the outbox holds one pending delivery per
//! announced event and subscribed webhook; dispatchers claim due deliveries in order under
//! leases, and retries and settled deliveries are stored as the attempts report them.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use tessera_kernel::{ActorKind, AuditRecord, Limit, OrganizationId, PageRequest};

use crate::{
    AttemptRecord, DatasetChange, DeliveryStatus, Event, EventId, EventKind, Webhook, WebhookId,
    WebhookSecret, WebhookStore, memory::InMemoryWebhookStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` a [`WebhookStores`](crate::contract::WebhookStores)
/// (the guard, e.g. a throwaway database, lives until the test ends).
#[macro_export]
macro_rules! webhook_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            webhooks_read_back_within_their_organization,
            events_reach_the_subscribed_webhooks_of_their_organization,
            due_deliveries_are_claimed_once_retried_and_settled,
        );
    };
}

/// What the checks run on: a webhook store over one empty state, a way to make an
/// organization exist before webhooks refer to it (where foreign keys need it), and a way
/// to make an event happen, since only the stores of other domains write the outbox.
#[async_trait]
pub trait WebhookStores: Send + Sync {
    fn store(&self) -> Arc<dyn WebhookStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where webhooks refer
    /// to it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);

    /// Announces `event` as the store of the change it reports would, in that change's
    /// transaction: one pending delivery for each webhook of its organization subscribed
    /// to its kind. Such a store may mint the event's id itself (the checks never rely on
    /// `event.id`), but its body says the rest of `event`. The checks announce each file
    /// (`data.fileId`) ready or failed once, and a dataset's changes to files announced
    /// ready, versions counting up from 2. Panics if it cannot.
    async fn announce(&self, event: &Event);
}

/// The in-memory reference, which keeps no organizations and takes events directly.
#[async_trait]
impl WebhookStores for Arc<InMemoryWebhookStore> {
    fn store(&self) -> Arc<dyn WebhookStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}

    async fn announce(&self, event: &Event) {
        self.record_event(event);
    }
}

/// A fresh organization, made to exist first.
async fn organization(stores: &impl WebhookStores, name: &str) -> OrganizationId {
    let id = OrganizationId::generate();
    stores.organization_exists(&id, name).await;
    id
}

/// The audit record of a change to a webhook of `organization`.
pub fn audit(organization: &OrganizationId, action: &str) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        action,
        "webhook",
        "whk_x",
        Utc::now(),
    )
}

/// `minutes` after the start of the checks' day, at microsecond precision as stores keep it.
pub fn at(minutes: i64) -> DateTime<Utc> {
    "2026-11-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
}

/// A page of `limit`, after `after` when set.
pub fn page<K>(limit: i64, after: Option<K>) -> PageRequest<K> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after,
    }
}

/// A fresh id of another domain's kind (`file`, `ds`), sortable like every entity id.
pub fn foreign_id(prefix: &str) -> String {
    let id = EventId::generate();
    let uuid = id.as_str().trim_start_matches("evt_");
    format!("{prefix}_{uuid}")
}

/// Registers a webhook of `organization` for `events`.
async fn webhook(
    store: &Arc<dyn WebhookStore>,
    organization: &OrganizationId,
    events: &[EventKind],
) -> Webhook {
    let webhook = Webhook {
        id: WebhookId::generate(),
        organization: organization.clone(),
        url: "https://hooks.example.com/t".into(),
        events: events.to_vec(),
        description: Some("monitor".into()),
        secret: WebhookSecret::generate(),
        created_by: "alice".into(),
        created_at: at(0),
    };
    store
        .insert(&webhook, &audit(organization, "webhook.create"))
        .await
        .unwrap();
    webhook
}

/// Announces that the file `file_id` named `name` is ready, at `minutes`.
async fn file_ready(
    stores: &impl WebhookStores,
    organization: &OrganizationId,
    file_id: &str,
    name: &str,
    minutes: i64,
) -> Event {
    let event = Event::file_ready(organization, file_id, name, 0, at(minutes));
    stores.announce(&event).await;
    event
}

fn body(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

pub async fn webhooks_read_back_within_their_organization(stores: &impl WebhookStores) {
    let store = stores.store();
    let acme = organization(stores, "Acme").await;
    let other = organization(stores, "Globex").await;
    let first = webhook(&store, &acme, &[EventKind::FileReady]).await;
    let second = webhook(
        &store,
        &acme,
        &[EventKind::FileFailed, EventKind::DatasetUpdated],
    )
    .await;
    let foreign = webhook(&store, &other, &[EventKind::FileReady]).await;
    assert_eq!(
        store.get(&acme, &second.id).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(store.get(&acme, &foreign.id).await.unwrap(), None);
    assert_eq!(
        store.list(&acme, &page(1, None)).await.unwrap(),
        vec![second.clone(), first.clone()],
        "one over the limit, newest first"
    );
    assert_eq!(
        store
            .list(&acme, &page(5, Some(second.id.clone())))
            .await
            .unwrap(),
        vec![first.clone()]
    );
    assert_eq!(store.count(&acme).await.unwrap(), 2);
    assert!(
        !store
            .delete(&acme, &foreign.id, &audit(&acme, "webhook.delete"))
            .await
            .unwrap()
    );
    assert!(
        store
            .delete(&acme, &first.id, &audit(&acme, "webhook.delete"))
            .await
            .unwrap()
    );
    assert_eq!(store.get(&acme, &first.id).await.unwrap(), None);
    assert_eq!(store.count(&other).await.unwrap(), 1);
}

pub async fn events_reach_the_subscribed_webhooks_of_their_organization(
    stores: &impl WebhookStores,
) {
    let store = stores.store();
    let acme = organization(stores, "Acme").await;
    let other = organization(stores, "Globex").await;
    let ready_hook = webhook(&store, &acme, &[EventKind::FileReady]).await;
    let all_hook = webhook(&store, &acme, &EventKind::ALL).await;
    let foreign_hook = webhook(&store, &other, &EventKind::ALL).await;

    let good = foreign_id("file");
    let ready = file_ready(stores, &acme, &good, "good.md", 1).await;
    let failed = Event::file_failed(
        &acme,
        &foreign_id("file"),
        "bad.pdf",
        "the PDF is encrypted",
        at(2),
    );
    stores.announce(&failed).await;
    let dataset = foreign_id("ds");
    let added = Event::dataset_updated(&acme, &dataset, 2, DatasetChange::FileAdded, &good, at(4));
    stores.announce(&added).await;
    let removed =
        Event::dataset_updated(&acme, &dataset, 3, DatasetChange::FileRemoved, &good, at(6));
    stores.announce(&removed).await;

    let ready_only = store
        .deliveries(&acme, &ready_hook.id, &page(50, None))
        .await
        .unwrap();
    assert_eq!(ready_only.len(), 1);
    let everything = store
        .deliveries(&acme, &all_hook.id, &page(50, None))
        .await
        .unwrap();
    let kinds: Vec<EventKind> = everything.iter().rev().map(|d| d.event).collect();
    assert_eq!(
        kinds,
        [
            EventKind::FileReady,
            EventKind::FileFailed,
            EventKind::DatasetUpdated,
            EventKind::DatasetUpdated
        ]
    );
    assert_eq!(
        store.count_deliveries(&acme, &all_hook.id).await.unwrap(),
        4
    );
    assert!(
        store
            .deliveries(&other, &foreign_hook.id, &page(50, None))
            .await
            .unwrap()
            .is_empty(),
        "another organization's events never reach its webhooks"
    );
    assert!(
        store
            .deliveries(&other, &all_hook.id, &page(50, None))
            .await
            .unwrap()
            .is_empty(),
        "nor can it read ours"
    );
    // One event, one id and body, whichever webhook it goes to.
    let ready_event = &ready_only[0];
    let same = everything
        .iter()
        .find(|d| d.event == EventKind::FileReady)
        .unwrap();
    assert_eq!(
        (&ready_event.event_id, &ready_event.body),
        (&same.event_id, &same.body)
    );
    assert_ne!(ready_event.id, same.id);
    let ready_body = body(&ready_event.body);
    assert_eq!(ready_body["type"], "file.ready");
    assert_eq!(ready_body["data"]["fileId"], good.as_str());
    assert_eq!(ready_body["data"]["name"], "good.md");
    assert_eq!(ready_body["createdAt"], "2026-11-01T00:01:00.000000Z");
    let failed_delivery = everything
        .iter()
        .find(|d| d.event == EventKind::FileFailed)
        .unwrap();
    assert_eq!(
        body(&failed_delivery.body)["data"]["error"],
        "the PDF is encrypted"
    );
    let versions: Vec<Value> = everything
        .iter()
        .rev()
        .filter(|d| d.event == EventKind::DatasetUpdated)
        .map(|d| body(&d.body)["data"].clone())
        .collect();
    assert_eq!(
        versions,
        [
            json!({"datasetId": dataset, "version": 2, "change": "file_added", "fileId": good}),
            json!({"datasetId": dataset, "version": 3, "change": "file_removed", "fileId": good}),
        ]
    );
    // Each delivery carries its event whole: the body every receiver gets names the id the
    // delivery keeps, its organization and time, and the announced facts.
    let announced = [&ready, &failed, &added, &removed];
    for (delivery, event) in everything.iter().rev().zip(announced) {
        let sent = body(&delivery.body);
        assert_eq!(sent["id"], delivery.event_id.as_str());
        assert_eq!(sent["type"], event.kind.as_str());
        assert_eq!(sent["organizationId"], acme.as_str());
        assert_eq!(sent["data"], event.data);
        assert_eq!(delivery.created_at, event.created_at);
    }
    for delivery in &everything {
        assert_eq!(
            (
                delivery.status,
                delivery.attempts,
                delivery.organization.clone()
            ),
            (DeliveryStatus::Pending, 0, acme.clone())
        );
        assert_eq!(delivery.next_attempt_at, Some(delivery.created_at));
    }
    // Deleting a webhook drops its deliveries.
    assert!(
        store
            .delete(&acme, &all_hook.id, &audit(&acme, "webhook.delete"))
            .await
            .unwrap()
    );
    assert_eq!(
        store.count_deliveries(&acme, &all_hook.id).await.unwrap(),
        0
    );
}

pub async fn due_deliveries_are_claimed_once_retried_and_settled(stores: &impl WebhookStores) {
    let store = stores.store();
    let acme = organization(stores, "Acme").await;
    let hook = webhook(&store, &acme, &[EventKind::FileReady]).await;
    file_ready(stores, &acme, &foreign_id("file"), "one.md", 1).await;

    assert_eq!(
        store.claim_due("d1", at(0), at(2)).await.unwrap(),
        None,
        "not due yet"
    );
    let claimed = store.claim_due("d1", at(1), at(2)).await.unwrap().unwrap();
    assert_eq!(
        (claimed.url.as_str(), &claimed.secret),
        ("https://hooks.example.com/t", &hook.secret)
    );
    assert_eq!(claimed.delivery.attempts, 1);
    assert_eq!(
        store.claim_due("d2", at(1), at(3)).await.unwrap(),
        None,
        "leased"
    );

    // A failed attempt waits for its next time; a stranger cannot settle it.
    let retry = AttemptRecord {
        status: DeliveryStatus::Pending,
        status_code: Some(503),
        error: Some("the receiver answered 503".into()),
        next_attempt_at: Some(at(10)),
        at: at(1),
    };
    assert!(
        !store
            .record_attempt(&claimed.delivery.id, "d2", &retry)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_attempt(&claimed.delivery.id, "d1", &retry)
            .await
            .unwrap()
    );
    assert_eq!(store.claim_due("d2", at(9), at(11)).await.unwrap(), None);
    let stored = &store
        .deliveries(&acme, &hook.id, &page(5, None))
        .await
        .unwrap()[0];
    assert_eq!(
        (
            stored.status,
            stored.attempts,
            stored.last_status_code,
            stored.last_error.as_deref(),
            stored.next_attempt_at
        ),
        (
            DeliveryStatus::Pending,
            1,
            Some(503),
            Some("the receiver answered 503"),
            Some(at(10))
        )
    );

    // A dispatcher that dies mid-attempt loses the delivery when its lease expires.
    let again = store
        .claim_due("d2", at(10), at(11))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (again.delivery.id.clone(), again.delivery.attempts),
        (claimed.delivery.id.clone(), 2)
    );
    let taken_over = store
        .claim_due("d3", at(11), at(12))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken_over.delivery.attempts, 3);
    let delivered = AttemptRecord {
        status: DeliveryStatus::Delivered,
        status_code: Some(204),
        error: None,
        next_attempt_at: None,
        at: at(11),
    };
    assert!(
        !store
            .record_attempt(&again.delivery.id, "d2", &delivered)
            .await
            .unwrap()
    );
    assert!(
        store
            .record_attempt(&again.delivery.id, "d3", &delivered)
            .await
            .unwrap()
    );
    let stored = &store
        .deliveries(&acme, &hook.id, &page(5, None))
        .await
        .unwrap()[0];
    assert_eq!(
        (
            stored.status,
            stored.attempts,
            stored.last_status_code,
            stored.last_error.as_deref(),
            stored.next_attempt_at,
            stored.delivered_at
        ),
        (
            DeliveryStatus::Delivered,
            3,
            Some(204),
            None,
            None,
            Some(at(11))
        )
    );
    assert_eq!(
        store.claim_due("d1", at(100), at(101)).await.unwrap(),
        None,
        "settled"
    );

    // Oldest due first; a delivery that failed for good is never claimed again.
    let second = foreign_id("file");
    file_ready(stores, &acme, &second, "two.md", 20).await;
    let third = foreign_id("file");
    file_ready(stores, &acme, &third, "three.md", 21).await;
    let next = store
        .claim_due("d1", at(30), at(31))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body(&next.delivery.body)["data"]["fileId"], second.as_str());
    let failed = AttemptRecord {
        status: DeliveryStatus::Failed,
        status_code: None,
        error: Some("connection refused".into()),
        next_attempt_at: None,
        at: at(30),
    };
    assert!(
        store
            .record_attempt(&next.delivery.id, "d1", &failed)
            .await
            .unwrap()
    );
    let last = store
        .claim_due("d1", at(30), at(31))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body(&last.delivery.body)["data"]["fileId"], third.as_str());
    assert!(
        store
            .record_attempt(&last.delivery.id, "d1", &failed)
            .await
            .unwrap()
    );
    assert_eq!(
        store.claim_due("d1", at(1000), at(1001)).await.unwrap(),
        None
    );
}
