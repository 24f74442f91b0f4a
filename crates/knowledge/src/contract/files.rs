//! File records: reading back, lists, purposes, the ready event of a file stored ready,
//! deletion and tenant isolation.

use tessera_kernel::DomainError;

use super::{
    Fixture, KnowledgeStores, at, audited, chunk, is_conflict, is_internal, page, stored_file,
};
use crate::{
    Dataset, FileDeletion, FileFilter, FileFormat, FileId, FilePurpose, FileReady, FileStatus,
    StoredFile,
};

pub async fn files_read_back_and_list_newest_first_within_the_organization(
    stores: &impl KnowledgeStores,
) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let a = f.file(&acme, "a.pdf", 'a').await;
    let b = f.file(&acme, "b.md", 'b').await;
    let foreign = f.file(&other, "c.txt", 'c').await;
    assert_eq!(f.files.get(&acme, &a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(f.files.get(&acme, &foreign.id).await.unwrap(), None);
    let filter = FileFilter {
        organization: acme.clone(),
        status: None,
        purpose: None,
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
        purpose: None,
    };
    assert_eq!(f.files.count(&ready).await.unwrap(), 0);
}

/// A file stored ready announces itself: an event naming another file (or organization) is
/// refused, and nothing is stored.
pub async fn a_ready_event_must_name_the_file_it_is_stored_with(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
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
        assert!(is_internal(&refused), "{refused:?}");
        assert_eq!(f.files.get(&acme, &image.id).await.unwrap(), None);
    }
    let ready = FileReady::of(&image, 0, at(1));
    f.files
        .insert(&image, false, Some(ready), &audited(&acme))
        .await
        .unwrap();
    assert_eq!(f.files.get(&acme, &image.id).await.unwrap(), Some(image));
}

/// A file or dataset id is taken once: storing another record under it is a conflict that
/// leaves the first record (and its one processing job) as it was.
pub async fn duplicate_file_and_dataset_ids_are_refused(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let file = f.file(&acme, "a.md", 'a').await;
    let twin = StoredFile {
        name: "b.md".into(),
        sha256: "b".repeat(64),
        ..file.clone()
    };
    let refused = f.files.insert(&twin, true, None, &audited(&acme)).await;
    assert!(is_conflict(&refused), "{refused:?}");
    assert_eq!(f.stored(&file).await, file);
    let job = f
        .files
        .claim_job("w1", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((job.file, job.attempt), (file.clone(), 1));
    assert_eq!(
        f.files
            .claim_job("w2", at(4), at(6))
            .await
            .unwrap()
            .map(|job| job.attempt),
        Some(2),
        "the one job, taken over: none was queued for the refused file"
    );

    let dataset = f.dataset(&acme, "Handbook").await;
    let twin = Dataset {
        name: "Manual".into(),
        ..dataset.clone()
    };
    let refused = f.datasets.insert(&twin, &audited(&acme)).await;
    assert!(is_conflict(&refused), "{refused:?}");
    assert_eq!(
        f.datasets.get(&acme, &dataset.id).await.unwrap(),
        Some(dataset)
    );
}

/// A deleted file takes its chunks and its processing job with it.
pub async fn deleting_a_file_drops_its_chunks_and_its_job(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let done = f.file(&acme, "done.md", 'd').await;
    let waiting = f.file(&acme, "waiting.md", 'w').await;
    let job = f
        .files
        .claim_job("w1", at(1), at(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.file.id, done.id, "the first of two jobs due at once");
    let chunks = [chunk(0, "first"), chunk(1, "second")];
    assert!(
        f.files
            .complete_job(
                "w1",
                &chunks,
                "test-model",
                0,
                &FileReady::of(&done, 2, at(2))
            )
            .await
            .unwrap()
    );
    assert_eq!(f.files.chunks(&acme, &done.id).await.unwrap(), chunks);
    assert_eq!(
        f.files
            .delete(&acme, &done.id, &audited(&acme))
            .await
            .unwrap(),
        FileDeletion::Deleted {
            orphaned_blob: Some(done.sha256.clone())
        }
    );
    assert_eq!(f.files.get(&acme, &done.id).await.unwrap(), None);
    assert!(f.files.chunks(&acme, &done.id).await.unwrap().is_empty());

    assert_eq!(
        f.files
            .delete(&acme, &waiting.id, &audited(&acme))
            .await
            .unwrap(),
        FileDeletion::Deleted {
            orphaned_blob: Some(waiting.sha256.clone())
        }
    );
    assert_eq!(
        f.files.claim_job("w1", at(4), at(6)).await.unwrap(),
        None,
        "the waiting file's job went with it"
    );
    let all = FileFilter {
        organization: acme.clone(),
        status: None,
        purpose: None,
    };
    assert_eq!(f.files.count(&all).await.unwrap(), 0);
    assert!(
        f.files
            .list(&all, &page(10, None))
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn another_organization_cannot_touch_files_or_datasets(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
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
    assert_eq!(
        f.datasets.get(&acme, &dataset.id).await.unwrap(),
        Some(dataset),
        "neither renamed nor deleted"
    );
}

/// A file keeps the purpose it was stored or marked with; lists filter by it, files without
/// one counting as `assistants`; another organization cannot mark it.
pub async fn files_keep_their_purpose_and_lists_filter_by_it(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let plain = f.file(&acme, "plain.md", 'a').await;
    let input = StoredFile {
        purpose: Some(FilePurpose::UserData),
        ..stored_file(&acme, "input.md", 'b')
    };
    f.queue(&input).await;
    let later = f.file(&acme, "later.md", 'c').await;
    assert_eq!(f.stored(&input).await.purpose, Some(FilePurpose::UserData));
    assert!(
        f.files
            .set_purpose(&acme, &later.id, FilePurpose::UserData)
            .await
            .unwrap()
    );
    assert!(
        !f.files
            .set_purpose(&other, &plain.id, FilePurpose::UserData)
            .await
            .unwrap()
    );
    assert!(
        !f.files
            .set_purpose(&acme, &FileId::generate(), FilePurpose::Assistants)
            .await
            .unwrap()
    );
    assert_eq!(f.stored(&plain).await.purpose, None);
    let of = |purpose| FileFilter {
        organization: acme.clone(),
        status: None,
        purpose: Some(purpose),
    };
    for (purpose, expected) in [
        (
            FilePurpose::UserData,
            vec![later.id.clone(), input.id.clone()],
        ),
        (FilePurpose::Assistants, vec![plain.id.clone()]),
    ] {
        let listed: Vec<FileId> = f
            .files
            .list(&of(purpose), &page(10, None))
            .await
            .unwrap()
            .into_iter()
            .map(|file| file.id)
            .collect();
        assert_eq!(listed, expected, "{purpose:?}");
        assert_eq!(
            f.files.count(&of(purpose)).await.unwrap(),
            expected.len() as u64
        );
    }
}

/// A file marked for batches after it was queued is not processed: its job is dropped and
/// it is ready as stored, so no worker claims it.
pub async fn a_file_marked_for_batches_leaves_the_processing_queue(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let input = f.file(&acme, "requests.jsonl", 'd').await;
    assert!(
        f.files
            .set_purpose(&acme, &input.id, FilePurpose::Batch)
            .await
            .unwrap()
    );
    let stored = f.stored(&input).await;
    assert_eq!(
        (
            stored.purpose,
            stored.status,
            stored.progress,
            stored.chunk_count
        ),
        (Some(FilePurpose::Batch), FileStatus::Ready, 100, 0)
    );
    assert!(
        f.files
            .claim_job("w1", at(1), at(3))
            .await
            .unwrap()
            .is_none()
    );
}
