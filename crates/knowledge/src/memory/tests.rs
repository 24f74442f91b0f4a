//! What the contract suite cannot see (the SQL stores keep audit records in the audit log
//! and events in the webhook outbox): here, a change keeps its audit record and its event
//! exactly when it is made.

use tessera_kernel::{ActorKind, AuditRecord, OrganizationId};

use super::*;
// The suite's builders: the same files, datasets and chunks the contract checks use.
use crate::contract::{at, chunk, dataset, stored_file};
use crate::{
    DatasetChange, DatasetStore, FileDeletion, FileFormat, FileStatus, FileStore, StoredChunk,
};

fn record(organization: &OrganizationId, action: &str) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        action,
        "file",
        "x",
        at(0),
    )
}

fn actions(store: &InMemoryKnowledgeStore) -> Vec<String> {
    (store.audit_records().into_iter())
        .map(|record| record.action)
        .collect()
}

#[tokio::test]
async fn file_changes_keep_their_events_and_audit_records_only_when_made() {
    let store = InMemoryKnowledgeStore::new();
    let files: &dyn FileStore = &store;
    let acme = OrganizationId::generate();
    let refused = record(&acme, "refused");
    let file = stored_file(&acme, "a.md", 'a');
    files
        .insert(&file, true, None, &record(&acme, "file.create"))
        .await
        .unwrap();
    assert!(files.insert(&file, true, None, &refused).await.is_err());
    let image = StoredFile {
        id: FileId::generate(),
        name: "photo.png".into(),
        format: FileFormat::from_file_name("photo.png").unwrap(),
        status: FileStatus::Ready,
        progress: 100,
        ..file.clone()
    };
    let wrong = FileReady::of(&file, 0, at(1));
    assert!(
        files
            .insert(&image, false, Some(wrong), &refused)
            .await
            .is_err()
    );
    let image_ready = FileReady::of(&image, 0, at(1));
    files
        .insert(
            &image,
            false,
            Some(image_ready.clone()),
            &record(&acme, "image.create"),
        )
        .await
        .unwrap();

    files.claim_job("w1", at(1), at(3)).await.unwrap().unwrap();
    assert_eq!(store.last_job_error(&file.id), None);
    assert!(
        files
            .retry_job(&file.id, "w1", "embedder down", at(5))
            .await
            .unwrap()
    );
    assert_eq!(
        store.last_job_error(&file.id).as_deref(),
        Some("embedder down")
    );
    files.claim_job("w2", at(5), at(7)).await.unwrap().unwrap();
    let chunks: Vec<StoredChunk> = vec![chunk(0, "x")];
    assert!(
        !files
            .complete_job(
                "w1",
                &chunks,
                "test-model",
                0,
                &FileReady::of(&file, 1, at(6))
            )
            .await
            .unwrap()
    );
    let failed = FileFailed::of(&file, "encrypted", at(6));
    assert!(!files.fail_job("w1", &failed).await.unwrap());
    assert!(files.fail_job("w2", &failed).await.unwrap());
    assert_eq!(store.last_job_error(&file.id), None, "the job is gone");
    assert!(!files.fail_job("w2", &failed).await.unwrap());

    let other = OrganizationId::generate();
    assert_eq!(
        files
            .delete(&other, &file.id, &record(&other, "refused"))
            .await
            .unwrap(),
        FileDeletion::NotFound
    );
    assert!(matches!(
        files
            .delete(&acme, &file.id, &record(&acme, "file.delete"))
            .await
            .unwrap(),
        FileDeletion::Deleted { .. }
    ));

    assert_eq!(
        store.events(),
        [
            KnowledgeEvent::FileReady(image_ready),
            KnowledgeEvent::FileFailed(failed)
        ]
    );
    assert_eq!(
        actions(&store),
        ["file.create", "image.create", "file.delete"]
    );
}

#[tokio::test]
async fn dataset_changes_keep_their_events_and_audit_records_only_when_made() {
    let store = InMemoryKnowledgeStore::new();
    let (files, datasets): (&dyn FileStore, &dyn DatasetStore) = (&store, &store);
    let acme = OrganizationId::generate();
    let other = OrganizationId::generate();
    let refused = record(&acme, "refused");
    let file = stored_file(&acme, "a.md", 'a');
    files
        .insert(&file, false, None, &record(&acme, "file.create"))
        .await
        .unwrap();
    let handbook = dataset(&acme, "Handbook");
    datasets
        .insert(&handbook, &record(&acme, "dataset.create"))
        .await
        .unwrap();
    assert!(datasets.insert(&handbook, &refused).await.is_err());
    let id = &handbook.id;
    let added = record(&acme, "dataset.add");
    datasets
        .add_file(&acme, id, &file.id, at(1), &added)
        .await
        .unwrap();
    datasets
        .add_file(&acme, id, &file.id, at(2), &refused)
        .await
        .unwrap();
    assert!(
        datasets
            .add_file(&other, id, &file.id, at(2), &refused)
            .await
            .is_err()
    );
    // Held by the dataset: not deleted, and nothing recorded.
    assert!(matches!(
        files.delete(&acme, &file.id, &refused).await.unwrap(),
        FileDeletion::InUse(_)
    ));
    datasets
        .snapshot(&acme, id, at(3), &record(&acme, "dataset.snapshot"))
        .await
        .unwrap();
    datasets.snapshot(&acme, id, at(4), &refused).await.unwrap();
    let removed = record(&acme, "dataset.remove");
    datasets
        .remove_file(&acme, id, &file.id, at(5), &removed)
        .await
        .unwrap();
    datasets
        .remove_file(&acme, id, &file.id, at(6), &refused)
        .await
        .unwrap();
    let renamed = Dataset {
        name: "Manual".into(),
        ..handbook.clone()
    };
    assert!(
        datasets
            .update(&renamed, &record(&acme, "dataset.update"))
            .await
            .unwrap()
    );
    let foreign = Dataset {
        organization: other.clone(),
        ..renamed.clone()
    };
    assert!(!datasets.update(&foreign, &refused).await.unwrap());
    assert_eq!(datasets.delete(&other, id, &refused).await.unwrap(), None);
    assert_eq!(
        datasets
            .delete(&acme, id, &record(&acme, "dataset.delete"))
            .await
            .unwrap(),
        Some(Vec::new())
    );
    assert_eq!(datasets.delete(&acme, id, &refused).await.unwrap(), None);

    let change = |version, change, at| {
        KnowledgeEvent::DatasetUpdated(DatasetUpdated {
            organization: acme.clone(),
            dataset: id.clone(),
            version,
            change,
            file: file.id.clone(),
            at,
        })
    };
    assert_eq!(
        store.events(),
        [
            change(2, DatasetChange::FileAdded, at(1)),
            change(3, DatasetChange::FileRemoved, at(5)),
        ]
    );
    assert_eq!(
        actions(&store),
        [
            "file.create",
            "dataset.create",
            "dataset.add",
            "dataset.snapshot",
            "dataset.remove",
            "dataset.update",
            "dataset.delete"
        ]
    );
}
