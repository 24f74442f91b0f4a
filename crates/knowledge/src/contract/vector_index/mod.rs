//! The `VectorIndex` contract, for anyone implementing the port: each check states promises
//! of the trait against an [`IndexUnderTest`], and
//! [`vector_index_contract!`](crate::vector_index_contract) turns them into tests. Dense,
//! BM25 and hybrid rankings (fused by reciprocal rank) each rank by their own signal; the
//! organization, dataset and file scopes hold, also after `set_datasets` and `delete_file`;
//! an upsert replaces a chunk; vectors of the wrong width are `Invalid` and store nothing of
//! their batch; late interaction reorders the mode's best candidates by MaxSim, those
//! without token vectors following; searches and upserts run concurrently. Every check
//! works in freshly generated organizations, so checks may share one index (a server's
//! collection) or get one each. Tessera runs it against qdrant-edge and, when `QDRANT_URL`
//! names one, a Qdrant server (`tessera-vectors-qdrant`'s tests). The data builders are
//! public, for an adapter's own checks beyond the contract.

mod data;
mod late;
mod ranking;
mod scope;

use std::sync::Arc;

pub use self::{data::*, late::*, ranking::*, scope::*};
use crate::{TokenVectors, VectorIndex, max_sim};

/// The dense dimensions every index under test is opened with.
pub const DIMENSIONS: usize = 16;

/// The narrowest token vectors the late-interaction checks can be written in (their tokens
/// use the first 13 values).
pub const MIN_LATE_DIMENSIONS: usize = 16;

/// Runs every check of the `VectorIndex` contract as a `#[tokio::test]` of the calling
/// crate, each on its own index made by `$factory`: an expression that, called with no
/// argument, gives a future of `(index, guard)`, `index` an
/// [`IndexUnderTest`](crate::contract::vector_index::IndexUnderTest) (the guard, e.g. a
/// temporary directory, is dropped after the index, which may flush into it).
///
/// `vector_index_contract!(@in_sequence $factory)` instead runs every check in turn inside
/// the test that calls it, each on a fresh index: for an adapter whose tests decide at run
/// time whether they can run (a server named by an environment variable).
#[macro_export]
macro_rules! vector_index_contract {
    (@in_sequence $factory:expr) => {
        $crate::vector_index_contract! { @checks in_sequence $factory }
    };
    // The one list of the contract's checks, run in the named way.
    (@checks $mode:ident $factory:expr) => {
        $crate::__adapter_contract_checks! { $mode $factory, vector_index;
            dense_query_ranks_the_closest_chunk_first,
            bm25_finds_a_rare_keyword_when_the_dense_vector_is_uninformative,
            fusion_keeps_both_the_dense_and_the_keyword_favourite,
            each_mode_ranks_by_its_own_signal,
            a_query_without_tokens_searches_dense_only,
            organizations_are_isolated,
            dataset_filter_follows_set_datasets,
            file_filter_limits_to_the_given_files,
            delete_file_removes_only_that_file,
            upserting_the_same_chunk_replaces_it,
            wrong_dimensions_are_invalid,
            empty_index_and_zero_limit_return_nothing,
            limit_caps_the_hits_best_first,
            concurrent_searches_and_upserts,
            late_interaction_reorders_the_candidates_by_maxsim,
            late_interaction_agrees_with_brute_force_maxsim,
            chunks_without_token_vectors_follow_the_scored_ones,
            late_interaction_keeps_the_scope,
            token_vectors_of_another_width_are_invalid,
        }
    };
    ($factory:expr) => {
        $crate::vector_index_contract! { @checks tests $factory }
    };
}

/// An index the checks run on, with what they must know of it beyond the port.
#[derive(Clone)]
pub struct IndexUnderTest {
    /// Opened with [`DIMENSIONS`] dense dimensions.
    pub index: Arc<dyn VectorIndex>,
    /// The width of the token vectors it was opened with.
    pub late_dimensions: usize,
    /// Token vectors as the index stores and compares them: the brute-force MaxSim its
    /// scores are held to is computed on these (a copy for an index keeping `f32` values,
    /// rounded for one storing float16).
    pub stored_tokens: fn(&TokenVectors) -> TokenVectors,
}

impl IndexUnderTest {
    /// `index`, holding token vectors of `late_dimensions` values (at least
    /// [`MIN_LATE_DIMENSIONS`]) as given.
    pub fn new(index: Arc<dyn VectorIndex>, late_dimensions: usize) -> Self {
        assert!(
            late_dimensions >= MIN_LATE_DIMENSIONS,
            "the late-interaction checks need token vectors of at least \
             {MIN_LATE_DIMENSIONS} values, the index holds {late_dimensions}"
        );
        Self {
            index,
            late_dimensions,
            stored_tokens: TokenVectors::clone,
        }
    }

    /// The same index, storing token vectors as `stored_tokens` makes them.
    #[must_use]
    pub fn storing_tokens_as(self, stored_tokens: fn(&TokenVectors) -> TokenVectors) -> Self {
        Self {
            stored_tokens,
            ..self
        }
    }

    /// MaxSim of `query` over `document` as the index computes it: on the vectors it stores.
    pub fn expected_max_sim(&self, query: &TokenVectors, document: &TokenVectors) -> f32 {
        max_sim(
            &(self.stored_tokens)(query),
            &(self.stored_tokens)(document),
        )
    }
}
