//! What a search may see and what changes it: organizations, datasets and files scope
//! every search; `set_datasets`, `delete_file` and a repeated upsert change what is found;
//! vectors of the wrong width are refused; concurrent searches and upserts all succeed.

use std::sync::Arc;

use tessera_kernel::OrganizationId;

use super::{
    DIMENSIONS, FILLER, IndexUnderTest, basis, chunk, filler_file, keys, location, pseudo_random,
    query,
};
use crate::{DatasetId, FileId, IndexError};

/// Two organizations with identical data (even identical ids) each see only their own
/// chunks, and changing one's file leaves the other's alone.
pub async fn organizations_are_isolated(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let (a, b) = (OrganizationId::generate(), OrganizationId::generate());
    let ds = DatasetId::generate();
    let file = FileId::generate();
    for org in [&a, &b] {
        index
            .upsert(vec![chunk(
                org,
                &file,
                0,
                std::slice::from_ref(&ds),
                "shared secret plan",
                basis(1),
            )])
            .await
            .expect("upsert");
    }
    index
        .upsert(vec![chunk(
            &a,
            &file,
            1,
            std::slice::from_ref(&ds),
            "only in a",
            basis(2),
        )])
        .await
        .expect("upsert");

    let hits_a = index
        .search(query(&a, Some(&ds), "secret", basis(1)))
        .await
        .expect("search");
    let hits_b = index
        .search(query(&b, Some(&ds), "secret", basis(1)))
        .await
        .expect("search");
    assert_eq!(keys(&hits_a).len(), 2);
    assert_eq!(keys(&hits_b), vec![(file.clone(), 0)]);

    let stranger = OrganizationId::generate();
    let none = index
        .search(query(&stranger, Some(&ds), "secret", basis(1)))
        .await
        .expect("search");
    assert!(none.is_empty());

    index
        .set_datasets(&a, &file, Vec::new())
        .await
        .expect("set datasets");
    index
        .delete_file(&b, &FileId::generate())
        .await
        .expect("delete other");
    assert!(
        index
            .search(query(&a, Some(&ds), "secret", basis(1)))
            .await
            .expect("search")
            .is_empty()
    );
    assert_eq!(
        keys(
            &index
                .search(query(&b, Some(&ds), "secret", basis(1)))
                .await
                .expect("search")
        ),
        vec![(file.clone(), 0)]
    );
    index.delete_file(&b, &file).await.expect("delete");
    assert!(
        index
            .search(query(&b, Some(&ds), "secret", basis(1)))
            .await
            .expect("search")
            .is_empty()
    );
    let mut in_a = query(&a, None, "secret", basis(1));
    in_a.files = Some(vec![file.clone()]);
    assert_eq!(
        index.search(in_a).await.expect("search").len(),
        2,
        "a's chunks survive"
    );
}

/// A file is found through the datasets it is in now: after `set_datasets` to [A, B] through
/// both, after [] through none.
pub async fn dataset_filter_follows_set_datasets(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let (ds_a, ds_b) = (DatasetId::generate(), DatasetId::generate());
    let file = filler_file(index, &org, std::slice::from_ref(&ds_a)).await;
    let search = |ds: &DatasetId| index.search(query(&org, Some(ds), "report", basis(0)));

    assert_eq!(search(&ds_a).await.expect("search").len(), FILLER.len());
    assert!(search(&ds_b).await.expect("search").is_empty());

    index
        .set_datasets(&org, &file, vec![ds_a.clone(), ds_b.clone()])
        .await
        .expect("set");
    assert_eq!(search(&ds_a).await.expect("search").len(), FILLER.len());
    let hits = search(&ds_b).await.expect("search");
    assert_eq!(hits.len(), FILLER.len());
    assert_eq!(
        hits[0].text, FILLER[0],
        "payload other than datasets is kept"
    );
    assert_eq!(hits[0].location, location(0));

    index
        .set_datasets(&org, &file, vec![ds_b.clone()])
        .await
        .expect("set");
    assert!(search(&ds_a).await.expect("search").is_empty());
    assert_eq!(search(&ds_b).await.expect("search").len(), FILLER.len());

    index
        .set_datasets(&org, &file, Vec::new())
        .await
        .expect("set");
    assert!(search(&ds_a).await.expect("search").is_empty());
    assert!(search(&ds_b).await.expect("search").is_empty());
}

/// `files` limits hits to those files, within a dataset or (without one) whatever datasets
/// the files are in; an empty list finds nothing.
pub async fn file_filter_limits_to_the_given_files(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let one = filler_file(index, &org, std::slice::from_ref(&ds)).await;
    let two = filler_file(index, &org, std::slice::from_ref(&ds)).await;
    let loose = filler_file(index, &org, &[]).await;

    let mut q = query(&org, Some(&ds), "printers", basis(7));
    q.limit = 50;
    q.files = Some(vec![two.clone()]);
    let hits = index.search(q.clone()).await.expect("search");
    assert_eq!(hits.len(), FILLER.len());
    assert!(hits.iter().all(|hit| hit.file_id == two));

    q.files = Some(vec![one.clone(), loose.clone()]);
    let hits = index.search(q.clone()).await.expect("search");
    assert!(
        hits.iter().all(|hit| hit.file_id == one),
        "loose is in no dataset"
    );

    q.dataset = None;
    let hits = index.search(q.clone()).await.expect("search");
    assert_eq!(hits.len(), 2 * FILLER.len());
    assert!(hits.iter().any(|hit| hit.file_id == loose));

    q.files = Some(Vec::new());
    assert!(index.search(q).await.expect("search").is_empty());
}

/// `delete_file` removes every chunk of that file and nothing else.
pub async fn delete_file_removes_only_that_file(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let gone = filler_file(index, &org, std::slice::from_ref(&ds)).await;
    let kept = filler_file(index, &org, std::slice::from_ref(&ds)).await;

    index.delete_file(&org, &gone).await.expect("delete");
    let hits = index
        .search(query(&org, Some(&ds), "backups", basis(3)))
        .await
        .expect("search");
    assert_eq!(hits.len(), FILLER.len());
    assert!(hits.iter().all(|hit| hit.file_id == kept));

    index
        .delete_file(&org, &gone)
        .await
        .expect("deleting again is fine");
}

/// Upserting a (file, ordinal) again replaces the chunk: one hit, with the new content.
pub async fn upserting_the_same_chunk_replaces_it(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let first = chunk(
        &org,
        &file,
        0,
        std::slice::from_ref(&ds),
        "first draft about llamas",
        basis(0),
    );
    index.upsert(vec![first.clone()]).await.expect("upsert");
    let mut second = chunk(
        &org,
        &file,
        0,
        std::slice::from_ref(&ds),
        "final text about alpacas",
        basis(1),
    );
    second.location.page = Some(42);
    index
        .upsert(vec![second.clone(), second.clone()])
        .await
        .expect("upsert twice in a batch");

    let hits = index
        .search(query(&org, Some(&ds), "llamas alpacas", basis(0)))
        .await
        .expect("search");
    assert_eq!(hits.len(), 1, "{:?}", keys(&hits));
    assert_eq!(hits[0].text, "final text about alpacas");
    assert_eq!(hits[0].location.page, Some(42));
    let hits = index
        .search(query(&org, Some(&ds), "llamas", basis(5)))
        .await
        .expect("search");
    assert!(
        hits.iter().all(|hit| hit.text != first.text),
        "old text is not searchable"
    );
}

/// A dense vector of the wrong length is `Invalid`, in a search and in an upsert (which
/// then stores nothing of its batch).
pub async fn wrong_dimensions_are_invalid(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let mut q = query(&org, Some(&ds), "text", vec![0.5; DIMENSIONS + 1]);
    assert!(matches!(
        index.search(q.clone()).await,
        Err(IndexError::Invalid(_))
    ));
    q.dense = vec![1.0];
    assert!(matches!(index.search(q).await, Err(IndexError::Invalid(_))));

    let file = FileId::generate();
    let good = chunk(&org, &file, 0, std::slice::from_ref(&ds), "good", basis(0));
    let bad = chunk(
        &org,
        &file,
        1,
        std::slice::from_ref(&ds),
        "bad",
        vec![0.1; DIMENSIONS - 1],
    );
    assert!(matches!(
        index.upsert(vec![good, bad]).await,
        Err(IndexError::Invalid(_))
    ));
    let hits = index
        .search(query(&org, Some(&ds), "good", basis(0)))
        .await
        .expect("search");
    assert!(hits.is_empty(), "{:?}", keys(&hits));
}

/// Searches and upserts running at the same time all succeed, and every upsert is visible
/// afterwards.
pub async fn concurrent_searches_and_upserts(under_test: &IndexUnderTest) {
    let index = Arc::clone(&under_test.index);
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    filler_file(&*index, &org, std::slice::from_ref(&ds)).await;

    let mut tasks = Vec::new();
    let mut files = Vec::new();
    for i in 0..8u32 {
        let file = FileId::generate();
        files.push(file.clone());
        let (writer, w_org, w_ds) = (Arc::clone(&index), org.clone(), ds.clone());
        tasks.push(tokio::spawn(async move {
            let (index, org, ds) = (writer, w_org, w_ds);
            let chunks = (0..20)
                .map(|n| {
                    chunk(
                        &org,
                        &file,
                        n,
                        std::slice::from_ref(&ds),
                        FILLER[(n % 8) as usize],
                        pseudo_random(u64::from(i * 100 + n)),
                    )
                })
                .collect();
            index.upsert(chunks).await.expect("concurrent upsert");
        }));
        let (reader, r_org, r_ds) = (Arc::clone(&index), org.clone(), ds.clone());
        tasks.push(tokio::spawn(async move {
            let (index, org, ds) = (reader, r_org, r_ds);
            for _ in 0..5 {
                let hits = index
                    .search(query(
                        &org,
                        Some(&ds),
                        "meeting rooms",
                        pseudo_random(u64::from(i)),
                    ))
                    .await
                    .expect("concurrent search");
                assert!(!hits.is_empty());
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    for file in files {
        let mut q = query(&org, Some(&ds), "printers", basis(0));
        q.files = Some(vec![file]);
        q.limit = 50;
        assert_eq!(index.search(q).await.expect("search").len(), 20);
    }
}
