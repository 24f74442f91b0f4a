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
    ChunkLocation, DatasetId, FileId, IndexError, IndexedChunk, ScoredChunk, SearchMode,
    VectorIndex, VectorQuery,
};

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
    }
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
