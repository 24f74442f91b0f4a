//! An embedder that counts its batches and texts and times each batch, wrapped around the
//! configured one (embedded or remote) where the app builds it.

use std::{sync::Arc, time::Instant};

use async_trait::async_trait;
use tessera_knowledge::{EmbedError, Embedder};

use super::names;

pub struct MeteredEmbedder(pub Arc<dyn Embedder>);

#[async_trait]
impl Embedder for MeteredEmbedder {
    fn model(&self) -> &str {
        self.0.model()
    }

    fn dimensions(&self) -> usize {
        self.0.dimensions()
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let count = texts.len() as u64;
        let started = Instant::now();
        let embedded = self.0.embed(texts).await;
        metrics::histogram!(names::EMBEDDING_DURATION).record(started.elapsed().as_secs_f64());
        let outcome = if embedded.is_ok() { "ok" } else { "error" };
        metrics::counter!(names::EMBEDDING_BATCHES, "outcome" => outcome).increment(1);
        if embedded.is_ok() {
            metrics::counter!(names::EMBEDDING_TEXTS).increment(count);
        }
        embedded
    }

    fn count_tokens(&self, text: &str) -> Option<u32> {
        self.0.count_tokens(text)
    }
}
