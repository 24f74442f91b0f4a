//! An embedder that counts its batches and texts and times each batch, wrapped around the
//! configured one (embedded or remote) where the app builds it.

use std::{sync::Arc, time::Instant};

use async_trait::async_trait;
use tessera_knowledge::{ChunkTokens, EmbedError, Embedder};

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
        record(started, embedded.is_ok(), count);
        embedded
    }

    async fn embed_query(&self, query: String) -> Result<Vec<f32>, EmbedError> {
        let started = Instant::now();
        let embedded = self.0.embed_query(query).await;
        record(started, embedded.is_ok(), 1);
        embedded
    }

    fn count_tokens(&self, text: &str) -> Option<u32> {
        self.0.count_tokens(text)
    }

    fn chunk_tokens(&self) -> Option<Arc<dyn ChunkTokens>> {
        self.0.chunk_tokens()
    }
}

/// One batch's time, its outcome and (when it succeeded) its texts.
fn record(started: Instant, succeeded: bool, texts: u64) {
    metrics::histogram!(names::EMBEDDING_DURATION).record(started.elapsed().as_secs_f64());
    let outcome = if succeeded { "ok" } else { "error" };
    metrics::counter!(names::EMBEDDING_BATCHES, "outcome" => outcome).increment(1);
    if succeeded {
        metrics::counter!(names::EMBEDDING_TEXTS).increment(texts);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use tessera_knowledge::{EmbedError, Embedder, NoEmbedder};

    use super::MeteredEmbedder;
    use crate::tests::{ready, recorder, recording};

    struct Zeros;

    #[async_trait]
    impl Embedder for Zeros {
        fn model(&self) -> &str {
            "zeros"
        }

        fn dimensions(&self) -> usize {
            2
        }

        async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts.iter().map(|_| vec![0.0; 2]).collect())
        }
    }

    #[test]
    fn batches_are_counted_by_outcome_and_texts_when_embedded() {
        let working = MeteredEmbedder(Arc::new(Zeros));
        let failing = MeteredEmbedder(Arc::new(NoEmbedder));
        let recorder = recorder();
        let text = recording(&recorder, || {
            let texts = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
            assert!(ready(working.embed(texts.clone())).is_ok());
            assert!(ready(failing.embed(texts)).is_err());
        });
        for line in [
            r#"tessera_embedding_batches_total{outcome="ok"} 1"#,
            r#"tessera_embedding_batches_total{outcome="error"} 1"#,
            "tessera_embedding_texts_total 3",
            "tessera_embedding_batch_duration_seconds_count 2",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
    }
}
