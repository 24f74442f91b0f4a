//! The `VectorIndex` contract (tessera-knowledge's suite, and the engine's stopwords) and
//! persistence on qdrant-edge (real engine, temporary dirs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod qdrant;

use qdrant::stored_max_sim;
use qdrant_edge::{
    Distance, EdgeConfigBuilder, EdgeShard, EdgeSparseVectorParams, EdgeVectorParams, Modifier,
};
use tempfile::TempDir;
use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    DatasetId, FileId, IndexError, ScoredChunk, VectorIndex,
    contract::vector_index::{
        DIMENSIONS, IndexUnderTest, basis, chunk, query, random_tokens, reranked,
    },
};
use tessera_vectors_qdrant::{DENSE_VECTOR, EdgeVectorIndex, LATE_DIMENSIONS, SPARSE_VECTOR};

async fn fresh_index() -> (IndexUnderTest, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let index = EdgeVectorIndex::open(dir.path().join("vectors"), DIMENSIONS)
        .await
        .expect("open");
    (qdrant::under_test(std::sync::Arc::new(index)), dir)
}

tessera_knowledge::vector_index_contract!(fresh_index);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopwords_alone_search_densely() {
    let (under_test, dir) = fresh_index().await;
    qdrant::stopwords_alone_search_densely(&*under_test.index).await;
    drop(under_test);
    drop(dir);
}

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

/// Token vectors survive closing and reopening: the reopened shard ranks by the same
/// MaxSim, and takes more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_keeps_the_token_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors");
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let chunks: Vec<_> = (0..6u32)
        .map(|i| {
            let mut chunk = chunk(
                &org,
                &file,
                i,
                std::slice::from_ref(&ds),
                "walrus notes",
                basis(i as usize),
            );
            chunk.late = Some(random_tokens(
                LATE_DIMENSIONS,
                u64::from(i) + 40,
                5 + i as usize,
            ));
            chunk
        })
        .collect();
    let tokens = random_tokens(LATE_DIMENSIONS, 99, 4);
    let late_search = reranked(
        query(&org, Some(&ds), "walrus", basis(0)),
        tokens.clone(),
        10,
    );
    let before = {
        let index = EdgeVectorIndex::open(&path, DIMENSIONS).await.unwrap();
        index.upsert(chunks.clone()).await.unwrap();
        index.search(late_search.clone()).await.unwrap()
    };
    let mut expected: Vec<(u32, f32)> = chunks
        .iter()
        .map(|c| (c.ordinal, stored_max_sim(&tokens, c.late.as_ref().unwrap())))
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));
    let order = |hits: &[ScoredChunk]| hits.iter().map(|h| h.ordinal).collect::<Vec<_>>();
    assert_eq!(
        order(&before),
        expected
            .iter()
            .map(|(ordinal, _)| *ordinal)
            .collect::<Vec<_>>()
    );

    let index = EdgeVectorIndex::open(&path, DIMENSIONS).await.unwrap();
    let after = index.search(late_search.clone()).await.unwrap();
    assert_eq!(after, before, "same order and MaxSim scores");
    // A seventh chunk, a copy of the best one's tokens, ties with it at the top.
    let mut copy = chunks[expected[0].0 as usize].clone();
    copy.ordinal = 6;
    index.upsert(vec![copy]).await.unwrap();
    let hits = index.search(late_search).await.unwrap();
    assert_eq!(hits.len(), 7);
    let top: Vec<u32> = order(&hits[..2]);
    assert!(top.contains(&6) && top.contains(&expected[0].0), "{top:?}");
}

/// A shard made before late interaction (dense and BM25 vectors only) still opens and
/// serves everything else; token vectors, in an upsert or a search, are `Invalid` with the
/// reason and the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_without_token_vectors_serves_all_but_late_interaction() {
    let dir = tempfile::tempdir().unwrap();
    {
        // The layout this adapter wrote before the late-interaction vector.
        let config = EdgeConfigBuilder::new()
            .vector(
                DENSE_VECTOR,
                EdgeVectorParams::builder(DIMENSIONS, Distance::Cosine).build(),
            )
            .sparse_vector(
                SPARSE_VECTOR,
                EdgeSparseVectorParams {
                    modifier: Some(Modifier::Idf),
                    ..EdgeSparseVectorParams::default()
                },
            )
            .on_disk_payload(true)
            .build();
        let shard = EdgeShard::new(dir.path(), config).unwrap();
        shard.flush();
    }
    let index = EdgeVectorIndex::open(dir.path(), DIMENSIONS).await.unwrap();
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let plain = chunk(
        &org,
        &file,
        0,
        std::slice::from_ref(&ds),
        "old walrus",
        basis(0),
    );
    index.upsert(vec![plain.clone()]).await.unwrap();
    let hits = index
        .search(query(&org, Some(&ds), "walrus", basis(0)))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);

    let mut late = plain;
    late.ordinal = 1;
    late.late = Some(random_tokens(LATE_DIMENSIONS, 3, 2));
    let refused = index.upsert(vec![late]).await;
    let search = reranked(
        query(&org, Some(&ds), "walrus", basis(0)),
        random_tokens(LATE_DIMENSIONS, 4, 2),
        10,
    );
    let refused_search = index.search(search).await;
    for refused in [refused.map(|()| Vec::new()), refused_search] {
        let Err(IndexError::Invalid(message)) = &refused else {
            panic!("{refused:?}");
        };
        assert!(
            message.contains("late") && message.contains("empty directory"),
            "{message}"
        );
    }
    let hits = index
        .search(query(&org, Some(&ds), "walrus", basis(0)))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "the refused chunk is not stored");
}
