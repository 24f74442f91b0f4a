//! The `FileStore` and `DatasetStore` contracts on SQLite and PostgreSQL: records, tenant
//! isolation, the processing queue (leases, retries, crash take-over, concurrent claims),
//! deletion refused while a dataset or snapshot holds a file, dataset versions, snapshots.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{collections::HashSet, sync::Arc};

use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest};
use tessera_knowledge::{
    ChunkLocation, Dataset, DatasetId, DatasetStore, FileDeletion, FileFailed, FileFilter,
    FileFormat, FileId, FileReady, FileStatus, FileStore, StoredChunk, StoredFile,
};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Backend, SqlDatasetStore, SqlFileStore, SqlOrganizationStore, testing::TestDatabase,
};

struct Fixture {
    files: Arc<SqlFileStore>,
    datasets: Arc<SqlDatasetStore>,
    db: TestDatabase,
}

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

fn at(minutes: i64) -> DateTime<Utc> {
    "2026-11-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::minutes(minutes)
}

impl Fixture {
    async fn new(backend: Backend) -> Self {
        let db = TestDatabase::of(backend).await;
        Self {
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

    /// A stored document (queued for processing) of `organization`.
    async fn file(&self, organization: &OrganizationId, name: &str, sha: char) -> StoredFile {
        let file = StoredFile {
            id: FileId::generate(),
            organization: organization.clone(),
            created_by: "alice".into(),
            name: name.into(),
            format: FileFormat::from_file_name(name).unwrap(),
            size: 42,
            sha256: sha.to_string().repeat(64),
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
        file
    }

    async fn dataset(&self, organization: &OrganizationId, name: &str) -> Dataset {
        let dataset = Dataset {
            id: DatasetId::generate(),
            organization: organization.clone(),
            name: name.into(),
            description: Some("handbooks".into()),
            version: 1,
            file_count: 0,
            created_by: "alice".into(),
            created_at: at(0),
            updated_at: at(0),
        };
        self.datasets
            .insert(&dataset, &audited(&dataset.organization))
            .await
            .unwrap();
        dataset
    }
}

fn chunk(ordinal: u32, text: &str) -> StoredChunk {
    StoredChunk {
        ordinal,
        text: text.into(),
        token_count: 3,
        location: ChunkLocation {
            page: Some(ordinal + 1),
            section: Some("Intro".into()),
            char_start: u64::from(ordinal) * 10,
            char_end: u64::from(ordinal) * 10 + 9,
        },
    }
}

fn page<K>(limit: i64, after: Option<K>) -> PageRequest<K> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after,
    }
}

async fn files_read_back_and_list_newest_first_within_the_organization(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let a = f.file(&acme, "a.pdf", 'a').await;
    let b = f.file(&acme, "b.md", 'b').await;
    let foreign = f.file(&other, "c.txt", 'c').await;
    assert_eq!(f.files.get(&acme, &a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(f.files.get(&acme, &foreign.id).await.unwrap(), None);
    let filter = FileFilter {
        organization: acme.clone(),
        status: None,
    };
    let listed = f.files.list(&filter, &page(1, None)).await.unwrap();
    assert_eq!(
        listed,
        vec![b.clone(), a.clone()],
        "one over the limit, newest first"
    );
    let rest = f
        .files
        .list(&filter, &page(10, Some(b.id.clone())))
        .await
        .unwrap();
    assert_eq!(rest, vec![a.clone()]);
    assert_eq!(f.files.count(&filter).await.unwrap(), 2);
    let ready = FileFilter {
        organization: acme.clone(),
        status: Some(FileStatus::Ready),
    };
    assert_eq!(f.files.count(&ready).await.unwrap(), 0);
    f.db.destroy().await;
}

/// A file stored ready announces itself: an event naming another file (or organization) is
/// refused, and nothing is stored.
async fn a_ready_event_must_name_the_file_it_is_stored_with(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let stored = f.file(&acme, "stored.md", 's').await;
    let image = StoredFile {
        id: FileId::generate(),
        name: "photo.png".into(),
        format: FileFormat::from_file_name("photo.png").unwrap(),
        status: FileStatus::Ready,
        progress: 100,
        ..stored.clone()
    };
    let elsewhere = StoredFile {
        organization: other.clone(),
        ..image.clone()
    };
    for ready in [
        FileReady::of(&stored, 0, at(1)),
        FileReady::of(&elsewhere, 0, at(1)),
    ] {
        let refused = f
            .files
            .insert(&image, false, Some(ready), &audited(&acme))
            .await;
        assert!(
            matches!(refused, Err(DomainError::Internal { .. })),
            "{refused:?}"
        );
        assert_eq!(f.files.get(&acme, &image.id).await.unwrap(), None);
    }
    let ready = FileReady::of(&image, 0, at(1));
    f.files
        .insert(&image, false, Some(ready), &audited(&acme))
        .await
        .unwrap();
    assert_eq!(f.files.get(&acme, &image.id).await.unwrap(), Some(image));
    f.db.destroy().await;
}

async fn jobs_are_claimed_once_processed_and_completed(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let file = f.file(&acme, "a.md", 'a').await;
    let job = f
        .files
        .claim_job("w1", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((job.file.id.clone(), job.attempt), (file.id.clone(), 1));
    assert_eq!(
        f.files.claim_job("w2", at(2), at(4)).await.unwrap(),
        None,
        "leased"
    );
    assert!(
        f.files
            .report_progress(&file.id, "w1", 40, at(2), at(5))
            .await
            .unwrap()
    );
    assert!(
        !f.files
            .report_progress(&file.id, "w2", 50, at(2), at(5))
            .await
            .unwrap()
    );
    assert_eq!(
        f.files
            .get(&acme, &file.id)
            .await
            .unwrap()
            .unwrap()
            .progress,
        40
    );
    let chunks = vec![chunk(0, "first"), chunk(1, "second")];
    assert!(
        !f.files
            .complete_job(
                "w2",
                &chunks,
                &FileReady::of(&file, u32::try_from(chunks.len()).unwrap(), at(3))
            )
            .await
            .unwrap()
    );
    assert!(
        f.files
            .complete_job(
                "w1",
                &chunks,
                &FileReady::of(&file, u32::try_from(chunks.len()).unwrap(), at(3))
            )
            .await
            .unwrap()
    );
    let done = f.files.get(&acme, &file.id).await.unwrap().unwrap();
    assert_eq!(
        (
            done.status,
            done.progress,
            done.chunk_count,
            done.updated_at
        ),
        (FileStatus::Ready, 100, 2, at(3))
    );
    assert_eq!(f.files.chunks(&acme, &file.id).await.unwrap(), chunks);
    let other = f.organization().await;
    assert!(f.files.chunks(&other, &file.id).await.unwrap().is_empty());
    assert_eq!(
        f.files.claim_job("w1", at(10), at(12)).await.unwrap(),
        None,
        "job gone"
    );
    f.db.destroy().await;
}

async fn a_crashed_workers_job_is_taken_over_when_its_lease_expires(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let file = f.file(&acme, "a.md", 'a').await;
    f.files
        .claim_job("crashed", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(f.files.claim_job("w2", at(2), at(4)).await.unwrap(), None);
    let job = f
        .files
        .claim_job("w2", at(3), at(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((job.file.id.clone(), job.attempt), (file.id.clone(), 2));
    // The crashed worker comes back: its lease is gone, so nothing it writes lands.
    assert!(
        !f.files
            .complete_job("crashed", &[chunk(0, "x")], &FileReady::of(&file, 1, at(4)))
            .await
            .unwrap()
    );
    assert!(
        !f.files
            .fail_job("crashed", &FileFailed::of(&file, "late", at(4)))
            .await
            .unwrap()
    );
    assert!(
        f.files
            .complete_job("w2", &[chunk(0, "y")], &FileReady::of(&file, 1, at(4)))
            .await
            .unwrap()
    );
    assert_eq!(
        f.files.chunks(&acme, &file.id).await.unwrap(),
        vec![chunk(0, "y")]
    );
    f.db.destroy().await;
}

async fn retried_jobs_wait_and_failed_jobs_end_failed(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let file = f.file(&acme, "a.md", 'a').await;
    f.files
        .claim_job("w1", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert!(
        f.files
            .retry_job(&file.id, "w1", "embedder down", at(10))
            .await
            .unwrap()
    );
    assert_eq!(
        f.files.claim_job("w1", at(9), at(11)).await.unwrap(),
        None,
        "not yet due"
    );
    let job = f
        .files
        .claim_job("w1", at(10), at(12))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.attempt, 2);
    assert!(
        f.files
            .fail_job(
                "w1",
                &FileFailed::of(&file, "the document is encrypted", at(11))
            )
            .await
            .unwrap()
    );
    let failed = f.files.get(&acme, &file.id).await.unwrap().unwrap();
    assert_eq!(failed.status, FileStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("the document is encrypted"));
    assert_eq!(f.files.claim_job("w1", at(20), at(22)).await.unwrap(), None);
    f.db.destroy().await;
}

async fn concurrent_workers_never_share_a_job(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let mut queued = HashSet::new();
    for index in 0..12 {
        let sha = char::from(b'a' + index);
        queued.insert(f.file(&acme, &format!("f{index}.txt"), sha).await.id);
    }
    let mut workers = Vec::new();
    for worker in 0..4 {
        let files = f.files.clone();
        workers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(job) = files
                .claim_job(&format!("w{worker}"), at(1), at(30))
                .await
                .unwrap()
            {
                mine.push(job.file.id);
            }
            mine
        }));
    }
    let mut claimed = Vec::new();
    for worker in workers {
        claimed.extend(worker.await.unwrap());
    }
    assert_eq!(
        claimed.len(),
        12,
        "every job claimed exactly once: {claimed:?}"
    );
    assert_eq!(claimed.into_iter().collect::<HashSet<_>>(), queued);
    f.db.destroy().await;
}

async fn datasets_count_versions_and_files(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let dataset = f.dataset(&acme, "Handbook").await;
    let a = f.file(&acme, "a.md", 'a').await;
    let b = f.file(&acme, "b.md", 'b').await;
    let foreign = f.file(&other, "c.md", 'c').await;

    let (after, added) = f
        .datasets
        .add_file(&acme, &dataset.id, &a.id, at(1), &audited(&acme))
        .await
        .unwrap();
    assert!(added);
    assert_eq!(
        (after.version, after.file_count, after.updated_at),
        (2, 1, at(1))
    );
    let (again, added) = f
        .datasets
        .add_file(&acme, &dataset.id, &a.id, at(2), &audited(&acme))
        .await
        .unwrap();
    assert!(!added, "adding twice changes nothing");
    assert_eq!(again.version, 2);
    f.datasets
        .add_file(&acme, &dataset.id, &b.id, at(3), &audited(&acme))
        .await
        .unwrap();
    assert!(matches!(
        f.datasets
            .add_file(&acme, &dataset.id, &foreign.id, at(4), &audited(&acme))
            .await,
        Err(DomainError::NotFound {
            resource: "file",
            ..
        })
    ));
    assert!(matches!(
        f.datasets
            .add_file(&other, &dataset.id, &foreign.id, at(4), &audited(&other))
            .await,
        Err(DomainError::NotFound {
            resource: "dataset",
            ..
        })
    ));
    let files = f
        .datasets
        .files(&acme, &dataset.id, &page(10, None))
        .await
        .unwrap();
    let ids: Vec<_> = files.iter().map(|entry| entry.file.id.clone()).collect();
    assert_eq!(ids, vec![b.id.clone(), a.id.clone()]);
    assert_eq!(files[1].added_at, at(1));
    assert_eq!(
        f.files.datasets_of(&acme, &a.id).await.unwrap(),
        vec![dataset.id.clone()]
    );

    let (removed, was_there) = f
        .datasets
        .remove_file(&acme, &dataset.id, &a.id, at(5), &audited(&acme))
        .await
        .unwrap()
        .unwrap();
    assert!(was_there);
    assert_eq!((removed.version, removed.file_count), (4, 1));
    let (_, was_there) = f
        .datasets
        .remove_file(&acme, &dataset.id, &a.id, at(6), &audited(&acme))
        .await
        .unwrap()
        .unwrap();
    assert!(!was_there);
    assert_eq!(
        f.datasets
            .remove_file(&other, &dataset.id, &b.id, at(6), &audited(&other))
            .await
            .unwrap(),
        None
    );

    let listed = f.datasets.list(&acme, &page(10, None)).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].version, listed[0].file_count), (4, 1));
    assert!(
        f.datasets
            .list(&other, &page(10, None))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.datasets.get(&other, &dataset.id).await.unwrap(), None);
    f.db.destroy().await;
}

async fn files_held_by_a_dataset_or_snapshot_are_not_deleted(backend: Backend) {
    let f = Fixture::new(backend).await;
    let acme = f.organization().await;
    let dataset = f.dataset(&acme, "Handbook").await;
    let a = f.file(&acme, "a.md", 'a').await;
    let twin = f.file(&acme, "copy-of-a.md", 'a').await;
    f.datasets
        .add_file(&acme, &dataset.id, &a.id, at(1), &audited(&acme))
        .await
        .unwrap();
    let FileDeletion::InUse(references) =
        f.files.delete(&acme, &a.id, &audited(&acme)).await.unwrap()
    else {
        panic!("a file in a dataset was deleted");
    };
    assert_eq!(references.len(), 1);
    assert_eq!(
        (
            references[0].dataset_name.as_str(),
            references[0].snapshot_version
        ),
        ("Handbook", None)
    );

    let snapshot = f
        .datasets
        .snapshot(&acme, &dataset.id, at(2), &audited(&acme))
        .await
        .unwrap();
    assert_eq!(snapshot.version, 2);
    assert_eq!(snapshot.files, vec![(a.id.clone(), a.sha256.clone())]);
    let same = f
        .datasets
        .snapshot(&acme, &dataset.id, at(3), &audited(&acme))
        .await
        .unwrap();
    assert_eq!(same, snapshot, "a version is frozen once");
    f.datasets
        .remove_file(&acme, &dataset.id, &a.id, at(4), &audited(&acme))
        .await
        .unwrap();
    let FileDeletion::InUse(references) =
        f.files.delete(&acme, &a.id, &audited(&acme)).await.unwrap()
    else {
        panic!("a file in a snapshot was deleted");
    };
    assert_eq!(references[0].snapshot_version, Some(2));
    let empty = f
        .datasets
        .snapshot(&acme, &dataset.id, at(5), &audited(&acme))
        .await
        .unwrap();
    assert_eq!((empty.version, empty.files.len()), (3, 0));
    let all = f.datasets.snapshots(&acme, &dataset.id).await.unwrap();
    assert_eq!(all, vec![empty, snapshot]);

    // Deleting the dataset drops its snapshots; then the file goes, its twin keeps the blob.
    let held = f
        .datasets
        .delete(&acme, &dataset.id, &audited(&acme))
        .await
        .unwrap()
        .unwrap();
    assert!(held.is_empty());
    assert_eq!(
        f.files.delete(&acme, &a.id, &audited(&acme)).await.unwrap(),
        FileDeletion::Deleted {
            orphaned_blob: None
        }
    );
    assert_eq!(
        f.files
            .delete(&acme, &twin.id, &audited(&acme))
            .await
            .unwrap(),
        FileDeletion::Deleted {
            orphaned_blob: Some(twin.sha256.clone())
        }
    );
    assert_eq!(
        f.files
            .delete(&acme, &twin.id, &audited(&acme))
            .await
            .unwrap(),
        FileDeletion::NotFound
    );
    assert_eq!(
        f.datasets
            .delete(&acme, &dataset.id, &audited(&acme))
            .await
            .unwrap(),
        None
    );
    f.db.destroy().await;
}

async fn another_organization_cannot_touch_files_or_datasets(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (acme, other) = (f.organization().await, f.organization().await);
    let file = f.file(&acme, "a.md", 'a').await;
    let dataset = f.dataset(&acme, "Handbook").await;
    assert_eq!(
        f.files
            .delete(&other, &file.id, &audited(&other))
            .await
            .unwrap(),
        FileDeletion::NotFound
    );
    assert_eq!(
        f.datasets
            .delete(&other, &dataset.id, &audited(&other))
            .await
            .unwrap(),
        None
    );
    let mut renamed = dataset.clone();
    renamed.organization = other.clone();
    renamed.name = "Stolen".into();
    assert!(
        !f.datasets
            .update(&renamed, &audited(&renamed.organization))
            .await
            .unwrap()
    );
    assert!(matches!(
        f.datasets
            .snapshot(&other, &dataset.id, at(1), &audited(&other))
            .await,
        Err(DomainError::NotFound { .. })
    ));
    assert!(
        f.datasets
            .snapshots(&other, &dataset.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(f.files.get(&acme, &file.id).await.unwrap().is_some());
    f.db.destroy().await;
}

tessera_store::on_both_databases!(
    files_read_back_and_list_newest_first_within_the_organization,
    a_ready_event_must_name_the_file_it_is_stored_with,
    jobs_are_claimed_once_processed_and_completed,
    a_crashed_workers_job_is_taken_over_when_its_lease_expires,
    retried_jobs_wait_and_failed_jobs_end_failed,
    concurrent_workers_never_share_a_job,
    datasets_count_versions_and_files,
    files_held_by_a_dataset_or_snapshot_are_not_deleted,
    another_organization_cannot_touch_files_or_datasets,
);
