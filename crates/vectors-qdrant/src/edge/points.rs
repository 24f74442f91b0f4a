//! Chunks as qdrant-edge points: dense vector, BM25 sparse vector, token vectors and payload.

use std::collections::HashMap;

use qdrant_edge::bm25_embed::EdgeBm25;
use qdrant_edge::{Payload, PointId, PointStructPersisted, VectorPersisted, VectorStructPersisted};
use tessera_knowledge::{IndexError, IndexedChunk};

use crate::fields::{DENSE_VECTOR, LATE_VECTOR, SPARSE_VECTOR};
use crate::payload::ChunkPayload;
use crate::point_id::point_id;
use crate::vectors::{LateLayout, check_dense, checked_late, document_sparse, token_rows};

/// A chunk's point. Text without a single token gets no sparse vector (dense only); a chunk
/// without token vectors gets no multivector.
pub(crate) fn point(
    bm25: &EdgeBm25,
    chunk: &IndexedChunk,
    dimensions: usize,
    late: &LateLayout,
) -> Result<PointStructPersisted, IndexError> {
    check_dense(&chunk.dense, dimensions)?;
    let mut vectors = HashMap::from([(
        DENSE_VECTOR.to_owned(),
        VectorPersisted::Dense(chunk.dense.clone()),
    )]);
    if let Some(sparse) = document_sparse(bm25, &chunk.text) {
        vectors.insert(SPARSE_VECTOR.to_owned(), VectorPersisted::Sparse(sparse));
    }
    if let Some(tokens) = checked_late(chunk.late.as_ref(), late, "a chunk's")? {
        vectors.insert(
            LATE_VECTOR.to_owned(),
            VectorPersisted::MultiDense(token_rows(tokens)),
        );
    }
    let id = point_id(&chunk.organization, &chunk.file_id, chunk.ordinal);
    Ok(PointStructPersisted {
        id: PointId::Uuid(id),
        vector: VectorStructPersisted::Named(vectors),
        payload: Some(Payload(ChunkPayload::of(chunk).into_map()?)),
    })
}
