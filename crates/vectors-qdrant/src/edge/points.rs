//! Chunks as qdrant-edge points: dense vector, BM25 sparse vector and payload.

use std::collections::HashMap;

use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use qdrant_edge::{
    Payload, PointId, PointStructPersisted, SparseVector, VectorPersisted, VectorStructPersisted,
};
use tessera_knowledge::{IndexError, IndexedChunk};

use crate::fields::{DENSE_VECTOR, SPARSE_VECTOR};
use crate::payload::ChunkPayload;
use crate::point_id::point_id;

/// qdrant-edge's BM25 embedder with its defaults (word tokenizer, lowercase, English
/// stopwords and stemming, k = 1.2, b = 0.75).
pub(crate) fn bm25() -> Result<EdgeBm25, IndexError> {
    EdgeBm25::new(EdgeBm25Config::default())
        .map_err(|error| IndexError::Invalid(format!("BM25 configuration: {error}")))
}

/// A chunk's point. Text without a single token gets no sparse vector (dense only).
pub(crate) fn point(
    bm25: &EdgeBm25,
    chunk: &IndexedChunk,
    dimensions: usize,
) -> Result<PointStructPersisted, IndexError> {
    check_dense(&chunk.dense, dimensions)?;
    let mut vectors = HashMap::from([(
        DENSE_VECTOR.to_owned(),
        VectorPersisted::Dense(chunk.dense.clone()),
    )]);
    let sparse = bm25.embed_document(&chunk.text);
    if !sparse.indices.is_empty() {
        vectors.insert(SPARSE_VECTOR.to_owned(), VectorPersisted::Sparse(sparse));
    }
    let id = point_id(&chunk.organization, &chunk.file_id, chunk.ordinal);
    Ok(PointStructPersisted {
        id: PointId::Uuid(id),
        vector: VectorStructPersisted::Named(vectors),
        payload: Some(Payload(ChunkPayload::of(chunk).into_map()?)),
    })
}

/// The query's sparse vector, or `None` when its text has no token (then dense only).
pub(crate) fn sparse_query(bm25: &EdgeBm25, text: &str) -> Option<SparseVector> {
    let sparse = bm25.embed_query(text);
    (!sparse.indices.is_empty()).then_some(sparse)
}

/// Refuses a dense vector of the wrong length, or with a non-finite value.
pub(crate) fn check_dense(dense: &[f32], dimensions: usize) -> Result<(), IndexError> {
    if dense.len() != dimensions {
        return Err(IndexError::Invalid(format!(
            "a dense vector has {} dimensions, the index {dimensions}",
            dense.len()
        )));
    }
    if !dense.iter().all(|value| value.is_finite()) {
        return Err(IndexError::Invalid(
            "a dense vector has a non-finite value".into(),
        ));
    }
    Ok(())
}
