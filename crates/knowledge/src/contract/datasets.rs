//! Datasets: versions and files, lists, updates, snapshots, and the files they hold.

use super::{Fixture, KnowledgeStores, at, audited, is_not_found, page};
use crate::{Dataset, DatasetId, FileDeletion, FileId};

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
        let files = datasets.files(organization, dataset, &page).await.unwrap();
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
            .files(&other, &first.id, &page(10, None))
            .await
            .unwrap()
            .is_empty(),
        "another organization sees none of its files"
    );
}

/// An update saves a dataset's name, description and time of update; its version, files,
/// author and creation stay.
pub async fn dataset_updates_save_name_and_description_only(stores: &impl KnowledgeStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let dataset = f.dataset(&acme, "Handbook").await;
    let file = f.file(&acme, "a.md", 'a').await;
    f.datasets
        .add_file(&acme, &dataset.id, &file.id, at(1), &audited(&acme))
        .await
        .unwrap();
    let renamed = Dataset {
        name: "Manual".into(),
        description: None,
        version: 9,
        file_count: 7,
        late_interaction: true,
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
            version: 2,
            file_count: 1,
            late_interaction: true,
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
