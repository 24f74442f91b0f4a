//! The `WebhookStore` contract on SQLite and PostgreSQL: registrations within their
//! organization, the outbox written by the transactions that make events happen (file
//! ready or failed, dataset content changes; only for subscribed webhooks), and the
//! dispatch queue (due order, leases, retries, settled deliveries, deletion).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{Limit, OrganizationId, PageRequest};
use tessera_knowledge::{
    Dataset, DatasetId, DatasetStore, FileFailed, FileFormat, FileId, FileReady, FileStatus,
    FileStore, StoredFile,
};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Backend, SqlDatasetStore, SqlFileStore, SqlOrganizationStore, SqlWebhookStore,
    testing::TestDatabase,
};
use tessera_webhooks::{
    AttemptRecord, DeliveryStatus, EventKind, Webhook, WebhookId, WebhookSecret, WebhookStore,
};

struct Fixture {
    webhooks: Arc<SqlWebhookStore>,
    files: Arc<SqlFileStore>,
    datasets: Arc<SqlDatasetStore>,
    db: TestDatabase,
}

/// The audit record of a change to a webhook of `organization`.
/// An audit record of a change in `organization` (what the knowledge services pass).
fn audited(organization: &tessera_kernel::OrganizationId) -> tessera_kernel::AuditRecord {
    tessera_kernel::AuditRecord::by_operator(
        organization,
        tessera_kernel::ActorKind::Operator,
        "ops",
        "dataset.update",
        "dataset",
        "ds_x",
        chrono::Utc::now(),
    )
}

fn audit(organization: &OrganizationId, action: &str) -> tessera_kernel::AuditRecord {
    tessera_kernel::AuditRecord::by_operator(
        organization,
        tessera_kernel::ActorKind::Operator,
        "ops",
        action,
        "webhook",
        "whk_x",
        chrono::Utc::now(),
    )
}

fn at(minutes: i64) -> DateTime<Utc> {
    "2026-11-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
}

fn page<K>(limit: i64, after: Option<K>) -> PageRequest<K> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after,
    }
}

impl Fixture {
    async fn new(backend: Backend) -> Self {
        let db = TestDatabase::of(backend).await;
        Self {
            webhooks: Arc::new(SqlWebhookStore::new(db.database.clone())),
            files: Arc::new(SqlFileStore::new(db.database.clone())),
            datasets: Arc::new(SqlDatasetStore::new(db.database.clone())),
            db,
        }
    }

    async fn organization(&self) -> OrganizationId {
        let org = Organization {
            id: OrganizationId::generate(),
            name: "Acme".into(),
            plan: Plan::Pro,
            created_at: at(0),
            updated_at: at(0),
        };
        SqlOrganizationStore::new(self.db.database.clone())
            .insert(&org, &[])
            .await
            .unwrap();
        org.id
    }

    async fn webhook(&self, organization: &OrganizationId, events: &[EventKind]) -> Webhook {
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
        self.webhooks
            .insert(&webhook, &audit(organization, "webhook.create"))
            .await
            .unwrap();
        webhook
    }

    /// A document of `organization` queued for processing, claimed by worker `w`.
    async fn claimed_file(&self, organization: &OrganizationId, name: &str) -> StoredFile {
        let file = StoredFile {
            id: FileId::generate(),
            organization: organization.clone(),
            created_by: "alice".into(),
            name: name.into(),
            format: FileFormat::from_file_name(name).unwrap(),
            size: 42,
            sha256: "a".repeat(64),
            status: FileStatus::Processing,
            progress: 0,
            error: None,
            chunk_count: 0,
            created_at: at(0),
            updated_at: at(0),
        };
        self.files
            .insert(&file, true, None, &audited(&file.organization))
            .await
            .unwrap();
        let job = self
            .files
            .claim_job("w", at(0), at(5))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(job.file.id, file.id);
        file
    }
}

async fn webhooks_read_back_within_their_organization(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let first = f.webhook(&acme, &[EventKind::FileReady]).await;
    let second = f
        .webhook(&acme, &[EventKind::FileFailed, EventKind::DatasetUpdated])
        .await;
    let foreign = f.webhook(&other, &[EventKind::FileReady]).await;
    assert_eq!(
        f.webhooks.get(&acme, &second.id).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(f.webhooks.get(&acme, &foreign.id).await.unwrap(), None);
    assert_eq!(
        f.webhooks.list(&acme, &page(1, None)).await.unwrap(),
        vec![second.clone(), first.clone()],
        "one over the limit, newest first"
    );
    assert_eq!(
        f.webhooks
            .list(&acme, &page(5, Some(second.id.clone())))
            .await
            .unwrap(),
        vec![first.clone()]
    );
    assert_eq!(f.webhooks.count(&acme).await.unwrap(), 2);
    assert!(
        !f.webhooks
            .delete(&acme, &foreign.id, &audit(&acme, "webhook.delete"))
            .await
            .unwrap()
    );
    assert!(
        f.webhooks
            .delete(&acme, &first.id, &audit(&acme, "webhook.delete"))
            .await
            .unwrap()
    );
    assert_eq!(f.webhooks.get(&acme, &first.id).await.unwrap(), None);
    assert_eq!(f.webhooks.count(&other).await.unwrap(), 1);
    f.db.destroy().await;
}

async fn state_changes_write_deliveries_for_subscribed_webhooks_only(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let ready_hook = f.webhook(&acme, &[EventKind::FileReady]).await;
    let all_hook = f.webhook(&acme, &EventKind::ALL).await;
    let foreign_hook = f.webhook(&other, &EventKind::ALL).await;

    let good = f.claimed_file(&acme, "good.md").await;
    assert!(
        f.files
            .complete_job("w", &[], &FileReady::of(&good, 0, at(1)))
            .await
            .unwrap()
    );
    let bad = f.claimed_file(&acme, "bad.pdf").await;
    assert!(
        f.files
            .fail_job("w", &FileFailed::of(&bad, "the PDF is encrypted", at(2)))
            .await
            .unwrap()
    );
    // A worker that lost its lease changes nothing and reports nothing.
    assert!(
        !f.files
            .complete_job("w", &[], &FileReady::of(&bad, 0, at(3)))
            .await
            .unwrap()
    );
    let dataset = Dataset {
        id: DatasetId::generate(),
        organization: acme.clone(),
        name: "Docs".into(),
        description: None,
        version: 1,
        file_count: 0,
        created_by: "alice".into(),
        created_at: at(0),
        updated_at: at(0),
    };
    f.datasets
        .insert(&dataset, &audited(&dataset.organization))
        .await
        .unwrap();
    f.datasets
        .add_file(&acme, &dataset.id, &good.id, at(4), &audited(&acme))
        .await
        .unwrap();
    // Adding it again changes nothing, so no event.
    f.datasets
        .add_file(&acme, &dataset.id, &good.id, at(5), &audited(&acme))
        .await
        .unwrap();
    f.datasets
        .remove_file(&acme, &dataset.id, &good.id, at(6), &audited(&acme))
        .await
        .unwrap();

    let ready_only = f
        .webhooks
        .deliveries(&acme, &ready_hook.id, &page(50, None))
        .await
        .unwrap();
    assert_eq!(ready_only.len(), 1);
    let everything = f
        .webhooks
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
        f.webhooks
            .count_deliveries(&acme, &all_hook.id)
            .await
            .unwrap(),
        4
    );
    assert!(
        f.webhooks
            .deliveries(&other, &foreign_hook.id, &page(50, None))
            .await
            .unwrap()
            .is_empty(),
        "another organization's events never reach its webhooks"
    );
    assert!(
        f.webhooks
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
    let body: serde_json::Value = serde_json::from_str(&ready_event.body).unwrap();
    assert_eq!(body["type"], "file.ready");
    assert_eq!(body["data"]["fileId"], good.id.as_str());
    assert_eq!(body["data"]["name"], "good.md");
    assert_eq!(body["createdAt"], "2026-11-01T00:01:00.000000Z");
    let failed = everything
        .iter()
        .find(|d| d.event == EventKind::FileFailed)
        .unwrap();
    let body: serde_json::Value = serde_json::from_str(&failed.body).unwrap();
    assert_eq!(body["data"]["error"], "the PDF is encrypted");
    let versions: Vec<serde_json::Value> = everything
        .iter()
        .rev()
        .filter(|d| d.event == EventKind::DatasetUpdated)
        .map(|d| serde_json::from_str::<serde_json::Value>(&d.body).unwrap()["data"].clone())
        .collect();
    assert_eq!(
        versions,
        [
            serde_json::json!({"datasetId": dataset.id.as_str(), "version": 2, "change": "file_added", "fileId": good.id.as_str()}),
            serde_json::json!({"datasetId": dataset.id.as_str(), "version": 3, "change": "file_removed", "fileId": good.id.as_str()}),
        ]
    );
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
        f.webhooks
            .delete(&acme, &all_hook.id, &audit(&acme, "webhook.delete"))
            .await
            .unwrap()
    );
    assert_eq!(
        f.webhooks
            .count_deliveries(&acme, &all_hook.id)
            .await
            .unwrap(),
        0
    );
    f.db.destroy().await;
}

async fn due_deliveries_are_claimed_once_retried_and_settled(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let hook = f.webhook(&acme, &[EventKind::FileReady]).await;
    let first = f.claimed_file(&acme, "one.md").await;
    assert!(
        f.files
            .complete_job("w", &[], &FileReady::of(&first, 0, at(1)))
            .await
            .unwrap()
    );

    assert_eq!(
        f.webhooks.claim_due("d1", at(0), at(2)).await.unwrap(),
        None,
        "not due yet"
    );
    let claimed = f
        .webhooks
        .claim_due("d1", at(1), at(2))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (claimed.url.as_str(), &claimed.secret),
        ("https://hooks.example.com/t", &hook.secret)
    );
    assert_eq!(claimed.delivery.attempts, 1);
    assert_eq!(
        f.webhooks.claim_due("d2", at(1), at(3)).await.unwrap(),
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
        !f.webhooks
            .record_attempt(&claimed.delivery.id, "d2", &retry)
            .await
            .unwrap()
    );
    assert!(
        f.webhooks
            .record_attempt(&claimed.delivery.id, "d1", &retry)
            .await
            .unwrap()
    );
    assert_eq!(
        f.webhooks.claim_due("d2", at(9), at(11)).await.unwrap(),
        None
    );
    let stored = &f
        .webhooks
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
    let again = f
        .webhooks
        .claim_due("d2", at(10), at(11))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (again.delivery.id.clone(), again.delivery.attempts),
        (claimed.delivery.id.clone(), 2)
    );
    let taken_over = f
        .webhooks
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
        !f.webhooks
            .record_attempt(&again.delivery.id, "d2", &delivered)
            .await
            .unwrap()
    );
    assert!(
        f.webhooks
            .record_attempt(&again.delivery.id, "d3", &delivered)
            .await
            .unwrap()
    );
    let stored = &f
        .webhooks
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
        f.webhooks.claim_due("d1", at(100), at(101)).await.unwrap(),
        None,
        "settled"
    );

    // Oldest due first; a delivery that failed for good is never claimed again.
    let second = f.claimed_file(&acme, "two.md").await;
    assert!(
        f.files
            .complete_job("w", &[], &FileReady::of(&second, 0, at(20)))
            .await
            .unwrap()
    );
    let third = f.claimed_file(&acme, "three.md").await;
    assert!(
        f.files
            .complete_job("w", &[], &FileReady::of(&third, 0, at(21)))
            .await
            .unwrap()
    );
    let next = f
        .webhooks
        .claim_due("d1", at(30), at(31))
        .await
        .unwrap()
        .unwrap();
    let body: serde_json::Value = serde_json::from_str(&next.delivery.body).unwrap();
    assert_eq!(body["data"]["fileId"], second.id.as_str());
    let failed = AttemptRecord {
        status: DeliveryStatus::Failed,
        status_code: None,
        error: Some("connection refused".into()),
        next_attempt_at: None,
        at: at(30),
    };
    assert!(
        f.webhooks
            .record_attempt(&next.delivery.id, "d1", &failed)
            .await
            .unwrap()
    );
    let last = f
        .webhooks
        .claim_due("d1", at(30), at(31))
        .await
        .unwrap()
        .unwrap();
    let body: serde_json::Value = serde_json::from_str(&last.delivery.body).unwrap();
    assert_eq!(body["data"]["fileId"], third.id.as_str());
    assert!(
        f.webhooks
            .record_attempt(&last.delivery.id, "d1", &failed)
            .await
            .unwrap()
    );
    assert_eq!(
        f.webhooks
            .claim_due("d1", at(1000), at(1001))
            .await
            .unwrap(),
        None
    );
    f.db.destroy().await;
}

/// The knowledge domain decides the events: a file stored ready (an image) is announced in
/// its insert's transaction when the domain hands the event over, and only then.
async fn a_file_stored_ready_is_announced_with_its_insert(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let hook = f.webhook(&acme, &[EventKind::FileReady]).await;
    let image = |name: &str| StoredFile {
        id: FileId::generate(),
        organization: acme.clone(),
        created_by: "alice".into(),
        name: name.into(),
        format: FileFormat::from_file_name(name).unwrap(),
        size: 42,
        sha256: "b".repeat(64),
        status: FileStatus::Ready,
        progress: 100,
        error: None,
        chunk_count: 0,
        created_at: at(1),
        updated_at: at(1),
    };
    let announced = image("photo.png");
    let ready = FileReady::of(&announced, 0, at(1));
    f.files
        .insert(&announced, false, Some(ready), &audited(&acme))
        .await
        .unwrap();
    let quiet = image("other.png");
    f.files
        .insert(&quiet, false, None, &audited(&acme))
        .await
        .unwrap();

    let deliveries = f
        .webhooks
        .deliveries(&acme, &hook.id, &page(50, None))
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 1);
    let body: serde_json::Value = serde_json::from_str(&deliveries[0].body).unwrap();
    assert_eq!(body["type"], "file.ready");
    assert_eq!(body["data"]["fileId"], announced.id.as_str());
    assert_eq!(body["data"]["name"], "photo.png");
    assert_eq!(body["data"]["chunkCount"], 0);
    f.db.destroy().await;
}

tessera_store::on_both_databases!(
    webhooks_read_back_within_their_organization,
    a_file_stored_ready_is_announced_with_its_insert,
    state_changes_write_deliveries_for_subscribed_webhooks_only,
    due_deliveries_are_claimed_once_retried_and_settled,
);
