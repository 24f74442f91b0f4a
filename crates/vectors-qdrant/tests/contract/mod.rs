//! The `VectorIndex` contract, as async functions any adapter's tests can run.
//!
//! Every function takes an index of [`DIMENSIONS`] dense dimensions and works in a freshly
//! generated organization, so the functions may share one index (a Qdrant server collection)
//! or get one each. `contract_suite!(factory)` turns them into `#[tokio::test]`s, with
//! `factory().await` returning `(Arc<dyn VectorIndex>, guard)` (the guard keeps a temporary
//! directory or collection alive until the index is dropped); `contract_suite!(@in_sequence
//! factory)` runs them all inside one test.

#![allow(dead_code)]

use std::sync::Arc;

use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    ChunkLocation, DatasetId, FileId, IndexError, IndexedChunk, LateRerank, ScoredChunk,
    SearchMode, TokenVectors, VectorIndex, VectorQuery, max_sim,
};
use tessera_vectors_qdrant::LATE_DIMENSIONS;

/// The dense dimensions every contract index is opened with.
pub const DIMENSIONS: usize = 16;

/// Generates one `#[tokio::test]` per contract function.
///
/// `contract_suite!(@in_sequence factory)` instead runs every contract function in turn,
/// each on a fresh index from `factory().await`, inside one test the caller writes (for an
/// adapter whose tests decide at run time whether they can run, as a Qdrant server's).
#[macro_export]
macro_rules! contract_suite {
    ($factory:path) => {
        $crate::contract_suite! { @names [@tests $factory] }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn concurrent_searches_and_upserts() {
            let (index, guard) = $factory().await;
            $crate::contract::concurrent_searches_and_upserts(index).await;
            drop(guard);
        }
    };
    (@in_sequence $factory:expr) => {{
        $crate::contract_suite! { @names [@sequence $factory] }
        let (index, guard) = ($factory)().await;
        eprintln!("contract: concurrent_searches_and_upserts");
        $crate::contract::concurrent_searches_and_upserts(index).await;
        drop(guard);
    }};
    // The one list of the contract's functions, handed to the arm in brackets.
    (@names [$($arm:tt)*]) => {
        $crate::contract_suite! { $($arm)*;
            dense_query_ranks_the_closest_chunk_first,
            bm25_finds_a_rare_keyword_when_the_dense_vector_is_uninformative,
            fusion_keeps_both_the_dense_and_the_keyword_favourite,
            each_mode_ranks_by_its_own_signal,
            a_query_without_tokens_searches_dense_only,
            organizations_are_isolated,
            dataset_filter_follows_set_datasets,
            file_filter_limits_to_the_given_files,
            delete_file_removes_only_that_file,
            upserting_the_same_chunk_replaces_it,
            wrong_dimensions_are_invalid,
            empty_index_and_zero_limit_return_nothing,
            limit_caps_the_hits_best_first,
            late_interaction_reorders_the_candidates_by_maxsim,
            late_interaction_agrees_with_brute_force_maxsim,
            chunks_without_token_vectors_follow_the_scored_ones,
            late_interaction_keeps_the_scope,
            token_vectors_of_another_width_are_invalid,
        }
    };
    (@tests $factory:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (index, guard) = $factory().await;
                $crate::contract::$name(&*index).await;
                // The index goes first: it flushes into the directory the guard removes.
                drop(index);
                drop(guard);
            }
        )*
    };
    (@sequence $factory:expr; $($name:ident),* $(,)?) => {
        $(
            let (index, guard) = ($factory)().await;
            eprintln!(concat!("contract: ", stringify!($name)));
            $crate::contract::$name(&*index).await;
            drop(index);
            drop(guard);
        )*
    };
}

// ---- data helpers -------------------------------------------------------------------------

/// The `i`-th unit basis vector: basis vectors are orthogonal to each other.
pub fn basis(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; DIMENSIONS];
    v[i % DIMENSIONS] = 1.0;
    v
}

/// `v` scaled to unit length.
pub fn unit(v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// A deterministic pseudo-random unit vector.
pub fn pseudo_random(seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v = (0..DIMENSIONS)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    unit(v)
}

pub fn location(ordinal: u32) -> ChunkLocation {
    ChunkLocation {
        page: Some(ordinal + 1),
        section: Some(format!("Section {ordinal}")),
        char_start: u64::from(ordinal) * 100,
        char_end: u64::from(ordinal) * 100 + 99,
    }
}

pub fn chunk(
    organization: &OrganizationId,
    file_id: &FileId,
    ordinal: u32,
    datasets: &[DatasetId],
    text: &str,
    dense: Vec<f32>,
) -> IndexedChunk {
    IndexedChunk {
        organization: organization.clone(),
        file_id: file_id.clone(),
        ordinal,
        datasets: datasets.to_vec(),
        text: text.to_owned(),
        location: location(ordinal),
        dense,
        late: None,
    }
}

pub fn query(
    organization: &OrganizationId,
    dataset: Option<&DatasetId>,
    text: &str,
    dense: Vec<f32>,
) -> VectorQuery {
    VectorQuery {
        organization: organization.clone(),
        dataset: dataset.cloned(),
        files: None,
        text: text.to_owned(),
        dense,
        limit: 10,
        mode: SearchMode::Hybrid,
        late: None,
    }
}

/// A unit token vector of the index's width: `cos(angle)` at value `a`, `sin(angle)` at `b`.
pub fn token(a: usize, b: usize, angle: f32) -> Vec<f32> {
    let mut v = vec![0.0; LATE_DIMENSIONS];
    v[a] = angle.cos();
    v[b] += angle.sin();
    v
}

/// Token vectors from rows of the index's width.
pub fn token_vectors(rows: &[Vec<f32>]) -> TokenVectors {
    TokenVectors::new(LATE_DIMENSIONS, rows.concat()).expect("whole tokens")
}

/// `count` deterministic pseudo-random unit token vectors.
pub fn random_tokens(seed: u64, count: usize) -> TokenVectors {
    let mut state = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x2545_F491_4F6C_DD1D);
    let rows: Vec<Vec<f32>> = (0..count)
        .map(|_| {
            let v = (0..LATE_DIMENSIONS)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                })
                .collect();
            unit(v)
        })
        .collect();
    token_vectors(&rows)
}

/// MaxSim as the index computes it: on unit vectors rounded to float16, the type it stores
/// token vectors in (and compares the query's in).
pub fn stored_max_sim(query: &TokenVectors, document: &TokenVectors) -> f32 {
    let half = |tokens: &TokenVectors| {
        let rows: Vec<Vec<f32>> = tokens
            .tokens()
            .map(|row| {
                unit(row.to_vec())
                    .into_iter()
                    .map(|x| half::f16::from_f32(x).to_f32())
                    .collect()
            })
            .collect();
        token_vectors(&rows)
    };
    max_sim(&half(query), &half(document))
}

/// `query` reordering its best `candidates` by late interaction.
pub fn reranked(mut query: VectorQuery, tokens: TokenVectors, candidates: usize) -> VectorQuery {
    query.late = Some(LateRerank {
        query: tokens,
        candidates,
    });
    query
}

fn ordinals(hits: &[ScoredChunk]) -> Vec<u32> {
    hits.iter().map(|hit| hit.ordinal).collect()
}

fn keys(hits: &[ScoredChunk]) -> Vec<(FileId, u32)> {
    hits.iter()
        .map(|hit| (hit.file_id.clone(), hit.ordinal))
        .collect()
}

/// Plain filler texts with no word in common with the keyword tests' queries.
const FILLER: [&str; 8] = [
    "The quarterly report covers revenue and costs across regions.",
    "Employees may request leave through the internal portal.",
    "The cafeteria serves lunch between noon and two.",
    "Backups run nightly and are kept for thirty days.",
    "Meeting rooms can be booked a week in advance.",
    "Travel expenses need a receipt and a manager's approval.",
    "The office closes early on public holidays.",
    "Printers on every floor support double-sided printing.",
];

/// Upserts one file of [`FILLER`] chunks with basis dense vectors; returns its id.
async fn filler_file(
    index: &dyn VectorIndex,
    organization: &OrganizationId,
    datasets: &[DatasetId],
) -> FileId {
    let file = FileId::generate();
    let chunks = FILLER
        .iter()
        .enumerate()
        .map(|(i, text)| chunk(organization, &file, i as u32, datasets, text, basis(i)))
        .collect();
    index.upsert(chunks).await.expect("upsert");
    file
}

// ---- the contract -------------------------------------------------------------------------

/// A dense query closest to one chunk finds it first, with every payload field decoded.
pub async fn dense_query_ranks_the_closest_chunk_first(index: &dyn VectorIndex) {
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
    index: &dyn VectorIndex,
) {
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
pub async fn fusion_keeps_both_the_dense_and_the_keyword_favourite(index: &dyn VectorIndex) {
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
pub async fn each_mode_ranks_by_its_own_signal(index: &dyn VectorIndex) {
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

/// A query whose text yields no token (punctuation, stopwords) still searches densely.
pub async fn a_query_without_tokens_searches_dense_only(index: &dyn VectorIndex) {
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

    for text in ["?!... ;-)", "the of and", ""] {
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

/// Two organizations with identical data (even identical ids) each see only their own
/// chunks, and changing one's file leaves the other's alone.
pub async fn organizations_are_isolated(index: &dyn VectorIndex) {
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
pub async fn dataset_filter_follows_set_datasets(index: &dyn VectorIndex) {
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
pub async fn file_filter_limits_to_the_given_files(index: &dyn VectorIndex) {
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
pub async fn delete_file_removes_only_that_file(index: &dyn VectorIndex) {
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
pub async fn upserting_the_same_chunk_replaces_it(index: &dyn VectorIndex) {
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
pub async fn wrong_dimensions_are_invalid(index: &dyn VectorIndex) {
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

/// Searching where nothing is indexed, or with limit 0, returns no hits (not an error).
pub async fn empty_index_and_zero_limit_return_nothing(index: &dyn VectorIndex) {
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
pub async fn limit_caps_the_hits_best_first(index: &dyn VectorIndex) {
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

/// Searches and upserts running at the same time all succeed, and every upsert is visible
/// afterwards.
pub async fn concurrent_searches_and_upserts(index: Arc<dyn VectorIndex>) {
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

// ---- late interaction ---------------------------------------------------------------------

/// Eight chunks in one file whose dense vectors rank them 0, 1, …, 7 for [`ranked_dense`]
/// (no query word matches, so hybrid is that order too), and whose token vectors rank them
/// the other way round for [`late_query`]: chunk `i`'s best token is at an angle of
/// `0.15 × (7 − i)` radians from the query's first token (MaxSim from cos 1.05 ≈ 0.50 up to
/// 1.0, at least 0.01 apart: unambiguous in float16). Chunks in `without` get no token
/// vectors.
async fn reversed_file(
    index: &dyn VectorIndex,
    organization: &OrganizationId,
    datasets: &[DatasetId],
    without: &[u32],
) -> (FileId, Vec<IndexedChunk>) {
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
                chunk.late = Some(token_vectors(&[
                    token(0, 1, angle),
                    token(100 + i as usize, 120, 0.3),
                ]));
            }
            chunk
        })
        .collect();
    index.upsert(chunks.clone()).await.expect("upsert");
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

/// The query's token vectors: one along value 0, one near nothing the chunks hold.
fn late_query() -> TokenVectors {
    token_vectors(&[token(0, 1, 0.0), token(60, 61, 0.5)])
}

/// With late interaction, the mode's best candidates come back in MaxSim order (here the
/// reverse of the hybrid order), with the engine's MaxSim as their scores; only the best
/// `candidates` are reordered.
pub async fn late_interaction_reorders_the_candidates_by_maxsim(index: &dyn VectorIndex) {
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let (_, chunks) = reversed_file(index, &org, std::slice::from_ref(&ds), &[]).await;
    let plain = query(&org, Some(&ds), "", ranked_dense());
    let hybrid = index.search(plain.clone()).await.expect("search");
    assert_eq!(ordinals(&hybrid), (0..8).collect::<Vec<_>>());

    let hits = index
        .search(reranked(plain.clone(), late_query(), 8))
        .await
        .expect("late search");
    assert_eq!(ordinals(&hits), (0..8).rev().collect::<Vec<_>>());
    for hit in &hits {
        let stored = chunks[hit.ordinal as usize].late.as_ref().expect("tokens");
        let expected = stored_max_sim(&late_query(), stored);
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
    let mut top = reranked(plain.clone(), late_query(), 3);
    top.limit = 2;
    let hits = index.search(top).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![2, 1]);
    // Fewer candidates than the limit: the limit's worth are.
    let mut few = reranked(plain.clone(), late_query(), 1);
    few.limit = 4;
    let hits = index.search(few).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![3, 2, 1, 0]);
    // Dense and words-only modes are reordered the same way.
    let mut dense = reranked(plain.clone(), late_query(), 8);
    dense.mode = SearchMode::Dense;
    let hits = index.search(dense).await.expect("late search");
    assert_eq!(ordinals(&hits), (0..8).rev().collect::<Vec<_>>());
    let mut words = reranked(
        query(&org, Some(&ds), "lunch printers", Vec::new()),
        late_query(),
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
/// brute-force MaxSim's over the same (float16-rounded) vectors.
pub async fn late_interaction_agrees_with_brute_force_maxsim(index: &dyn VectorIndex) {
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
            chunk.late = Some(random_tokens(u64::from(i), 1 + (i as usize * 7) % 23));
            chunk
        })
        .collect();
    index.upsert(chunks.clone()).await.expect("upsert");
    let tokens = random_tokens(1_000, 6);
    let mut expected: Vec<(u32, f32)> = chunks
        .iter()
        .map(|chunk| {
            let stored = chunk.late.as_ref().expect("tokens");
            (chunk.ordinal, stored_max_sim(&tokens, stored))
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
pub async fn chunks_without_token_vectors_follow_the_scored_ones(index: &dyn VectorIndex) {
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    reversed_file(index, &org, std::slice::from_ref(&ds), &[1, 4, 6]).await;
    let plain = query(&org, Some(&ds), "", ranked_dense());
    let hybrid = index.search(plain.clone()).await.expect("search");

    let hits = index
        .search(reranked(plain.clone(), late_query(), 8))
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
    let mut six = reranked(plain.clone(), late_query(), 8);
    six.limit = 6;
    let hits = index.search(six).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![7, 5, 3, 2, 0, 1]);
    // Only the candidates: the fusion's best 3 (0, 1, 2), of which 1 has no tokens.
    let mut top = reranked(plain.clone(), late_query(), 3);
    top.limit = 3;
    let hits = index.search(top).await.expect("late search");
    assert_eq!(ordinals(&hits), vec![2, 0, 1]);

    // A file indexed without any token vectors is searched in the mode's order.
    let other = OrganizationId::generate();
    reversed_file(
        index,
        &other,
        std::slice::from_ref(&ds),
        &(0..8).collect::<Vec<_>>(),
    )
    .await;
    let hits = index
        .search(reranked(
            query(&other, Some(&ds), "", ranked_dense()),
            late_query(),
            8,
        ))
        .await
        .expect("late search");
    assert_eq!(ordinals(&hits), (0..8).collect::<Vec<_>>());
}

/// Late interaction sees only what the search may: the organization, dataset and files,
/// for the scored candidates and for those without token vectors alike.
pub async fn late_interaction_keeps_the_scope(index: &dyn VectorIndex) {
    let (a, b) = (OrganizationId::generate(), OrganizationId::generate());
    let (ds_x, ds_y) = (DatasetId::generate(), DatasetId::generate());
    let (in_x, _) = reversed_file(index, &a, std::slice::from_ref(&ds_x), &[3]).await;
    let (in_y, _) = reversed_file(index, &a, std::slice::from_ref(&ds_y), &[5]).await;
    let (of_b, _) = reversed_file(index, &b, std::slice::from_ref(&ds_x), &[2]).await;

    let search = |org: &OrganizationId, ds: Option<&DatasetId>, files: Option<Vec<FileId>>| {
        let mut q = reranked(query(org, ds, "", ranked_dense()), late_query(), 40);
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
pub async fn token_vectors_of_another_width_are_invalid(index: &dyn VectorIndex) {
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let file = FileId::generate();
    let datasets = std::slice::from_ref(&ds);
    let mut good = chunk(&org, &file, 0, datasets, "good", basis(0));
    good.late = Some(random_tokens(1, 3));
    for late in [
        TokenVectors::new(LATE_DIMENSIONS / 2, vec![0.1; LATE_DIMENSIONS]).expect("tokens"),
        TokenVectors::new(LATE_DIMENSIONS + 1, vec![0.1; LATE_DIMENSIONS + 1]).expect("tokens"),
        TokenVectors::new(LATE_DIMENSIONS, vec![f32::NAN; LATE_DIMENSIONS]).expect("tokens"),
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
            random_tokens(2, 2),
            10,
        ))
        .await
        .expect("late search");
    assert_eq!(ordinals(&hits), vec![0]);
}
