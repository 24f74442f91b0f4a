//! The `WebhookStore` contract (`tessera_webhooks::contract`, also run against the
//! in-memory reference) on SQLite and PostgreSQL, its events announced through the
//! knowledge stores that write the outbox; and what only the SQL stores can show: the
//! transactions that make events happen (file ready or failed, dataset content changes)
//! write exactly the events of the changes they commit, and nothing for changes they do
//! not make.
#![cfg(feature = "knowledge")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{AuditRecord, OrganizationId};
use tessera_knowledge::{
    Dataset, DatasetId, DatasetStore, FileFailed, FileFormat, FileId, FileReady, FileStatus,
    FileStore, StoredFile,
};
use tessera_store::{
    Backend, Database, SqlDatasetStore, SqlFileStore, SqlWebhookStore,
    testing::{TestDatabase, store_organization},
};
use tessera_webhooks::{
    Event, EventKind, Webhook, WebhookId, WebhookSecret, WebhookStore,
    contract::{WebhookStores, at, audit, page},
};

/// The worker that claims the processing job of a file announced failed.
const ANNOUNCER: &str = "announcer";

/// A webhook store over one database, with the knowledge stores that write its outbox.
struct SqlStores {
    webhooks: Arc<SqlWebhookStore>,
    files: Arc<SqlFileStore>,
    datasets: Arc<SqlDatasetStore>,
    database: Database,
}

/// An audit record of a change in `organization` (what the knowledge services pass).
fn audited(organization: &OrganizationId) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        tessera_kernel::ActorKind::Operator,
        "ops",
        "dataset.update",
        "dataset",
        "ds_x",
        Utc::now(),
    )
}

/// A file of `organization` named `name`, created at `created_at`.
fn stored_file(
    organization: &OrganizationId,
    id: FileId,
    name: &str,
    status: FileStatus,
    created_at: DateTime<Utc>,
) -> StoredFile {
    StoredFile {
        id,
        organization: organization.clone(),
        created_by: "alice".into(),
        name: name.into(),
        format: FileFormat::from_file_name(name).unwrap(),
        size: 42,
        sha256: "a".repeat(64),
        status,
        progress: if status == FileStatus::Ready { 100 } else { 0 },
        error: None,
        chunk_count: 0,
        created_at,
        updated_at: created_at,
        purpose: None,
        chunking: None,
    }
}

/// The text field `key` of an event's data.
fn text(event: &Event, key: &str) -> String {
    event.data[key]
        .as_str()
        .unwrap_or_else(|| panic!("{} without {key}: {}", event.kind.as_str(), event.data))
        .to_owned()
}

#[async_trait]
impl WebhookStores for SqlStores {
    fn store(&self) -> Arc<dyn WebhookStore> {
        self.webhooks.clone()
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }

    /// Makes the change the event reports through the knowledge stores, which record it in
    /// the outbox (under an event id of their own): a file stored ready, a file whose
    /// processing job fails, a file added to or removed from a dataset (created at the
    /// version before the event's).
    async fn announce(&self, event: &Event) {
        let organization = &event.organization;
        let file: FileId = text(event, "fileId").parse().unwrap();
        match event.kind {
            EventKind::FileReady => {
                let name = text(event, "name");
                let chunk_count = event.data["chunkCount"].as_u64().unwrap();
                let stored = stored_file(
                    organization,
                    file,
                    &name,
                    FileStatus::Ready,
                    event.created_at,
                );
                let ready = FileReady {
                    chunk_count: u32::try_from(chunk_count).unwrap(),
                    ..FileReady::of(&stored, 0, event.created_at)
                };
                self.files
                    .insert(&stored, false, Some(ready), &audited(organization))
                    .await
                    .unwrap();
            }
            EventKind::FileFailed => {
                let name = text(event, "name");
                let stored = stored_file(
                    organization,
                    file,
                    &name,
                    FileStatus::Processing,
                    event.created_at,
                );
                self.files
                    .insert(&stored, true, None, &audited(organization))
                    .await
                    .unwrap();
                let until = event.created_at + Duration::minutes(1);
                let job = self
                    .files
                    .claim_job(ANNOUNCER, event.created_at, until)
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(job.file.id, stored.id);
                let failed = FileFailed::of(&stored, &text(event, "error"), event.created_at);
                assert!(self.files.fail_job(ANNOUNCER, &failed).await.unwrap());
            }
            EventKind::DatasetUpdated => {
                let dataset: DatasetId = text(event, "datasetId").parse().unwrap();
                let version = event.data["version"].as_u64().unwrap();
                let at = event.created_at;
                if self
                    .datasets
                    .get(organization, &dataset)
                    .await
                    .unwrap()
                    .is_none()
                {
                    let new = Dataset {
                        id: dataset.clone(),
                        organization: organization.clone(),
                        name: "Docs".into(),
                        description: None,
                        version: version - 1,
                        file_count: 0,
                        late_interaction: false,
                        created_by: "alice".into(),
                        created_at: at,
                        updated_at: at,
                        metadata: Default::default(),
                        expires_after_days: None,
                        last_active_at: at,
                    };
                    self.datasets
                        .insert(&new, &audited(organization))
                        .await
                        .unwrap();
                }
                let audit = audited(organization);
                let (changed, changed_it) = match text(event, "change").as_str() {
                    "file_added" => self
                        .datasets
                        .add_file(organization, &dataset, &file, at, &audit)
                        .await
                        .unwrap(),
                    "file_removed" => self
                        .datasets
                        .remove_file(organization, &dataset, &file, at, &audit)
                        .await
                        .unwrap()
                        .unwrap(),
                    other => panic!("no dataset change {other}"),
                };
                assert!(changed_it, "{} changed nothing", event.data);
                assert_eq!(changed.version, version, "{}", event.data);
            }
        }
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_store(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        webhooks: Arc::new(SqlWebhookStore::new(db.database.clone())),
        files: Arc::new(SqlFileStore::new(db.database.clone())),
        datasets: Arc::new(SqlDatasetStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_webhooks::webhook_store_contract!(|| super::sql_store(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_webhooks::webhook_store_contract!(|| super::sql_store(
        tessera_store::Backend::Postgres
    ));
}

impl SqlStores {
    async fn organization(&self) -> OrganizationId {
        let id = OrganizationId::generate();
        self.organization_exists(&id, "Acme").await;
        id
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
        let file = stored_file(
            organization,
            FileId::generate(),
            name,
            FileStatus::Processing,
            at(0),
        );
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

/// The knowledge stores decide the events of their changes and write them in the change's
/// transaction: a finished or failed job, a file added to or removed from a dataset; a
/// worker that lost its lease, or an addition that changes nothing, reports nothing.
async fn state_changes_write_the_events_of_what_they_change(backend: Backend) {
    let (f, db) = sql_store(backend).await;
    let acme = f.organization().await;
    let ready_hook = f.webhook(&acme, &[EventKind::FileReady]).await;
    let all_hook = f.webhook(&acme, &EventKind::ALL).await;

    let good = f.claimed_file(&acme, "good.md").await;
    assert!(
        f.files
            .complete_job("w", &[], "test-model", 0, &FileReady::of(&good, 0, at(1)))
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
            .complete_job("w", &[], "test-model", 0, &FileReady::of(&bad, 0, at(3)))
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
        late_interaction: false,
        created_by: "alice".into(),
        created_at: at(0),
        updated_at: at(0),
        metadata: Default::default(),
        expires_after_days: None,
        last_active_at: at(0),
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
    let body: serde_json::Value = serde_json::from_str(&ready_only[0].body).unwrap();
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
    db.destroy().await;
}

/// The knowledge domain decides the events: a file stored ready (an image) is announced in
/// its insert's transaction when the domain hands the event over, and only then.
async fn a_file_stored_ready_is_announced_with_its_insert(backend: Backend) {
    let (f, db) = sql_store(backend).await;
    let acme = f.organization().await;
    let hook = f.webhook(&acme, &[EventKind::FileReady]).await;
    let image = |name: &str| StoredFile {
        sha256: "b".repeat(64),
        ..stored_file(&acme, FileId::generate(), name, FileStatus::Ready, at(1))
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
    db.destroy().await;
}

tessera_store::on_both_databases!(
    a_file_stored_ready_is_announced_with_its_insert,
    state_changes_write_the_events_of_what_they_change,
);
