//! What a search runs, decided the same way by every adapter: which rankings (dense, BM25
//! or both), how many candidates each contributes, the RRF constant, and the scope. Only the
//! translation into an engine's request differs between adapters.

use qdrant_edge::SparseVector;
use qdrant_edge::bm25_embed::EdgeBm25;
use tessera_knowledge::{IndexError, SearchMode, VectorQuery};

use crate::scope::{Keyword, search_scope};
use crate::vectors::{check_dense, query_sparse};

/// The RRF constant (the literature's 60: a rank's weight falls off gently, so agreement
/// between the two rankings counts more than the top of one).
pub(crate) const RRF_K: usize = 60;

/// How many candidates each ranking contributes to the fusion.
pub(crate) fn prefetch_limit(limit: usize) -> usize {
    limit.saturating_mul(4).max(40)
}

/// A search the engine has to run: one or two rankings fused by reciprocal rank (with one
/// ranking the fusion keeps its order), within the scope.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SearchPlan {
    pub dense: Option<Vec<f32>>,
    pub sparse: Option<SparseVector>,
    pub scope: Vec<Keyword>,
    pub limit: usize,
    /// Candidates per ranking ([`prefetch_limit`]).
    pub candidates: usize,
}

/// Checks the query and plans it; `None` when the answer is known to be empty without
/// asking the engine (limit 0, no files, or a words-only search without a single token).
pub(crate) fn plan(
    bm25: &EdgeBm25,
    query: VectorQuery,
    dimensions: usize,
) -> Result<Option<SearchPlan>, IndexError> {
    if query.mode != SearchMode::Sparse {
        check_dense(&query.dense, dimensions)?;
    }
    if query.limit == 0 || query.files.as_ref().is_some_and(Vec::is_empty) {
        return Ok(None);
    }
    let scope = search_scope(
        &query.organization,
        query.dataset.as_ref(),
        query.files.as_deref(),
    );
    let dense = (query.mode != SearchMode::Sparse).then_some(query.dense);
    let sparse = match query.mode {
        SearchMode::Dense => None,
        SearchMode::Hybrid | SearchMode::Sparse => query_sparse(bm25, &query.text),
    };
    if dense.is_none() && sparse.is_none() {
        // A words-only search for words the index has never seen.
        return Ok(None);
    }
    Ok(Some(SearchPlan {
        dense,
        sparse,
        scope,
        limit: query.limit,
        candidates: prefetch_limit(query.limit),
    }))
}

#[cfg(test)]
mod tests {
    use tessera_knowledge::{DatasetId, FileId};

    use super::*;
    use crate::vectors::bm25;

    fn query(mode: SearchMode, text: &str, dense: Vec<f32>) -> VectorQuery {
        VectorQuery {
            organization: tessera_kernel::OrganizationId::generate(),
            dataset: Some(DatasetId::generate()),
            files: None,
            text: text.into(),
            dense,
            limit: 5,
            mode,
        }
    }

    #[test]
    fn modes_choose_their_rankings() -> Result<(), IndexError> {
        let bm25 = bm25()?;
        let hybrid = plan(
            &bm25,
            query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]),
            2,
        )?;
        let hybrid = hybrid.ok_or_else(|| IndexError::Invalid("no plan".into()))?;
        assert!(hybrid.dense.is_some() && hybrid.sparse.is_some());
        assert_eq!((hybrid.limit, hybrid.candidates), (5, 40));

        let dense = plan(&bm25, query(SearchMode::Dense, "walrus", vec![1.0, 0.0]), 2)?;
        assert!(dense.is_some_and(|plan| plan.sparse.is_none()));

        let sparse = plan(&bm25, query(SearchMode::Sparse, "walrus", Vec::new()), 2)?;
        assert!(sparse.is_some_and(|plan| plan.dense.is_none()));
        // No token and no dense side: nothing to ask.
        assert_eq!(
            plan(&bm25, query(SearchMode::Sparse, "?!", Vec::new()), 2)?,
            None
        );
        Ok(())
    }

    #[test]
    fn known_empty_answers_and_bad_vectors() -> Result<(), IndexError> {
        let bm25 = bm25()?;
        let mut zero = query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]);
        zero.limit = 0;
        assert_eq!(plan(&bm25, zero, 2)?, None);
        let mut no_files = query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]);
        no_files.files = Some(Vec::<FileId>::new());
        assert_eq!(plan(&bm25, no_files, 2)?, None);
        assert!(matches!(
            plan(&bm25, query(SearchMode::Hybrid, "walrus", vec![1.0]), 2),
            Err(IndexError::Invalid(_))
        ));
        assert!(matches!(
            plan(&bm25, query(SearchMode::Dense, "", vec![f32::NAN, 0.0]), 2),
            Err(IndexError::Invalid(_))
        ));
        assert_eq!(prefetch_limit(100), 400);
        Ok(())
    }
}
