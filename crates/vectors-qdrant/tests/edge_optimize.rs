//! Past qdrant-edge's indexing threshold (10 MB of dense vectors per segment) an upsert runs
//! the optimisers, which build the HNSW index; filters, changes and reopening keep working.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Instant;

use tessera_kernel::OrganizationId;
use tessera_knowledge::{
    ChunkLocation, DatasetId, FileId, IndexedChunk, SearchMode, VectorIndex, VectorQuery,
};
use tessera_vectors_qdrant::EdgeVectorIndex;

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
