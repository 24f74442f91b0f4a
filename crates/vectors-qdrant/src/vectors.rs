//! How a chunk's and a query's vectors are made and checked, the same for every adapter: the
//! BM25 sparse vectors are computed here (the engine only applies IDF), so a collection
//! written by one adapter is searched identically by the other; token vectors for late
//! interaction are checked here, and whether the index can hold them at all.

use qdrant_edge::SparseVector;
use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use tessera_knowledge::{IndexError, TokenVectors};

use crate::fields::{LATE_DIMENSIONS, LATE_VECTOR};

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

/// Whether an opened index has the [`LATE_VECTOR`] multivector. An index made before late
/// interaction has not (engines cannot add a vector to existing points' layout): it keeps
/// serving everything else, and refuses token vectors only when a chunk or a query brings
/// some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LateLayout {
    /// The index stores and compares token vectors.
    Stored,
    /// It cannot; the message says why and how to fix it (re-index into an empty index).
    Missing(String),
}

impl LateLayout {
    /// `Invalid` with the reason when the index cannot hold token vectors.
    pub fn require(&self) -> Result<(), IndexError> {
        match self {
            Self::Stored => Ok(()),
            Self::Missing(reason) => Err(IndexError::Invalid(reason.clone())),
        }
    }
}

/// Token vectors as the index takes them: `None` when absent or empty (the chunk or query
/// has none); refused when of another width than [`LATE_DIMENSIONS`] or with a non-finite
/// value, or when the index cannot hold them.
pub(crate) fn checked_late<'a>(
    late: Option<&'a TokenVectors>,
    layout: &LateLayout,
    what: &str,
) -> Result<Option<&'a TokenVectors>, IndexError> {
    let Some(late) = late.filter(|late| !late.is_empty()) else {
        return Ok(None);
    };
    if late.dims() != LATE_DIMENSIONS {
        return Err(IndexError::Invalid(format!(
            "{what} token vectors have {} values each, the index's {LATE_VECTOR} vectors \
             {LATE_DIMENSIONS}",
            late.dims()
        )));
    }
    if !late.values().iter().all(|value| value.is_finite()) {
        return Err(IndexError::Invalid(format!(
            "{what} token vectors have a non-finite value"
        )));
    }
    layout.require()?;
    Ok(Some(late))
}

/// Token vectors as the engines' multivectors take them: one row per token.
pub(crate) fn token_rows(late: &TokenVectors) -> Vec<Vec<f32>> {
    late.tokens().map(<[f32]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(dims: usize, count: usize, value: f32) -> TokenVectors {
        TokenVectors::new(dims, vec![value; dims * count]).unwrap_or_default()
    }

    #[test]
    fn token_vectors_are_checked_then_the_layout() {
        let stored = LateLayout::Stored;
        let missing = LateLayout::Missing("re-index into an empty directory".into());
        let good = tokens(LATE_DIMENSIONS, 2, 0.5);
        assert_eq!(
            checked_late(Some(&good), &stored, "a chunk's"),
            Ok(Some(&good))
        );
        assert_eq!(token_rows(&good).len(), 2);
        assert_eq!(token_rows(&good)[1].len(), LATE_DIMENSIONS);
        // Absent or empty: nothing to store or compare, whatever the layout.
        let empty = TokenVectors::default();
        for late in [None, Some(&empty)] {
            assert_eq!(checked_late(late, &missing, "a chunk's"), Ok(None));
        }
        let narrow = tokens(LATE_DIMENSIONS / 2, 2, 0.5);
        let refused = checked_late(Some(&narrow), &stored, "the query's");
        assert!(
            matches!(&refused, Err(IndexError::Invalid(m)) if m.contains("64 values")),
            "{refused:?}"
        );
        let nan = tokens(LATE_DIMENSIONS, 1, f32::NAN);
        assert!(checked_late(Some(&nan), &stored, "a chunk's").is_err());
        let refused = checked_late(Some(&good), &missing, "a chunk's");
        assert!(
            matches!(&refused, Err(IndexError::Invalid(m)) if m.contains("empty directory")),
            "{refused:?}"
        );
    }
}
