//! OpenAI-compatible embeddings: the knowledge domain's `Embedder` port over
//! `POST …/embeddings`, for OpenAI, vLLM, Ollama, the llama.cpp server, LiteLLM, TEI's
//! OpenAI route and the like. Texts go in batches; every answer is checked (one vector per
//! text, in the input's order by `index`, of the configured length, finite) and normalized to
//! unit length, which the index's dot-product search relies on.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tessera_knowledge::{EmbedError, Embedder};
use tessera_llm_http::Upstream;

use crate::config::{ConfigError, OpenAiConfig};

const EMBEDDINGS: &str = "embeddings";

/// An embedding model behind an OpenAI-compatible endpoint.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    upstream: Upstream,
    model: String,
    dimensions: usize,
    batch_size: usize,
}

/// Why an embedder could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedderConfigError {
    #[error(transparent)]
    Endpoint(#[from] ConfigError),
    #[error("the embedding model name is empty")]
    Model,
    #[error("the embedding dimensions and batch size must be greater than zero")]
    Zero,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    input: &'a [String],
    encoding_format: &'static str,
}

#[derive(Deserialize)]
struct WireResponse {
    data: Vec<WireEmbedding>,
}

#[derive(Deserialize)]
struct WireEmbedding {
    index: Option<usize>,
    embedding: Vec<f32>,
}

/// The answer's vectors in input order and of unit length, or why the answer is unusable.
fn vectors(body: &[u8], expected: usize, dimensions: usize) -> Result<Vec<Vec<f32>>, String> {
    let answer: WireResponse = serde_json::from_slice(body)
        .map_err(|e| format!("the answer is not an embeddings response: {e}"))?;
    if answer.data.len() != expected {
        return Err(format!(
            "the server returned {} embeddings for {expected} texts",
            answer.data.len()
        ));
    }
    let mut ordered: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in answer.data.into_iter().enumerate() {
        let index = item.index.unwrap_or(position);
        let slot = ordered.get_mut(index).ok_or_else(|| {
            format!("embedding index {index} is out of range for {expected} texts")
        })?;
        if slot.is_some() {
            return Err(format!("embedding index {index} appears twice"));
        }
        let mut vector = item.embedding;
        if vector.len() != dimensions {
            return Err(format!(
                "an embedding has {} dimensions where {dimensions} are configured",
                vector.len()
            ));
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !norm.is_finite() || norm == 0.0 {
            return Err(format!("embedding {index} is zero or not finite"));
        }
        vector.iter_mut().for_each(|x| *x /= norm);
        *slot = Some(vector);
    }
    // Every slot is filled: as many items as texts, no index twice.
    Ok(ordered.into_iter().flatten().collect())
}

impl OpenAiEmbedder {
    /// `model` as the server names it; `dimensions` the length of its vectors (checked on
    /// every answer); texts are sent `batch_size` at a time. No request is made.
    pub fn new(
        config: &OpenAiConfig,
        model: impl Into<String>,
        dimensions: usize,
        batch_size: usize,
    ) -> Result<Self, EmbedderConfigError> {
        let model = model.into();
        if model.trim().is_empty() {
            return Err(EmbedderConfigError::Model);
        }
        if dimensions == 0 || batch_size == 0 {
            return Err(EmbedderConfigError::Zero);
        }
        Ok(Self {
            upstream: config.connect(EMBEDDINGS)?,
            model,
            dimensions,
            batch_size,
        })
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = serde_json::to_vec(&WireRequest {
            model: &self.model,
            input: texts,
            encoding_format: "float",
        })
        .map_err(|e| EmbedError::Invalid(format!("the request cannot be encoded: {e}")))?;
        // Whatever the server refuses is reported as unavailable, not invalid: a refusal is
        // far more often configuration (model name, key, quota) than content, and a file's
        // processing retries unavailable errors and then fails with the reason.
        let response = self
            .upstream
            .send(&body)
            .await
            .map_err(|e| EmbedError::Unavailable(format!("embeddings: {e}")))?;
        let bytes = tokio::time::timeout(self.upstream.idle_timeout(), response.bytes())
            .await
            .map_err(|_| EmbedError::Unavailable("embeddings: the answer stalled".into()))?
            .map_err(|e| EmbedError::Unavailable(format!("embeddings: reading the answer: {e}")))?;
        vectors(&bytes, texts.len(), self.dimensions)
            .map_err(|e| EmbedError::Unavailable(format!("embeddings: {e}")))
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut all = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            all.extend(self.embed_batch(batch).await?);
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
    }

    #[test]
    fn vectors_follow_their_index_and_are_normalized() {
        let body = br#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,2.0]},
            {"object":"embedding","index":0,"embedding":[3.0,4.0]}],"model":"m"}"#;
        let got = vectors(body, 2, 2).unwrap();
        assert!(approx(&got[0], &[0.6, 0.8]), "{got:?}");
        assert!(approx(&got[1], &[0.0, 1.0]), "{got:?}");
        // Without indexes, the order of the list.
        let plain = br#"{"data":[{"embedding":[1.0,0.0]},{"embedding":[0.0,1.0]}]}"#;
        assert_eq!(
            vectors(plain, 2, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
    }

    #[test]
    fn unusable_answers_say_why() {
        let cases: [(&[u8], &str); 7] = [
            (b"<html>", "not an embeddings response"),
            (br#"{"data":[{"index":0,"embedding":[1.0,0.0]}]}"#, "returned 1 embeddings for 2 texts"),
            (br#"{"data":[{"index":0,"embedding":[1.0]},{"index":1,"embedding":[1.0]}]}"#, "1 dimensions where 2"),
            (br#"{"data":[{"index":0,"embedding":[1.0,0.0]},{"index":0,"embedding":[0.0,1.0]}]}"#, "index 0 appears twice"),
            (br#"{"data":[{"index":0,"embedding":[1.0,0.0]},{"index":5,"embedding":[0.0,1.0]}]}"#, "index 5 is out of range"),
            (br#"{"data":[{"index":0,"embedding":[0.0,0.0]},{"index":1,"embedding":[0.0,1.0]}]}"#, "zero or not finite"),
            (br#"{"error":{"message":"nope"}}"#, "not an embeddings response"),
        ];
        for (body, expected) in cases {
            let error = vectors(body, 2, 2).unwrap_err();
            assert!(error.contains(expected), "{error} (wanted {expected})");
        }
    }

    #[test]
    fn bad_configurations_are_refused() {
        let config = OpenAiConfig::new("http://127.0.0.1:1/v1");
        assert_eq!(
            OpenAiEmbedder::new(&config, " ", 4, 8).err(),
            Some(EmbedderConfigError::Model)
        );
        assert_eq!(
            OpenAiEmbedder::new(&config, "m", 0, 8).err(),
            Some(EmbedderConfigError::Zero)
        );
        assert!(matches!(
            OpenAiEmbedder::new(&OpenAiConfig::new("ftp://x"), "m", 4, 8),
            Err(EmbedderConfigError::Endpoint(ConfigError::BaseUrl { .. }))
        ));
        let embedder = OpenAiEmbedder::new(&config, "text-embedding-3-small", 1536, 64).unwrap();
        assert_eq!(
            embedder.upstream.endpoint().as_str(),
            "http://127.0.0.1:1/v1/embeddings"
        );
        assert_eq!(
            (embedder.model(), embedder.dimensions()),
            ("text-embedding-3-small", 1536)
        );
    }
}
