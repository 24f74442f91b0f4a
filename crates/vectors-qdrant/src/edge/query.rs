//! A [`SearchPlan`] as a qdrant-edge query: dense and BM25 prefetches (either or both) fused
//! by reciprocal rank.

use qdrant_edge::{
    Fusion, NamedQuery, Prefetch, QueryEnum, QueryRequest, ScoringQuery, VectorInternal,
    WithPayloadInterface, WithVector,
};
use tessera_knowledge::IndexError;

use super::filter::filter;
use crate::fields::{DENSE_VECTOR, SPARSE_VECTOR};
use crate::search::{RRF_K, SearchPlan};

/// The request. The filter sits on the root, which qdrant-edge applies to every prefetch,
/// so both rankings only ever see the allowed chunks.
pub(crate) fn hybrid_request(plan: SearchPlan) -> Result<QueryRequest, IndexError> {
    let mut prefetches = Vec::with_capacity(2);
    if let Some(dense) = plan.dense {
        prefetches.push(prefetch(
            VectorInternal::Dense(dense),
            DENSE_VECTOR,
            plan.candidates,
        ));
    }
    if let Some(sparse) = plan.sparse {
        prefetches.push(prefetch(
            VectorInternal::Sparse(sparse),
            SPARSE_VECTOR,
            plan.candidates,
        ));
    }
    Ok(QueryRequest {
        prefetches,
        query: Some(ScoringQuery::Fusion(Fusion::Rrf {
            k: RRF_K,
            weights: None,
        })),
        filter: Some(filter(plan.scope)?),
        score_threshold: None,
        limit: plan.limit,
        offset: 0,
        params: None,
        with_vector: WithVector::Bool(false),
        with_payload: WithPayloadInterface::Bool(true),
    })
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
