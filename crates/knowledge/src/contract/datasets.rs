//! Datasets: versions and files, lists, updates, snapshots, and the files they hold.

use tessera_kernel::OrganizationId;

use super::{Fixture, KnowledgeStores, at, audited, dataset, is_not_found, page, stored_file};
use crate::{
    AttributeValue, Attributes, Dataset, DatasetFileCounts, DatasetId, FileBatch, FileBatchId,
    FileDeletion, FileId, FileReady, FileStatus, Metadata, StoredFile,
};

pub async fn datasets_count_versions_and_files(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
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
    let refused = f
        .datasets
        .add_file(&acme, &dataset.id, &foreign.id, at(4), &audited(&acme))
        .await;
    assert!(is_not_found(&refused, "file"), "{refused:?}");
    let refused = f
        .datasets
        .add_file(&other, &dataset.id, &foreign.id, at(4), &audited(&other))
        .await;
    assert!(is_not_found(&refused, "dataset"), "{refused:?}");
    let files = f
        .datasets
        .files(&acme, &dataset.id, None, &page(10, None))
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
}

/// Datasets, and a dataset's files, list newest first (by id) in keyset pages of one over
/// the limit, within the organization.
pub async fn dataset_lists_are_newest_first_in_keyset_pages(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let first = f.dataset(&acme, "First").await;
    let second = f.dataset(&acme, "Second").await;
    let third = f.dataset(&acme, "Third").await;
    f.dataset(&other, "Foreign").await;
    let ids = |datasets: Vec<Dataset>| -> Vec<DatasetId> {
        datasets.into_iter().map(|dataset| dataset.id).collect()
    };
    assert_eq!(
        ids(f.datasets.list(&acme, &page(2, None)).await.unwrap()),
        [third.id.clone(), second.id.clone(), first.id.clone()]
    );
    assert_eq!(
        ids(f
            .datasets
            .list(&acme, &page(1, Some(third.id.clone())))
            .await
            .unwrap()),
        [second.id.clone(), first.id.clone()]
    );
    assert!(
        f.datasets
            .list(&acme, &page(5, Some(first.id.clone())))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.datasets.count(&acme).await.unwrap(), 3);
    assert_eq!(f.datasets.count(&other).await.unwrap(), 1);

    let a = f.file(&acme, "a.md", 'a').await;
    let b = f.file(&acme, "b.md", 'b').await;
    let c = f.file(&acme, "c.md", 'c').await;
    for (minutes, file) in [(1, &a), (2, &b), (3, &c)] {
        f.datasets
            .add_file(&acme, &first.id, &file.id, at(minutes), &audited(&acme))
            .await
            .unwrap();
    }
    let (datasets, organization, dataset) = (&f.datasets, &acme, &first.id);
    let file_ids = |page| async move {
        let files = datasets
            .files(organization, dataset, None, &page)
            .await
            .unwrap();
        (files.into_iter())
            .map(|entry| (entry.file.id, entry.added_at))
            .collect::<Vec<(FileId, _)>>()
    };
    assert_eq!(
        file_ids(page(1, None)).await,
        [(c.id.clone(), at(3)), (b.id.clone(), at(2))]
    );
    assert_eq!(
        file_ids(page(5, Some(b.id.clone()))).await,
        [(a.id.clone(), at(1))]
    );
    assert!(
        f.datasets
            .files(&other, &first.id, None, &page(10, None))
            .await
            .unwrap()
            .is_empty(),
        "another organization sees none of its files"
    );
}

/// An update saves a dataset's name, description, metadata, expiry and time of update; its
/// version, files, author, creation and last activity stay.
pub async fn dataset_updates_save_name_and_description_only(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let dataset = f.dataset(&acme, "Handbook").await;
    let file = f.file(&acme, "a.md", 'a').await;
    f.datasets
        .add_file(&acme, &dataset.id, &file.id, at(1), &audited(&acme))
        .await
        .unwrap();
    let metadata = Metadata::trusted([("team".to_owned(), "docs".to_owned())].into());
    let renamed = Dataset {
        name: "Manual".into(),
        description: None,
        metadata: metadata.clone(),
        version: 9,
        file_count: 7,
        late_interaction: true,
        expires_after_days: Some(30),
        last_active_at: at(9),
        created_by: "mallory".into(),
        created_at: at(5),
        updated_at: at(6),
        ..dataset.clone()
    };
    assert!(f.datasets.update(&renamed, &audited(&acme)).await.unwrap());
    assert_eq!(
        f.datasets.get(&acme, &dataset.id).await.unwrap(),
        Some(Dataset {
            name: "Manual".into(),
            description: None,
            metadata,
            version: 2,
            file_count: 1,
            late_interaction: true,
            expires_after_days: Some(30),
            updated_at: at(6),
            ..dataset.clone()
        })
    );
    let unknown = Dataset {
        id: DatasetId::generate(),
        ..renamed
    };
    assert!(!f.datasets.update(&unknown, &audited(&acme)).await.unwrap());
    assert_eq!(f.datasets.get(&acme, &unknown.id).await.unwrap(), None);
}

/// A dataset keeps its expiry and its last activity as inserted; activity moves only
/// forward, only for the organization's dataset, and adding or removing files leaves it to
/// the caller (the service records activity at most once a minute).
pub async fn datasets_keep_their_expiry_and_activity_moves_forward(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let expiring = Dataset {
        expires_after_days: Some(365),
        last_active_at: at(2),
        ..dataset(&acme, "Scratch")
    };
    f.datasets.insert(&expiring, &audited(&acme)).await.unwrap();
    assert_eq!(
        f.datasets.get(&acme, &expiring.id).await.unwrap(),
        Some(expiring.clone())
    );
    let lasting = f.dataset(&acme, "Handbook").await;
    assert_eq!(
        f.datasets.get(&acme, &lasting.id).await.unwrap().unwrap(),
        lasting,
        "no expiry reads back as none"
    );

    assert!(f.datasets.touch(&acme, &expiring.id, at(60)).await.unwrap());
    let touched = f.datasets.get(&acme, &expiring.id).await.unwrap().unwrap();
    assert_eq!(
        (touched.last_active_at, touched.updated_at, touched.version),
        (at(60), expiring.updated_at, 1),
        "activity is not a change"
    );
    assert!(
        !f.datasets.touch(&acme, &expiring.id, at(30)).await.unwrap(),
        "never back"
    );
    assert!(
        !f.datasets
            .touch(&other, &expiring.id, at(90))
            .await
            .unwrap(),
        "not another organization's"
    );
    assert!(
        !f.datasets
            .touch(&acme, &DatasetId::generate(), at(90))
            .await
            .unwrap()
    );
    assert_eq!(
        f.datasets
            .get(&acme, &expiring.id)
            .await
            .unwrap()
            .unwrap()
            .last_active_at,
        at(60)
    );

    let file = f.file(&acme, "a.md", 'a').await;
    let (after, _) = f
        .datasets
        .add_file(&acme, &expiring.id, &file.id, at(61), &audited(&acme))
        .await
        .unwrap();
    assert_eq!(after.last_active_at, at(60));
    let (after, _) = f
        .datasets
        .remove_file(&acme, &expiring.id, &file.id, at(62), &audited(&acme))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.last_active_at, at(60));
    let listed = f.datasets.list(&acme, &page(10, None)).await.unwrap();
    let read = listed.iter().find(|d| d.id == expiring.id).unwrap();
    assert_eq!(
        (read.expires_after_days, read.last_active_at),
        (Some(365), at(60))
    );

    // Cleared by an update, and the expiry a dataset then has is none.
    let cleared = Dataset {
        expires_after_days: None,
        ..after
    };
    assert!(f.datasets.update(&cleared, &audited(&acme)).await.unwrap());
    let read = f.datasets.get(&acme, &expiring.id).await.unwrap().unwrap();
    assert_eq!((read.expires_after_days, read.expires_at()), (None, None));
}

pub async fn files_held_by_a_dataset_or_snapshot_are_not_deleted(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
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
}

/// A dataset's metadata reads back as saved; its files are counted by status with their
/// size, and one file is read as the dataset holds it, within the organization.
pub async fn datasets_keep_metadata_and_count_their_files_by_status(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let mut tagged = dataset(&acme, "Tagged");
    tagged.metadata = Metadata::trusted(
        [("team", "docs"), ("tier", "1")]
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .into(),
    );
    f.datasets.insert(&tagged, &audited(&acme)).await.unwrap();
    let read = f.datasets.get(&acme, &tagged.id).await.unwrap().unwrap();
    assert_eq!(read.metadata, tagged.metadata);
    assert_eq!(
        f.datasets.list(&acme, &page(10, None)).await.unwrap()[0].metadata,
        tagged.metadata
    );

    let processing = f.file(&acme, "a.md", 'a').await;
    let ready = StoredFile {
        status: FileStatus::Ready,
        progress: 100,
        size: 100,
        ..stored_file(&acme, "b.md", 'b')
    };
    f.files
        .insert(
            &ready,
            false,
            Some(FileReady::of(&ready, 0, at(0))),
            &audited(&acme),
        )
        .await
        .unwrap();
    let failed = StoredFile {
        status: FileStatus::Failed,
        error: Some("unreadable".into()),
        size: 1000,
        ..stored_file(&acme, "c.md", 'c')
    };
    f.files
        .insert(&failed, false, None, &audited(&acme))
        .await
        .unwrap();
    let outside = f.file(&acme, "d.md", 'd').await;
    for (minute, file) in [&processing, &ready, &failed].into_iter().enumerate() {
        f.datasets
            .add_file(
                &acme,
                &tagged.id,
                &file.id,
                at(minute as i64 + 1),
                &audited(&acme),
            )
            .await
            .unwrap();
    }
    assert_eq!(
        f.datasets
            .file_counts(&acme, &tagged.id, None)
            .await
            .unwrap(),
        Some(DatasetFileCounts {
            processing: 1,
            ready: 1,
            failed: 1,
            bytes: 42 + 100 + 1000,
        })
    );
    // Of some files only: those the dataset does not hold count nowhere.
    let some = [ready.id.clone(), outside.id.clone()];
    assert_eq!(
        f.datasets
            .file_counts(&acme, &tagged.id, Some(some.to_vec()))
            .await
            .unwrap(),
        Some(DatasetFileCounts {
            ready: 1,
            bytes: 100,
            ..DatasetFileCounts::default()
        })
    );
    let empty = f.dataset(&acme, "Empty").await;
    assert_eq!(
        f.datasets
            .file_counts(&acme, &empty.id, None)
            .await
            .unwrap(),
        Some(DatasetFileCounts::default())
    );
    assert_eq!(
        f.datasets
            .file_counts(&other, &tagged.id, None)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        f.datasets
            .file_counts(&acme, &DatasetId::generate(), None)
            .await
            .unwrap(),
        None
    );

    let held = f
        .datasets
        .dataset_file(&acme, &tagged.id, &ready.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((held.file, held.added_at), (ready.clone(), at(2)));
    for (organization, file) in [(&acme, &outside), (&other, &ready)] {
        assert_eq!(
            f.datasets
                .dataset_file(organization, &tagged.id, &file.id)
                .await
                .unwrap(),
            None
        );
    }
}

/// A file's attributes in a dataset are replaced and read back (with the file, in lists and
/// all at once), dropped with the file's removal, and never touched from another
/// organization or for a file the dataset does not hold.
pub async fn files_in_a_dataset_keep_their_attributes(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let dataset = f.dataset(&acme, "Handbook").await;
    let a = f.file(&acme, "a.md", 'a').await;
    let b = f.file(&acme, "b.md", 'b').await;
    for file in [&a, &b] {
        f.datasets
            .add_file(&acme, &dataset.id, &file.id, at(1), &audited(&acme))
            .await
            .unwrap();
    }
    let tagged = Attributes::trusted(
        [
            ("team".to_owned(), AttributeValue::Text("docs".into())),
            ("year".to_owned(), AttributeValue::Number(2024.5)),
            ("draft".to_owned(), AttributeValue::Bool(false)),
        ]
        .into(),
    );
    let set = async |organization: &OrganizationId, file: &FileId, attributes: &Attributes| {
        f.datasets
            .set_attributes(organization, &dataset.id, file, attributes)
            .await
            .unwrap()
    };
    assert!(set(&acme, &a.id, &tagged).await);
    assert!(!set(&other, &a.id, &Attributes::default()).await);
    let outside = f.file(&acme, "c.md", 'c').await;
    assert!(!set(&acme, &outside.id, &tagged).await);
    let held = f
        .datasets
        .dataset_file(&acme, &dataset.id, &a.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(held.attributes, tagged);
    let listed = f
        .datasets
        .files(&acme, &dataset.id, None, &page(10, None))
        .await
        .unwrap();
    let by_file: Vec<(FileId, Attributes)> = listed
        .into_iter()
        .map(|entry| (entry.file.id, entry.attributes))
        .collect();
    assert_eq!(
        by_file,
        vec![
            (b.id.clone(), Attributes::default()),
            (a.id.clone(), tagged.clone())
        ]
    );
    let mut all = f.datasets.attributes(&acme, &dataset.id).await.unwrap();
    all.sort_by(|left, right| left.0.as_str().cmp(right.0.as_str()));
    assert_eq!(
        all,
        vec![
            (a.id.clone(), tagged.clone()),
            (b.id.clone(), Attributes::default())
        ]
    );
    assert!(
        f.datasets
            .attributes(&other, &dataset.id)
            .await
            .unwrap()
            .is_empty()
    );

    // Cleared; set again, then the file leaves and comes back without them.
    assert!(set(&acme, &a.id, &Attributes::default()).await);
    let cleared = f
        .datasets
        .dataset_file(&acme, &dataset.id, &a.id)
        .await
        .unwrap();
    assert_eq!(
        cleared.map(|entry| entry.attributes),
        Some(Attributes::default())
    );
    assert!(set(&acme, &a.id, &tagged).await);
    f.datasets
        .remove_file(&acme, &dataset.id, &a.id, at(2), &audited(&acme))
        .await
        .unwrap();
    f.datasets
        .add_file(&acme, &dataset.id, &a.id, at(3), &audited(&acme))
        .await
        .unwrap();
    let back = f
        .datasets
        .dataset_file(&acme, &dataset.id, &a.id)
        .await
        .unwrap();
    assert_eq!(
        back.map(|entry| entry.attributes),
        Some(Attributes::default())
    );
}

/// A file batch reads back within its organization and dataset, is cancelled once (keeping
/// its first time), and goes with its dataset.
pub async fn file_batches_read_back_cancel_once_and_go_with_their_dataset(
    stores: &impl KnowledgeStores,
) {
    let f = Fixture::new(stores);
    let (acme, other) = (f.organization("Acme").await, f.organization("Globex").await);
    let dataset = f.dataset(&acme, "Handbook").await;
    let elsewhere = f.dataset(&acme, "Elsewhere").await;
    let (a, b) = (
        f.file(&acme, "a.md", 'a').await,
        f.file(&acme, "b.md", 'b').await,
    );
    let batch = FileBatch {
        id: FileBatchId::generate(),
        organization: acme.clone(),
        dataset: dataset.id.clone(),
        files: vec![b.id.clone(), a.id.clone()],
        created_at: at(1),
        cancelled_at: None,
    };
    f.datasets.insert_batch(&batch).await.unwrap();
    let read = |organization: &OrganizationId, dataset: &DatasetId| {
        let (datasets, organization, dataset, id) = (
            f.datasets.clone(),
            organization.clone(),
            dataset.clone(),
            batch.id.clone(),
        );
        async move { datasets.batch(&organization, &dataset, &id).await.unwrap() }
    };
    assert_eq!(read(&acme, &dataset.id).await, Some(batch.clone()));
    assert_eq!(read(&other, &dataset.id).await, None);
    assert_eq!(read(&acme, &elsewhere.id).await, None);

    let cancel = |organization: &OrganizationId, minute: i64| {
        let (datasets, organization, dataset, id) = (
            f.datasets.clone(),
            organization.clone(),
            dataset.id.clone(),
            batch.id.clone(),
        );
        async move {
            datasets
                .cancel_batch(&organization, &dataset, &id, at(minute))
                .await
                .unwrap()
        }
    };
    assert!(!cancel(&other, 2).await);
    assert_eq!(read(&acme, &dataset.id).await.unwrap().cancelled_at, None);
    assert!(cancel(&acme, 3).await);
    assert!(cancel(&acme, 4).await, "cancelling again is no error");
    assert_eq!(
        read(&acme, &dataset.id).await.unwrap().cancelled_at,
        Some(at(3))
    );

    f.datasets
        .delete(&acme, &dataset.id, &audited(&acme))
        .await
        .unwrap();
    assert_eq!(read(&acme, &dataset.id).await, None);
}
