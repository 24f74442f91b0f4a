//! The vectors, chunks and queries the `VectorIndex` checks are made of, public for an
//! adapter's own checks beyond the suite.

use tessera_kernel::OrganizationId;

use super::DIMENSIONS;
use crate::{
    ChunkLocation, DatasetId, FileId, IndexedChunk, LateRerank, ScoredChunk, SearchMode,
    TokenVectors, VectorIndex, VectorQuery,
};

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

/// The next value, in [-0.5, 0.5), of the linear congruential sequence `state` is at.
fn next_centred(state: &mut u64) -> f32 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
}

/// A unit vector of `dims` values, the next of the sequence `state` is at.
fn random_unit(state: &mut u64, dims: usize) -> Vec<f32> {
    unit((0..dims).map(|_| next_centred(state)).collect())
}

/// A deterministic pseudo-random unit vector.
pub fn pseudo_random(seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    random_unit(&mut state, DIMENSIONS)
}

/// Where chunk `ordinal` of the checks' files is.
pub fn location(ordinal: u32) -> ChunkLocation {
    ChunkLocation {
        page: Some(ordinal + 1),
        section: Some(format!("Section {ordinal}")),
        char_start: u64::from(ordinal) * 100,
        char_end: u64::from(ordinal) * 100 + 99,
    }
}

/// Chunk `ordinal` of `file_id`, in `datasets`, saying `text`, without token vectors.
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

/// A hybrid search of `organization` (within `dataset` when set) for at most 10 chunks.
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

/// A unit token vector of `dims` values: `cos(angle)` at value `a`, `sin(angle)` at `b`.
pub fn token(dims: usize, a: usize, b: usize, angle: f32) -> Vec<f32> {
    let mut v = vec![0.0; dims];
    v[a] = angle.cos();
    v[b] += angle.sin();
    v
}

/// Token vectors from rows of `dims` values.
pub fn token_vectors(dims: usize, rows: &[Vec<f32>]) -> TokenVectors {
    TokenVectors::new(dims, rows.concat()).expect("whole tokens")
}

/// `count` deterministic pseudo-random unit token vectors of `dims` values.
pub fn random_tokens(dims: usize, seed: u64, count: usize) -> TokenVectors {
    let mut state = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x2545_F491_4F6C_DD1D);
    let rows: Vec<Vec<f32>> = (0..count).map(|_| random_unit(&mut state, dims)).collect();
    token_vectors(dims, &rows)
}

/// `query` reordering its best `candidates` by late interaction.
pub fn reranked(mut query: VectorQuery, tokens: TokenVectors, candidates: usize) -> VectorQuery {
    query.late = Some(LateRerank {
        query: tokens,
        candidates,
    });
    query
}

/// The hits' ordinals, best first.
pub fn ordinals(hits: &[ScoredChunk]) -> Vec<u32> {
    hits.iter().map(|hit| hit.ordinal).collect()
}

/// The hits' (file, ordinal), best first.
pub fn keys(hits: &[ScoredChunk]) -> Vec<(FileId, u32)> {
    hits.iter()
        .map(|hit| (hit.file_id.clone(), hit.ordinal))
        .collect()
}

/// Plain filler texts with no word in common with the keyword tests' queries.
pub const FILLER: [&str; 8] = [
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
pub async fn filler_file(
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
