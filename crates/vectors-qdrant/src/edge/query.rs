//! The query: dense and BM25 prefetches (either or both) fused by reciprocal rank.

use qdrant_edge::{
    Filter, Fusion, NamedQuery, Prefetch, QueryEnum, QueryRequest, ScoringQuery, SparseVector,
    VectorInternal, WithPayloadInterface, WithVector,
};

use crate::fields::{DENSE_VECTOR, SPARSE_VECTOR};

/// The RRF constant (the literature's 60: a rank's weight falls off gently, so agreement
/// between the two rankings counts more than the top of one).
pub(crate) const RRF_K: usize = 60;

/// How many candidates each ranking contributes to the fusion.
pub(crate) fn prefetch_limit(limit: usize) -> usize {
    limit.saturating_mul(4).max(40)
}

/// The request. The filter sits on the root, which qdrant-edge applies to every prefetch,
/// so both rankings only ever see the allowed chunks.
/// With one ranking the fusion keeps its order.
pub(crate) fn hybrid_request(
    dense: Option<Vec<f32>>,
    sparse: Option<SparseVector>,
    filter: Filter,
    limit: usize,
) -> QueryRequest {
    let candidates = prefetch_limit(limit);
    let mut prefetches = Vec::with_capacity(2);
    if let Some(dense) = dense {
        prefetches.push(prefetch(
            VectorInternal::Dense(dense),
            DENSE_VECTOR,
            candidates,
        ));
    }
    if let Some(sparse) = sparse {
        prefetches.push(prefetch(
            VectorInternal::Sparse(sparse),
            SPARSE_VECTOR,
            candidates,
        ));
    }
    QueryRequest {
        prefetches,
        query: Some(ScoringQuery::Fusion(Fusion::Rrf {
            k: RRF_K,
            weights: None,
        })),
        filter: Some(filter),
        score_threshold: None,
        limit,
        offset: 0,
        params: None,
        with_vector: WithVector::Bool(false),
        with_payload: WithPayloadInterface::Bool(true),
    }
}

fn prefetch(vector: VectorInternal, using: &str, limit: usize) -> Prefetch {
    Prefetch {
        prefetches: Vec::new(),
        query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
            vector, using,
        )))),
        limit,
        params: None,
        filter: None,
        score_threshold: None,
    }
}
