//! The rankings: dense, BM25 and their fusion by reciprocal rank, each by its own signal,
//! best first and at most the limit.

use tessera_kernel::OrganizationId;

use super::{
    FILLER, IndexUnderTest, basis, chunk, filler_file, keys, location, pseudo_random, query, unit,
};
use crate::{DatasetId, FileId, SearchMode};

/// A dense query closest to one chunk finds it first, with every payload field decoded.
pub async fn dense_query_ranks_the_closest_chunk_first(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = filler_file(index, &org, std::slice::from_ref(&ds)).await;

    let mut near_three = basis(3);
    near_three[4] = 0.2;
    let hits = index
        .search(query(&org, Some(&ds), "", unit(near_three)))
        .await
        .expect("search");

    let first = hits.first().expect("a hit");
    assert_eq!((first.file_id.clone(), first.ordinal), (file, 3));
    assert_eq!(first.text, FILLER[3]);
    assert_eq!(first.location, location(3));
    assert!(first.score > 0.0);
    assert_eq!(
        hits.get(1).map(|hit| hit.ordinal),
        Some(4),
        "second-closest second"
    );
}

/// With a dense vector equally far from every chunk, the sparse side alone decides: the one
/// chunk with a rare keyword comes first.
pub async fn bm25_finds_a_rare_keyword_when_the_dense_vector_is_uninformative(
    under_test: &IndexUnderTest,
) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let same = basis(0);
    let mut chunks: Vec<_> = FILLER
        .iter()
        .enumerate()
        .map(|(i, text)| {
            chunk(
                &org,
                &file,
                i as u32,
                std::slice::from_ref(&ds),
                text,
                same.clone(),
            )
        })
        .collect();
    chunks.push(chunk(
        &org,
        &file,
        8,
        std::slice::from_ref(&ds),
        "Calibration of the zygomorphic flux capacitor is done quarterly.",
        same.clone(),
    ));
    index.upsert(chunks).await.expect("upsert");

    // Orthogonal to every chunk: the dense ranking carries no information.
    let hits = index
        .search(query(&org, Some(&ds), "zygomorphic", basis(5)))
        .await
        .expect("search");
    assert_eq!(
        hits.first().map(|hit| hit.ordinal),
        Some(8),
        "{:?}",
        keys(&hits)
    );
}

/// The dense favourite and the keyword favourite (orthogonal to the query) both reach the
/// top of the fused ranking: neither side is ignored.
pub async fn fusion_keeps_both_the_dense_and_the_keyword_favourite(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let mut chunks: Vec<_> = FILLER
        .iter()
        .enumerate()
        .map(|(i, text)| {
            chunk(
                &org,
                &file,
                i as u32,
                std::slice::from_ref(&ds),
                text,
                pseudo_random(i as u64),
            )
        })
        .collect();
    let keyword_dense = basis(0);
    chunks.push(chunk(
        &org,
        &file,
        8,
        std::slice::from_ref(&ds),
        "Ticket QX-7731 tracks the xylophone tuning regression.",
        keyword_dense,
    ));
    index.upsert(chunks).await.expect("upsert");

    // Exactly chunk 2's vector, with chunk 8's basis component removed (orthogonal to it).
    let mut dense = pseudo_random(2);
    dense[0] = 0.0;
    let hits = index
        .search(query(&org, Some(&ds), "xylophone", unit(dense)))
        .await
        .expect("search");
    let top: Vec<u32> = hits.iter().take(2).map(|hit| hit.ordinal).collect();
    assert!(top.contains(&2), "dense favourite missing: {top:?}");
    assert!(top.contains(&8), "keyword favourite missing: {top:?}");
}

/// `Dense` ranks by the vector alone, `Sparse` by the words alone (no vector needed).
pub async fn each_mode_ranks_by_its_own_signal(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let datasets = std::slice::from_ref(&ds);
    index
        .upsert(vec![
            chunk(&org, &file, 0, datasets, "The garden has roses.", basis(0)),
            chunk(
                &org,
                &file,
                1,
                datasets,
                "Ticket QX-7731 is about the xylophone.",
                basis(1),
            ),
            chunk(
                &org,
                &file,
                2,
                datasets,
                "Lunch is served at noon.",
                basis(2),
            ),
        ])
        .await
        .expect("upsert");
    let mut dense = query(&org, Some(&ds), "xylophone", basis(0));
    dense.mode = SearchMode::Dense;
    let hits = index.search(dense).await.expect("dense search");
    assert_eq!(hits[0].ordinal, 0, "the closest vector, whatever the words");
    let mut sparse = query(&org, Some(&ds), "xylophone", Vec::new());
    sparse.mode = SearchMode::Sparse;
    let hits = index.search(sparse).await.expect("sparse search");
    assert_eq!(
        hits.iter().map(|hit| hit.ordinal).collect::<Vec<_>>(),
        vec![1],
        "only chunks with the word"
    );
    let mut unknown = query(&org, Some(&ds), "zeppelin", Vec::new());
    unknown.mode = SearchMode::Sparse;
    assert!(
        index
            .search(unknown)
            .await
            .expect("sparse search")
            .is_empty()
    );
}

/// A query whose text yields no word (punctuation, nothing) still searches densely. (Which
/// words an index drops as stopwords is its own: Qdrant's checks say so for theirs.)
pub async fn a_query_without_tokens_searches_dense_only(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = filler_file(index, &org, std::slice::from_ref(&ds)).await;
    // A chunk whose text has no token at all is indexed too (dense only).
    index
        .upsert(vec![chunk(
            &org,
            &file,
            20,
            std::slice::from_ref(&ds),
            "?!… — ...",
            basis(9),
        )])
        .await
        .expect("upsert");

    for text in ["?!... ;-)", ""] {
        let hits = index
            .search(query(&org, Some(&ds), text, basis(6)))
            .await
            .expect("search");
        assert_eq!(hits.first().map(|hit| hit.ordinal), Some(6), "{text:?}");
    }
    let hits = index
        .search(query(&org, Some(&ds), "?", basis(9)))
        .await
        .expect("search");
    assert_eq!(hits.first().map(|hit| hit.ordinal), Some(20));
}

/// Searching where nothing is indexed, or with limit 0, returns no hits (not an error).
pub async fn empty_index_and_zero_limit_return_nothing(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let hits = index
        .search(query(&org, Some(&ds), "anything", basis(0)))
        .await
        .expect("search");
    assert!(hits.is_empty());
    index.upsert(Vec::new()).await.expect("empty upsert");

    filler_file(index, &org, std::slice::from_ref(&ds)).await;
    let mut q = query(&org, Some(&ds), "report", basis(0));
    q.limit = 0;
    assert!(index.search(q).await.expect("search").is_empty());
}

/// At most `limit` hits, in descending score order.
pub async fn limit_caps_the_hits_best_first(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let chunks = (0..30)
        .map(|i| {
            chunk(
                &org,
                &file,
                i,
                std::slice::from_ref(&ds),
                FILLER[i as usize % 8],
                pseudo_random(u64::from(i) + 100),
            )
        })
        .collect();
    index.upsert(chunks).await.expect("upsert");
    let mut q = query(&org, Some(&ds), "lunch receipts", pseudo_random(7));
    q.limit = 5;
    let hits = index.search(q).await.expect("search");
    assert_eq!(hits.len(), 5);
    assert!(
        hits.windows(2).all(|pair| pair[0].score >= pair[1].score),
        "{hits:?}"
    );
}
