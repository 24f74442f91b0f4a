//! Past qdrant-edge's indexing threshold (10 MB of one vector's values per segment) an upsert
//! runs the optimisers, which build the HNSW index; filters, changes and reopening keep
//! working. Token vectors reach the threshold too, and get no graph.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Instant;

use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    ChunkLocation, DatasetId, FileId, IndexedChunk, LateRerank, ScoredChunk, SearchMode,
    TokenVectors, VectorIndex, VectorQuery, max_sim,
};
use tessera_vectors_qdrant::{EdgeVectorIndex, LATE_DIMENSIONS, LATE_VECTOR};

const DIMENSIONS: usize = 1024;
/// 2 600 × 1 024 × 4 bytes ≈ 10.4 MB, just past the 10 000 KB threshold.
const POINTS_PER_ORG: u32 = 1_300;
const FILES_PER_ORG: u32 = 13;

fn vector(seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..DIMENSIONS)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

fn chunks(org: &OrganizationId, files: &[FileId], ds: &DatasetId, seed: u64) -> Vec<IndexedChunk> {
    (0..POINTS_PER_ORG)
        .map(|n| IndexedChunk {
            organization: org.clone(),
            file_id: files[(n % FILES_PER_ORG) as usize].clone(),
            ordinal: n,
            datasets: vec![ds.clone()],
            text: format!("chunk number {n} of a long manual"),
            location: ChunkLocation {
                page: None,
                section: None,
                char_start: 0,
                char_end: 10,
            },
            dense: vector(seed + u64::from(n)),
            late: None,
        })
        .collect()
}

fn has_hnsw_index(dir: &Path) -> bool {
    fn walk(dir: &Path) -> bool {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().to_lowercase();
                name.contains("graph") || (path.is_dir() && walk(&path))
            })
    }
    walk(&dir.join("segments"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_upserts_build_the_hnsw_index_and_search_still_filters() {
    let dir = tempfile::tempdir().unwrap();
    let index = EdgeVectorIndex::open(dir.path(), DIMENSIONS).await.unwrap();
    let (a, b) = (OrganizationId::generate(), OrganizationId::generate());
    let ds = DatasetId::generate();
    let files_a: Vec<FileId> = (0..FILES_PER_ORG).map(|_| FileId::generate()).collect();
    let files_b: Vec<FileId> = (0..FILES_PER_ORG).map(|_| FileId::generate()).collect();

    let started = Instant::now();
    index.upsert(chunks(&a, &files_a, &ds, 0)).await.unwrap();
    assert!(
        !has_hnsw_index(dir.path()),
        "half the points stay in a plain segment"
    );
    // Org b's vectors repeat org a's: only the filter tells them apart.
    index.upsert(chunks(&b, &files_b, &ds, 0)).await.unwrap();
    eprintln!(
        "upserted and optimised {} points in {:?}",
        2 * POINTS_PER_ORG,
        started.elapsed()
    );
    assert!(
        has_hnsw_index(dir.path()),
        "the optimiser built an HNSW graph"
    );

    let search = |org: &OrganizationId, n: u32| {
        index.search(VectorQuery {
            organization: org.clone(),
            dataset: Some(ds.clone()),
            files: None,
            text: format!("number {n}"),
            dense: vector(u64::from(n)),
            limit: 5,
            mode: SearchMode::Hybrid,
            late: None,
        })
    };
    for n in [0, 7, 640, 1299] {
        let hits = search(&a, n).await.unwrap();
        assert_eq!(hits[0].ordinal, n);
        assert!(hits.iter().all(|hit| files_a.contains(&hit.file_id)));
        let hits = search(&b, n).await.unwrap();
        assert_eq!(hits[0].ordinal, n);
        assert!(hits.iter().all(|hit| files_b.contains(&hit.file_id)));
    }

    // Changes reach the optimised segment, and it survives reopening.
    index.delete_file(&a, &files_a[0]).await.unwrap();
    index
        .set_datasets(&a, &files_a[1], Vec::new())
        .await
        .unwrap();
    drop(index);
    let index = EdgeVectorIndex::open(dir.path(), DIMENSIONS).await.unwrap();
    let hits = index
        .search(VectorQuery {
            organization: a.clone(),
            dataset: Some(ds.clone()),
            files: None,
            text: String::new(),
            dense: vector(0),
            limit: 50,
            mode: SearchMode::Hybrid,
            late: None,
        })
        .await
        .unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|hit| hit.file_id != files_a[0] && hit.file_id != files_a[1])
    );
    assert!(hits.iter().all(|hit| files_a.contains(&hit.file_id)));
}

/// `count` pseudo-random unit token vectors.
fn tokens(seed: u64, count: usize) -> TokenVectors {
    let mut state = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    let mut values = Vec::with_capacity(count * LATE_DIMENSIONS);
    for _ in 0..count {
        let row: Vec<f32> = (0..LATE_DIMENSIONS)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        values.extend(row.into_iter().map(|x| x / norm));
    }
    TokenVectors::new(LATE_DIMENSIONS, values).unwrap()
}

/// MaxSim on the float16 values the index stores.
fn stored_max_sim(query: &TokenVectors, document: &TokenVectors) -> f32 {
    let half = |t: &TokenVectors| {
        let values = t
            .values()
            .iter()
            .map(|x| half::f16::from_f32(*x).to_f32())
            .collect();
        TokenVectors::new(LATE_DIMENSIONS, values).unwrap()
    };
    max_sim(&half(query), &half(document))
}

/// The configuration of the late vector in the optimised (non-appendable) segments.
fn optimised_late_indexes(dir: &Path) -> Vec<serde_json::Value> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir.join("segments")).unwrap().flatten() {
        let config = entry.path().join("segment.json");
        let Ok(text) = std::fs::read_to_string(&config) else {
            continue;
        };
        let segment: serde_json::Value = serde_json::from_str(&text).unwrap();
        let late = &segment["config"]["vector_data"][LATE_VECTOR];
        if late["index"] != serde_json::json!({ "type": "plain", "options": {} }) {
            found.push(late["index"].clone());
        }
    }
    found
}

/// 40 token vectors of 128 float16 values (10 KiB) per chunk: 1 200 chunks pass the
/// indexing threshold on the token vectors alone (the 1 024-value dense vectors are 4.9 MB).
/// The optimiser then indexes the segment without a graph for the token vectors (`m` 0),
/// and late interaction reranks as brute-force MaxSim does, before and after reopening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_vectors_past_the_threshold_are_optimised_without_a_graph() {
    let dir = tempfile::tempdir().unwrap();
    let index = EdgeVectorIndex::open(dir.path(), DIMENSIONS).await.unwrap();
    let org = OrganizationId::generate();
    let ds = DatasetId::generate();
    let files: Vec<FileId> = (0..12).map(|_| FileId::generate()).collect();
    let mut chunks = Vec::new();
    for half in 0..2u32 {
        let mut batch = late_chunks(&org, &files, &ds, half);
        let started = Instant::now();
        index.upsert(batch.clone()).await.unwrap();
        eprintln!(
            "upserted {} points with 40 token vectors each in {:?}",
            batch.len(),
            started.elapsed()
        );
        chunks.append(&mut batch);
    }
    let indexes = optimised_late_indexes(dir.path());
    assert!(
        !indexes.is_empty(),
        "the token vectors started the optimiser"
    );
    for late_index in &indexes {
        assert_eq!(late_index["options"]["m"], 0, "{late_index}");
        assert_eq!(late_index["options"]["payload_m"], 0, "{late_index}");
    }

    let query_tokens = tokens(7_777, 8);
    let search = |index: EdgeVectorIndex, late: Option<LateRerank>, limit: usize| {
        let ds = ds.clone();
        let org = org.clone();
        async move {
            index
                .search(VectorQuery {
                    organization: org,
                    dataset: Some(ds),
                    files: None,
                    text: String::new(),
                    dense: vector(3),
                    limit,
                    mode: SearchMode::Dense,
                    late,
                })
                .await
                .unwrap()
        }
    };
    let check = |candidates: Vec<ScoredChunk>, reranked: Vec<ScoredChunk>| {
        let mut expected: Vec<(u32, f32)> = candidates
            .iter()
            .map(|hit| {
                let chunk = &chunks[hit.ordinal as usize];
                (
                    hit.ordinal,
                    stored_max_sim(&query_tokens, chunk.late.as_ref().unwrap()),
                )
            })
            .collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(reranked.len(), 5);
        for (hit, (ordinal, score)) in reranked.iter().zip(&expected) {
            assert!(
                (hit.score - score).abs() < 2e-3,
                "chunk {} ({}) where brute force has chunk {ordinal} ({score})",
                hit.ordinal,
                hit.score
            );
        }
    };
    let late = LateRerank {
        query: query_tokens.clone(),
        candidates: 100,
    };
    let candidates = search(index.clone(), None, 100).await;
    let reranked = search(index.clone(), Some(late.clone()), 5).await;
    check(candidates, reranked.clone());
    drop(index);

    let index = EdgeVectorIndex::open(dir.path(), DIMENSIONS).await.unwrap();
    let after = search(index.clone(), Some(late), 5).await;
    assert_eq!(after, reranked, "the same after reopening");
}

/// Half of 1 200 chunks with 40 token vectors each (ordinals numbered across both halves).
fn late_chunks(
    org: &OrganizationId,
    files: &[FileId],
    ds: &DatasetId,
    half: u32,
) -> Vec<IndexedChunk> {
    (half * 600..(half + 1) * 600)
        .map(|n| IndexedChunk {
            organization: org.clone(),
            file_id: files[(n % 12) as usize].clone(),
            ordinal: n,
            datasets: vec![ds.clone()],
            text: format!("chunk number {n}"),
            location: ChunkLocation {
                page: None,
                section: None,
                char_start: 0,
                char_end: 10,
            },
            dense: vector(u64::from(n)),
            late: Some(tokens(u64::from(n) + 1, 40)),
        })
        .collect()
}
