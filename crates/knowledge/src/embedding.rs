//! Dense text embeddings for semantic search.

use std::sync::Arc;

use async_trait::async_trait;

use crate::ChunkTokens;

/// Why texts could not be embedded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The engine or service failed or is unreachable; retrying later may help.
    #[error("the embedding model is unavailable: {0}")]
    Unavailable(String),
    /// The input cannot be embedded (retrying does not help).
    #[error("the text cannot be embedded: {0}")]
    Invalid(String),
}

/// Turns texts into unit-length vectors whose dot product is their cosine similarity.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model's name, stored with the index so vectors of different models never mix.
    fn model(&self) -> &str;

    /// The length of every vector.
    fn dimensions(&self) -> usize;

    /// One vector per text, in order. Long texts are truncated to what the model reads.
    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// The vector of a search query. Models trained for retrieval read queries with an
    /// instruction that passages do not get (bge's); by default a query is embedded as any
    /// text is.
    async fn embed_query(&self, query: String) -> Result<Vec<f32>, EmbedError> {
        self.embed(vec![query])
            .await?
            .pop()
            .ok_or_else(|| EmbedError::Unavailable("the embedding model returned no vector".into()))
    }

    /// How many tokens the model reads of `text`, when the embedder knows its tokenizer
    /// (usage records count with it; `None` lets the caller count another way).
    fn count_tokens(&self, _text: &str) -> Option<u32> {
        None
    }

    /// The tokens chunks for this model are sized in, when the embedder knows its tokenizer
    /// (`None`: chunks are sized in `cl100k_base` tokens).
    fn chunk_tokens(&self) -> Option<Arc<dyn ChunkTokens>> {
        None
    }
}

/// Stands in when no embedding model is configured: every call says so, so searches answer
/// 503 and processing workers are not started (queued files wait, nothing is lost).
#[derive(Debug, Clone, Default)]
pub struct NoEmbedder;

#[async_trait]
impl Embedder for NoEmbedder {
    fn model(&self) -> &str {
        "none"
    }

    fn dimensions(&self) -> usize {
        0
    }

    async fn embed(&self, _: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        Err(EmbedError::Unavailable(
            "no embedding model is configured (run `just models` and set models.local_dir)".into(),
        ))
    }
}
