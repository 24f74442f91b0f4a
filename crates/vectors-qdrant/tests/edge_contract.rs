//! The `VectorIndex` contract and persistence on qdrant-edge (real engine, temporary dirs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod contract;

use std::sync::Arc;

use contract::{DIMENSIONS, basis, chunk, query};
use tempfile::TempDir;
use tessera_kernel::OrganizationId;
use tessera_knowledge::{DatasetId, FileId, IndexError, ScoredChunk, VectorIndex};
use tessera_vectors_qdrant::EdgeVectorIndex;

async fn fresh_index() -> (Arc<dyn VectorIndex>, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let index = EdgeVectorIndex::open(dir.path().join("vectors"), DIMENSIONS)
        .await
        .expect("open");
    (Arc::new(index), dir)
}

contract_suite!(fresh_index);

/// Points, payload changes and deletions survive closing and reopening the directory, and
/// the reopened shard accepts further changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_keeps_the_points_and_accepts_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors");
    let org = OrganizationId::generate();
    let (ds_a, ds_b) = (DatasetId::generate(), DatasetId::generate());
    let (kept, moved, gone) = (FileId::generate(), FileId::generate(), FileId::generate());
    {
        let index = EdgeVectorIndex::open(&path, DIMENSIONS).await.unwrap();
        for (i, file) in [&kept, &moved, &gone].into_iter().enumerate() {
            index
                .upsert(vec![chunk(
                    &org,
                    file,
                    0,
                    std::slice::from_ref(&ds_a),
                    "persistent walrus notes",
                    basis(i),
                )])
                .await
                .unwrap();
        }
        index
            .set_datasets(&org, &moved, vec![ds_b.clone()])
            .await
            .unwrap();
        index.delete_file(&org, &gone).await.unwrap();
    }

    let index = EdgeVectorIndex::open(&path, DIMENSIONS).await.unwrap();
    let hits = index
        .search(query(&org, Some(&ds_a), "walrus", basis(0)))
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| &h.file_id).collect::<Vec<_>>(),
        vec![&kept]
    );
    assert_eq!(hits[0].text, "persistent walrus notes");
    let hits = index
        .search(query(&org, Some(&ds_b), "walrus", basis(1)))
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| &h.file_id).collect::<Vec<_>>(),
        vec![&moved]
    );

    // Changes after reopening apply (operation numbers continue past the stored ones).
    index
        .upsert(vec![chunk(
            &org,
            &kept,
            0,
            std::slice::from_ref(&ds_a),
            "rewritten walrus notes",
            basis(0),
        )])
        .await
        .unwrap();
    index
        .set_datasets(&org, &moved, vec![ds_a.clone()])
        .await
        .unwrap();
    let texts = |hits: Vec<ScoredChunk>| {
        let mut texts: Vec<_> = hits.into_iter().map(|h| (h.file_id, h.text)).collect();
        texts.sort();
        texts
    };
    let mut expected = vec![
        (kept.clone(), "rewritten walrus notes".to_owned()),
        (moved.clone(), "persistent walrus notes".to_owned()),
    ];
    expected.sort();
    let hits = index
        .search(query(&org, Some(&ds_a), "walrus", basis(0)))
        .await
        .unwrap();
    assert_eq!(texts(hits), expected);
    drop(index);

    let index = EdgeVectorIndex::open(&path, DIMENSIONS).await.unwrap();
    let hits = index
        .search(query(&org, Some(&ds_a), "walrus", basis(0)))
        .await
        .unwrap();
    assert_eq!(texts(hits), expected);
}

/// A directory made for other dimensions is refused, not silently reused.
#[tokio::test]
async fn reopening_with_other_dimensions_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    drop(EdgeVectorIndex::open(dir.path(), DIMENSIONS).await.unwrap());
    let error = EdgeVectorIndex::open(dir.path(), DIMENSIONS + 1)
        .await
        .unwrap_err();
    assert!(matches!(error, IndexError::Invalid(_)), "{error:?}");
    assert!(matches!(
        EdgeVectorIndex::open_blocking(dir.path(), 0),
        Err(IndexError::Invalid(_))
    ));
    assert!(EdgeVectorIndex::open_blocking(dir.path(), DIMENSIONS).is_ok());
}
