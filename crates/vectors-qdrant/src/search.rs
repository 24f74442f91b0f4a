//! What a search runs, decided the same way by every adapter: which rankings (dense, BM25
//! or both), how many candidates each contributes, the RRF constant, the scope, and whether
//! late interaction reorders the fused candidates. Only the translation into an engine's
//! request differs between adapters.

use std::collections::HashSet;

use qdrant_edge::SparseVector;
use qdrant_edge::bm25_embed::EdgeBm25;
use tessera_knowledge::{FileId, IndexError, ScoredChunk, SearchMode, TokenVectors, VectorQuery};

use crate::scope::{Keyword, search_scope};
use crate::vectors::{LateLayout, check_dense, checked_late, query_sparse};

/// The RRF constant (the literature's 60: a rank's weight falls off gently, so agreement
/// between the two rankings counts more than the top of one).
pub(crate) const RRF_K: usize = 60;

/// How many candidates each ranking contributes to the fusion.
pub(crate) fn prefetch_limit(limit: usize) -> usize {
    limit.saturating_mul(4).max(40)
}

/// A search the engine has to run: one or two rankings fused by reciprocal rank (with one
/// ranking the fusion keeps its order), within the scope; with [`Rerank`], the fusion's
/// best candidates are then reordered by MaxSim.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SearchPlan {
    pub dense: Option<Vec<f32>>,
    pub sparse: Option<SparseVector>,
    pub scope: Vec<Keyword>,
    /// Hits returned.
    pub limit: usize,
    /// Candidates per ranking ([`prefetch_limit`] of the fused chunks wanted: `limit`, or
    /// the rerank's candidates).
    pub candidates: usize,
    pub rerank: Option<Rerank>,
}

/// Late interaction over the fusion: its best `candidates` chunks are ordered by MaxSim
/// between `query` and their [`crate::LATE_VECTOR`] multivectors (the engine's comparator).
/// The engine scores only chunks that have the multivector: see [`SearchPlan::fallback`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rerank {
    /// The query's token vectors ([`crate::LATE_DIMENSIONS`] values each, never empty).
    pub query: TokenVectors,
    /// Fused chunks reordered (at least the plan's `limit`).
    pub candidates: usize,
}

/// Checks the query and plans it; `None` when the answer is known to be empty without
/// asking the engine (limit 0, no files, or a words-only search without a single token).
/// Late interaction with empty query token vectors keeps the mode's order.
pub(crate) fn plan(
    bm25: &EdgeBm25,
    query: VectorQuery,
    dimensions: usize,
    late: &LateLayout,
) -> Result<Option<SearchPlan>, IndexError> {
    if query.mode != SearchMode::Sparse {
        check_dense(&query.dense, dimensions)?;
    }
    let rerank = match &query.late {
        Some(rerank) => {
            checked_late(Some(&rerank.query), late, "the query's")?.map(|tokens| Rerank {
                query: tokens.clone(),
                candidates: rerank.candidates.max(query.limit),
            })
        }
        None => None,
    };
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
    let fused = rerank
        .as_ref()
        .map_or(query.limit, |rerank| rerank.candidates);
    Ok(Some(SearchPlan {
        dense,
        sparse,
        scope,
        limit: query.limit,
        candidates: prefetch_limit(fused),
        rerank,
    }))
}

impl SearchPlan {
    /// After a reranked search returned `found` hits: when they are fewer than the limit,
    /// some candidates may lack token vectors (the engine's MaxSim skips them), so the
    /// fusion's candidates themselves are needed, to append those in the mode's order (see
    /// [`with_unscored`]). This is the plain fused search for them; `None` without a rerank
    /// or when the limit was reached.
    pub fn fallback(&self, found: usize) -> Option<SearchPlan> {
        let rerank = self.rerank.as_ref()?;
        (found < self.limit).then(|| SearchPlan {
            limit: rerank.candidates,
            rerank: None,
            ..self.clone()
        })
    }
}

/// The reranked hits, followed by the fused candidates they lack, in the fusion's order and
/// with its scores, up to `limit` hits in all.
pub(crate) fn with_unscored(
    mut scored: Vec<ScoredChunk>,
    fused: Vec<ScoredChunk>,
    limit: usize,
) -> Vec<ScoredChunk> {
    // The scope holds one organization: a file and an ordinal name one chunk.
    let seen: HashSet<(FileId, u32)> = (scored.iter())
        .map(|hit| (hit.file_id.clone(), hit.ordinal))
        .collect();
    let missing = fused
        .into_iter()
        .filter(|hit| !seen.contains(&(hit.file_id.clone(), hit.ordinal)));
    let room = limit.saturating_sub(scored.len());
    scored.extend(missing.take(room));
    scored
}

#[cfg(test)]
mod tests {
    use tessera_knowledge::{DatasetId, LateRerank};

    use super::*;
    use crate::fields::LATE_DIMENSIONS;
    use crate::vectors::bm25;

    const STORED: &LateLayout = &LateLayout::Stored;

    fn query(mode: SearchMode, text: &str, dense: Vec<f32>) -> VectorQuery {
        VectorQuery {
            organization: tessera_kernel::OrganizationId::generate(),
            dataset: Some(DatasetId::generate()),
            files: None,
            text: text.into(),
            dense,
            limit: 5,
            mode,
            late: None,
        }
    }

    fn tokens(dims: usize, count: usize) -> TokenVectors {
        TokenVectors::new(dims, vec![0.25; dims * count]).unwrap_or_default()
    }

    fn late(query: TokenVectors, candidates: usize) -> Option<LateRerank> {
        Some(LateRerank { query, candidates })
    }

    fn hit(file_id: &FileId, ordinal: u32, score: f32) -> ScoredChunk {
        ScoredChunk {
            file_id: file_id.clone(),
            ordinal,
            score,
            text: String::new(),
            location: tessera_knowledge::ChunkLocation {
                page: None,
                section: None,
                char_start: 0,
                char_end: 0,
            },
        }
    }

    #[test]
    fn modes_choose_their_rankings() -> Result<(), IndexError> {
        let bm25 = bm25()?;
        let hybrid = plan(
            &bm25,
            query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]),
            2,
            STORED,
        )?;
        let hybrid = hybrid.ok_or_else(|| IndexError::Invalid("no plan".into()))?;
        assert!(hybrid.dense.is_some() && hybrid.sparse.is_some());
        assert_eq!((hybrid.limit, hybrid.candidates), (5, 40));

        let dense = plan(
            &bm25,
            query(SearchMode::Dense, "walrus", vec![1.0, 0.0]),
            2,
            STORED,
        )?;
        assert!(dense.is_some_and(|plan| plan.sparse.is_none()));

        let sparse = plan(
            &bm25,
            query(SearchMode::Sparse, "walrus", Vec::new()),
            2,
            STORED,
        )?;
        assert!(sparse.is_some_and(|plan| plan.dense.is_none()));
        // No token and no dense side: nothing to ask.
        assert_eq!(
            plan(
                &bm25,
                query(SearchMode::Sparse, "?!", Vec::new()),
                2,
                STORED
            )?,
            None
        );
        Ok(())
    }

    #[test]
    fn known_empty_answers_and_bad_vectors() -> Result<(), IndexError> {
        let bm25 = bm25()?;
        let mut zero = query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]);
        zero.limit = 0;
        assert_eq!(plan(&bm25, zero, 2, STORED)?, None);
        let mut no_files = query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]);
        no_files.files = Some(Vec::<FileId>::new());
        assert_eq!(plan(&bm25, no_files, 2, STORED)?, None);
        assert!(matches!(
            plan(
                &bm25,
                query(SearchMode::Hybrid, "walrus", vec![1.0]),
                2,
                STORED
            ),
            Err(IndexError::Invalid(_))
        ));
        assert!(matches!(
            plan(
                &bm25,
                query(SearchMode::Dense, "", vec![f32::NAN, 0.0]),
                2,
                STORED
            ),
            Err(IndexError::Invalid(_))
        ));
        assert_eq!(prefetch_limit(100), 400);
        Ok(())
    }

    #[test]
    fn a_rerank_fuses_its_candidates_then_reorders_them() -> Result<(), IndexError> {
        let bm25 = bm25()?;
        let mut reranked = query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]);
        reranked.late = late(tokens(LATE_DIMENSIONS, 3), 20);
        let plan = plan(&bm25, reranked.clone(), 2, STORED)?
            .ok_or_else(|| IndexError::Invalid("no plan".into()))?;
        let rerank = plan
            .rerank
            .as_ref()
            .ok_or_else(|| IndexError::Invalid("no rerank".into()))?;
        assert_eq!((plan.limit, rerank.candidates), (5, 20));
        assert_eq!(rerank.query, tokens(LATE_DIMENSIONS, 3));
        // Each ranking contributes as for a plain search of the 20 candidates.
        assert_eq!(plan.candidates, prefetch_limit(20));

        // Fewer candidates than the limit: the limit's worth are reordered.
        reranked.late = late(tokens(LATE_DIMENSIONS, 3), 2);
        let few = super::plan(&bm25, reranked.clone(), 2, STORED)?;
        assert_eq!(
            few.and_then(|plan| plan.rerank).map(|r| r.candidates),
            Some(5)
        );

        // Empty query token vectors: the mode's order.
        reranked.late = late(TokenVectors::default(), 20);
        let plain = super::plan(&bm25, reranked.clone(), 2, STORED)?;
        assert!(plain.is_some_and(|plan| plan.rerank.is_none() && plan.candidates == 40));
        Ok(())
    }

    #[test]
    fn a_rerank_needs_token_vectors_of_the_width_and_an_index_with_them() -> Result<(), IndexError>
    {
        let bm25 = bm25()?;
        let mut reranked = query(SearchMode::Dense, "walrus", vec![1.0, 0.0]);
        reranked.late = late(tokens(LATE_DIMENSIONS + 1, 2), 20);
        assert!(matches!(
            plan(&bm25, reranked.clone(), 2, STORED),
            Err(IndexError::Invalid(_))
        ));
        reranked.late = late(tokens(LATE_DIMENSIONS, 2), 20);
        let missing = LateLayout::Missing("made before late interaction".into());
        assert_eq!(
            plan(&bm25, reranked.clone(), 2, &missing),
            Err(IndexError::Invalid("made before late interaction".into()))
        );
        // Without `late`, an index made before late interaction searches as ever.
        reranked.late = None;
        assert!(plan(&bm25, reranked, 2, &missing)?.is_some());
        Ok(())
    }

    #[test]
    fn the_fallback_appends_unscored_candidates_in_the_fusions_order() -> Result<(), IndexError> {
        let bm25 = bm25()?;
        let mut reranked = query(SearchMode::Hybrid, "walrus", vec![1.0, 0.0]);
        reranked.late = late(tokens(LATE_DIMENSIONS, 1), 8);
        let plan = plan(&bm25, reranked, 2, STORED)?
            .ok_or_else(|| IndexError::Invalid("no plan".into()))?;
        assert_eq!(plan.fallback(5), None, "the limit was reached");
        let fallback = plan
            .fallback(4)
            .ok_or_else(|| IndexError::Invalid("no fallback".into()))?;
        assert_eq!((fallback.limit, &fallback.rerank), (8, &None));
        assert_eq!(fallback.candidates, plan.candidates);
        assert_eq!(fallback.fallback(0), None, "no rerank, no fallback");

        let file = FileId::generate();
        let scored = vec![hit(&file, 4, 9.0), hit(&file, 1, 7.5)];
        let fused: Vec<_> = (0..6)
            .map(|n| hit(&file, n, 1.0 / (61.0 + n as f32)))
            .collect();
        let merged = with_unscored(scored, fused, 5);
        let order: Vec<u32> = merged.iter().map(|hit| hit.ordinal).collect();
        assert_eq!(order, vec![4, 1, 0, 2, 3]);
        assert_eq!(merged[2].score, 1.0 / 61.0, "the fusion's score");
        assert_eq!(with_unscored(Vec::new(), Vec::new(), 5), Vec::new());
        Ok(())
    }
}
