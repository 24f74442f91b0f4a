//! How a chunk's and a query's vectors are made and checked, the same for every adapter: the
//! BM25 sparse vectors are computed here (the engine only applies IDF), so a collection
//! written by one adapter is searched identically by the other.

use qdrant_edge::SparseVector;
use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use tessera_knowledge::IndexError;

/// qdrant-edge's BM25 embedder with its defaults (word tokenizer, lowercase, English
/// stopwords and stemming, k = 1.2, b = 0.75). It is pure computation, usable without a
/// shard, which is why the server adapter uses it too.
pub(crate) fn bm25() -> Result<EdgeBm25, IndexError> {
    EdgeBm25::new(EdgeBm25Config::default())
        .map_err(|error| IndexError::Invalid(format!("BM25 configuration: {error}")))
}

/// A chunk's sparse vector, or `None` when its text has no token (the point is dense only).
pub(crate) fn document_sparse(bm25: &EdgeBm25, text: &str) -> Option<SparseVector> {
    let sparse = bm25.embed_document(text);
    (!sparse.indices.is_empty()).then_some(sparse)
}

/// The query's sparse vector, or `None` when its text has no token (then dense only).
pub(crate) fn query_sparse(bm25: &EdgeBm25, text: &str) -> Option<SparseVector> {
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
