//! Reranking: a cross-encoder reads the query together with each candidate passage and
//! scores how well the passage answers it, which rank fusion of separately computed
//! rankings cannot. Search hands it the fused top candidates and orders the hits by its
//! scores.

use std::sync::Arc;

use async_trait::async_trait;

/// Why passages could not be reranked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RerankError {
    /// The model failed or stopped; retrying later may help.
    #[error("the reranking model is unavailable: {0}")]
    Unavailable(String),
}

/// Scores passages against a query.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Reranker: Send + Sync {
    /// The model's name.
    fn model(&self) -> &str;

    /// How relevant each passage is to the query, in the passages' order: 0 to 1, higher is
    /// more relevant. Long passages are cut to what the model reads.
    async fn score(&self, query: &str, passages: Vec<String>) -> Result<Vec<f32>, RerankError>;
}

/// Search's reranking stage: the model, and how many of the fused candidates it reads (the
/// hits returned are the best of those).
#[derive(Clone)]
pub struct Reranking {
    pub reranker: Arc<dyn Reranker>,
    /// At least the search's limit is read.
    pub candidates: usize,
}

impl std::fmt::Debug for Reranking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reranking")
            .field("model", &self.reranker.model())
            .field("candidates", &self.candidates)
            .finish()
    }
}
