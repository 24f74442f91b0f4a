//! Late interaction: the mode's best candidates reordered by MaxSim against the stored
//! token vectors (the engine's scores brute force's), candidates without token vectors
//! following in the mode's order, within the search's scope; token vectors of another
//! width refused.

use tessera_kernel::OrganizationId;

use super::{
    DIMENSIONS, FILLER, IndexUnderTest, basis, chunk, keys, location, ordinals, pseudo_random,
    query, random_tokens, reranked, token, token_vectors, unit,
};
use crate::{DatasetId, FileId, IndexError, IndexedChunk, SearchMode, TokenVectors};

/// Eight chunks in one file whose dense vectors rank them 0, 1, …, 7 for [`ranked_dense`]
/// (no query word matches, so hybrid is that order too), and whose token vectors rank them
/// the other way round for [`late_query`]: chunk `i`'s best token is at an angle of
/// `0.15 × (7 − i)` radians from the query's first token (MaxSim from cos 1.05 ≈ 0.50 up to
/// 1.0, at least 0.01 apart: unambiguous in float16). Chunks in `without` get no token
/// vectors.
async fn reversed_file(
    under_test: &IndexUnderTest,
    organization: &OrganizationId,
    datasets: &[DatasetId],
    without: &[u32],
) -> (FileId, Vec<IndexedChunk>) {
    let dims = under_test.late_dimensions;
    let file = FileId::generate();
    let chunks: Vec<IndexedChunk> = (0..8u32)
        .map(|i| {
            let mut chunk = chunk(
                organization,
                &file,
                i,
                datasets,
                FILLER[i as usize],
                basis(i as usize),
            );
            if !without.contains(&i) {
                let angle = 0.15 * (7 - i) as f32;
                // A second token far from every query token.
                chunk.late = Some(token_vectors(
                    dims,
                    &[
                        token(dims, 0, 1, angle),
                        token(dims, 4 + i as usize, 12, 0.3),
                    ],
                ));
            }
            chunk
        })
        .collect();
    under_test
        .index
        .upsert(chunks.clone())
        .await
        .expect("upsert");
    (file, chunks)
}

/// Closest to chunk 0's dense vector, then 1's, … then 7's.
fn ranked_dense() -> Vec<f32> {
    let mut v = vec![0.0; DIMENSIONS];
    for (i, value) in v.iter_mut().take(8).enumerate() {
        *value = (8 - i) as f32;
    }
    unit(v)
}

/// The query's token vectors (of `dims` values): one along value 0, one near nothing the
/// chunks hold.
fn late_query(dims: usize) -> TokenVectors {
    token_vectors(dims, &[token(dims, 0, 1, 0.0), token(dims, 2, 3, 0.5)])
}

/// With late interaction, the mode's best candidates come back in MaxSim order (here the
/// reverse of the hybrid order), with the engine's MaxSim as their scores; only the best
/// `candidates` are reordered.
pub async fn late_interaction_reorders_the_candidates_by_maxsim(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let dims = under_test.late_dimensions;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let (_, chunks) = reversed_file(under_test, &org, std::slice::from_ref(&ds), &[]).await;
    let plain = query(&org, Some(&ds), "", ranked_dense());
    let hybrid = index.search(plain.clone()).await.expect("search");
    assert_eq!(ordinals(&hybrid), (0..8).collect::<Vec<_>>());

    let hits = index
        .search(reranked(plain.clone(), late_query(dims), 8))
        .await
        .expect("late search");
    assert_eq!(ordinals(&hits), (0..8).rev().collect::<Vec<_>>());
    for hit in &hits {
        let stored = chunks[hit.ordinal as usize].late.as_ref().expect("tokens");
        let expected = under_test.expected_max_sim(&late_query(dims), stored);
        assert!(
            (hit.score - expected).abs() < 2e-3,
            "chunk {}: {} against {expected}",
            hit.ordinal,
            hit.score
        );
    }
    assert_eq!(hits[0].text, FILLER[7], "payload decoded");
    assert_eq!(hits[0].location, location(7));

    // The best 3 of the fusion (0, 1, 2) reordered; the limit takes the first 2.
    let mut top = reranked(plain.clone(), late_query(dims), 3);
    top.limit = 2;
    let hits = index.search(top).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![2, 1]);
    // Fewer candidates than the limit: the limit's worth are.
    let mut few = reranked(plain.clone(), late_query(dims), 1);
    few.limit = 4;
    let hits = index.search(few).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![3, 2, 1, 0]);
    // Dense and words-only modes are reordered the same way.
    let mut dense = reranked(plain.clone(), late_query(dims), 8);
    dense.mode = SearchMode::Dense;
    let hits = index.search(dense).await.expect("late search");
    assert_eq!(ordinals(&hits), (0..8).rev().collect::<Vec<_>>());
    let mut words = reranked(
        query(&org, Some(&ds), "lunch printers", Vec::new()),
        late_query(dims),
        8,
    );
    words.mode = SearchMode::Sparse;
    let hits = index.search(words).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![7, 2], "printers (7), lunch (2)");
    // Empty query token vectors keep the mode's order.
    let hits = index
        .search(reranked(plain, TokenVectors::default(), 8))
        .await
        .expect("search");
    assert_eq!(ordinals(&hits), (0..8).collect::<Vec<_>>());
}

/// On pseudo-random token vectors of varied lengths, the engine's order and scores are
/// brute-force MaxSim's over the same vectors as the index stores them.
pub async fn late_interaction_agrees_with_brute_force_maxsim(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let dims = under_test.late_dimensions;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let chunks: Vec<IndexedChunk> = (0..30u32)
        .map(|i| {
            let mut chunk = chunk(
                &org,
                &file,
                i,
                std::slice::from_ref(&ds),
                FILLER[i as usize % 8],
                pseudo_random(u64::from(i) + 500),
            );
            chunk.late = Some(random_tokens(dims, u64::from(i), 1 + (i as usize * 7) % 23));
            chunk
        })
        .collect();
    index.upsert(chunks.clone()).await.expect("upsert");
    let tokens = random_tokens(dims, 1_000, 6);
    let mut expected: Vec<(u32, f32)> = chunks
        .iter()
        .map(|chunk| {
            let stored = chunk.late.as_ref().expect("tokens");
            (chunk.ordinal, under_test.expected_max_sim(&tokens, stored))
        })
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));

    // Every chunk is a candidate (30 of 30): the best 10 by MaxSim over the whole file.
    let mut q = reranked(query(&org, Some(&ds), "", pseudo_random(7)), tokens, 30);
    q.limit = 10;
    let hits = index.search(q).await.expect("late search");
    assert_eq!(hits.len(), 10);
    let tolerance = 2e-3;
    for (rank, hit) in hits.iter().enumerate() {
        let brute = expected
            .iter()
            .find(|(ordinal, _)| *ordinal == hit.ordinal)
            .map(|(_, score)| *score)
            .expect("an indexed chunk");
        assert!(
            (hit.score - brute).abs() < tolerance,
            "chunk {}: engine {} brute force {brute}",
            hit.ordinal,
            hit.score
        );
        // The brute-force rank, up to near ties.
        assert!(
            (brute - expected[rank].1).abs() < tolerance,
            "rank {rank}: chunk {} ({brute}) where brute force has {:?}",
            hit.ordinal,
            expected[rank]
        );
    }
    assert!(
        hits.windows(2).all(|pair| pair[0].score >= pair[1].score),
        "{hits:?}"
    );
}

/// A candidate indexed without token vectors is never dropped: such candidates follow the
/// scored ones, in the mode's order and with its scores, up to the limit.
pub async fn chunks_without_token_vectors_follow_the_scored_ones(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let dims = under_test.late_dimensions;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    reversed_file(under_test, &org, std::slice::from_ref(&ds), &[1, 4, 6]).await;
    let plain = query(&org, Some(&ds), "", ranked_dense());
    let hybrid = index.search(plain.clone()).await.expect("search");

    let hits = index
        .search(reranked(plain.clone(), late_query(dims), 8))
        .await
        .expect("late search");
    assert_eq!(ordinals(&hits), vec![7, 5, 3, 2, 0, 1, 4, 6]);
    for hit in &hits[5..] {
        let fused = hybrid
            .iter()
            .find(|h| h.ordinal == hit.ordinal)
            .expect("a hit");
        assert_eq!(
            hit.score, fused.score,
            "chunk {}: the fusion's score",
            hit.ordinal
        );
    }
    // The limit cuts the followers too.
    let mut six = reranked(plain.clone(), late_query(dims), 8);
    six.limit = 6;
    let hits = index.search(six).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![7, 5, 3, 2, 0, 1]);
    // Only the candidates: the fusion's best 3 (0, 1, 2), of which 1 has no tokens.
    let mut top = reranked(plain.clone(), late_query(dims), 3);
    top.limit = 3;
    let hits = index.search(top).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![2, 0, 1]);

    // A file indexed without any token vectors is searched in the mode's order.
    let other = OrganizationId::generate();
    reversed_file(
        under_test,
        &other,
        std::slice::from_ref(&ds),
        &(0..8).collect::<Vec<_>>(),
    )
    .await;
    let hits = index
        .search(reranked(
            query(&other, Some(&ds), "", ranked_dense()),
            late_query(dims),
            8,
        ))
        .await
        .expect("late search");
    assert_eq!(ordinals(&hits), (0..8).collect::<Vec<_>>());
}

/// Late interaction sees only what the search may: the organization, dataset and files,
/// for the scored candidates and for those without token vectors alike.
pub async fn late_interaction_keeps_the_scope(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let dims = under_test.late_dimensions;
    let (a, b) = (OrganizationId::generate(), OrganizationId::generate());
    let (ds_x, ds_y) = (DatasetId::generate(), DatasetId::generate());
    let (in_x, _) = reversed_file(under_test, &a, std::slice::from_ref(&ds_x), &[3]).await;
    let (in_y, _) = reversed_file(under_test, &a, std::slice::from_ref(&ds_y), &[5]).await;
    let (of_b, _) = reversed_file(under_test, &b, std::slice::from_ref(&ds_x), &[2]).await;

    let search = |org: &OrganizationId, ds: Option<&DatasetId>, files: Option<Vec<FileId>>| {
        let mut q = reranked(query(org, ds, "", ranked_dense()), late_query(dims), 40);
        q.files = files;
        q.limit = 40;
        index.search(q)
    };
    let hits = search(&a, Some(&ds_x), None).await.expect("late search");
    assert!(
        hits.iter().all(|hit| hit.file_id == in_x),
        "{:?}",
        keys(&hits)
    );
    assert_eq!(ordinals(&hits), vec![7, 6, 5, 4, 2, 1, 0, 3]);

    let hits = search(&a, None, None).await.expect("late search");
    assert_eq!(hits.len(), 16);
    assert!(
        hits.iter()
            .all(|hit| hit.file_id == in_x || hit.file_id == in_y)
    );
    let hits = search(&a, None, Some(vec![in_y.clone()]))
        .await
        .expect("late search");
    assert!(
        hits.iter().all(|hit| hit.file_id == in_y),
        "{:?}",
        keys(&hits)
    );
    assert_eq!(hits.len(), 8);
    assert_eq!(
        hits.last().map(|hit| hit.ordinal),
        Some(5),
        "no tokens: last"
    );
    let hits = search(&a, Some(&ds_y), Some(vec![in_x.clone()]))
        .await
        .expect("late search");
    assert!(hits.is_empty(), "{:?}", keys(&hits));
    let hits = search(&b, Some(&ds_x), None).await.expect("late search");
    assert!(
        hits.iter().all(|hit| hit.file_id == of_b),
        "{:?}",
        keys(&hits)
    );
    assert_eq!(hits.len(), 8);
    let hits = search(&OrganizationId::generate(), None, None)
        .await
        .expect("late search");
    assert!(hits.is_empty());
}

/// Token vectors of another width than the index's, or with a non-finite value, are
/// `Invalid` in an upsert (which then stores nothing of its batch) and in a search.
pub async fn token_vectors_of_another_width_are_invalid(under_test: &IndexUnderTest) {
    let index = &*under_test.index;
    let dims = under_test.late_dimensions;
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let datasets = std::slice::from_ref(&ds);
    let mut good = chunk(&org, &file, 0, datasets, "good", basis(0));
    good.late = Some(random_tokens(dims, 1, 3));
    for late in [
        TokenVectors::new(dims / 2, vec![0.1; dims]).expect("tokens"),
        TokenVectors::new(dims + 1, vec![0.1; dims + 1]).expect("tokens"),
        TokenVectors::new(dims, vec![f32::NAN; dims]).expect("tokens"),
    ] {
        let mut bad = chunk(&org, &file, 1, datasets, "bad", basis(1));
        bad.late = Some(late.clone());
        let refused = index.upsert(vec![good.clone(), bad]).await;
        assert!(
            matches!(refused, Err(IndexError::Invalid(_))),
            "{refused:?}"
        );
        let refused = index
            .search(reranked(query(&org, Some(&ds), "good", basis(0)), late, 10))
            .await;
        assert!(
            matches!(refused, Err(IndexError::Invalid(_))),
            "{refused:?}"
        );
    }
    let hits = index
        .search(query(&org, Some(&ds), "good", basis(0)))
        .await
        .expect("search");
    assert!(hits.is_empty(), "{:?}", keys(&hits));
    // Empty token vectors are none: the chunk is stored without.
    good.late = Some(TokenVectors::default());
    index.upsert(vec![good]).await.expect("upsert");
    let hits = index
        .search(reranked(
            query(&org, Some(&ds), "good", basis(0)),
            random_tokens(dims, 2, 2),
            10,
        ))
        .await
        .expect("late search");
    assert_eq!(ordinals(&hits), vec![0]);
}
