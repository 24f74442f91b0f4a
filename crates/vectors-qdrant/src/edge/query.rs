//! A [`SearchPlan`] as a qdrant-edge query: dense and BM25 prefetches (either or both) fused
//! by reciprocal rank, and with a rerank, that fusion as the prefetch of a MaxSim query on
//! the token vectors.

use qdrant_edge::{
    Fusion, NamedQuery, Prefetch, QueryEnum, QueryRequest, ScoringQuery, TypedMultiDenseVector,
    VectorInternal, WithPayloadInterface, WithVector,
};
use tessera_knowledge::IndexError;

use super::filter::filter;
use crate::fields::{DENSE_VECTOR, LATE_VECTOR, SPARSE_VECTOR};
use crate::search::{RRF_K, SearchPlan};

/// The request. The filter sits on the root, which qdrant-edge applies to every leaf
/// prefetch, so both rankings only ever see the allowed chunks (and the rerank only their
/// fusion's).
pub(crate) fn search_request(plan: SearchPlan) -> Result<QueryRequest, IndexError> {
    let mut rankings = Vec::with_capacity(2);
    if let Some(dense) = plan.dense {
        rankings.push(prefetch(
            VectorInternal::Dense(dense),
            DENSE_VECTOR,
            plan.candidates,
        ));
    }
    if let Some(sparse) = plan.sparse {
        rankings.push(prefetch(
            VectorInternal::Sparse(sparse),
            SPARSE_VECTOR,
            plan.candidates,
        ));
    }
    let fusion = ScoringQuery::Fusion(Fusion::Rrf {
        k: RRF_K,
        weights: None,
    });
    let (prefetches, query) = match plan.rerank {
        None => (rankings, fusion),
        Some(rerank) => {
            let fused = Prefetch {
                prefetches: rankings,
                query: Some(fusion),
                limit: rerank.candidates,
                params: None,
                filter: None,
                score_threshold: None,
            };
            let tokens = TypedMultiDenseVector::try_from_flatten(
                rerank.query.values().to_vec(),
                rerank.query.dims(),
            )
            .map_err(|error| IndexError::Invalid(format!("the query's token vectors: {error}")))?;
            (
                vec![fused],
                nearest(VectorInternal::MultiDense(tokens), LATE_VECTOR),
            )
        }
    };
    Ok(QueryRequest {
        prefetches,
        query: Some(query),
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
        query: Some(nearest(vector, using)),
        limit,
        params: None,
        filter: None,
        score_threshold: None,
    }
}

fn nearest(vector: VectorInternal, using: &str) -> ScoringQuery {
    ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(vector, using)))
}
