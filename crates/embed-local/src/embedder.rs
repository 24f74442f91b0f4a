//! The [`Embedder`] adapter: one encoder on its own thread, fed batch by batch.

use std::{path::Path, sync::Arc};

use crate::{
    LoadError, LocalEmbeddingModel, Precision,
    encoder_thread::{EncoderThread, longest_first},
    model::SentenceEncoder,
    word_pieces::WordPieces,
};
use async_trait::async_trait;
use tessera_knowledge::{ChunkTokens, EmbedError, Embedder};

/// Which model runs, and how it reads and batches texts.
#[derive(Debug, Clone)]
pub struct LocalEmbedderOptions {
    /// The model (its name is the vectors' name).
    pub model: LocalEmbeddingModel,
    /// Tokens read of each text; the rest is ignored (`None`: the model's own setting; the
    /// model's position limit caps it either way).
    pub max_tokens: Option<usize>,
    /// Texts per forward pass.
    pub batch_size: usize,
    /// Batches waiting for the encoder before callers wait to hand theirs over.
    pub queue: usize,
    /// The arithmetic of the dense layers ([`Precision::Auto`]: 8-bit where the CPU has
    /// AVX-512 VNNI or AVX2).
    pub precision: Precision,
}

impl Default for LocalEmbedderOptions {
    fn default() -> Self {
        Self {
            model: LocalEmbeddingModel::default(),
            max_tokens: None,
            batch_size: 32,
            queue: 16,
            precision: Precision::Auto,
        }
    }
}

/// Sentence embeddings computed in this process.
///
/// Each call is split into batches of similar length (little padding) that are queued one at
/// a time; batches of concurrent calls share forward passes, and a search query goes before
/// every waiting batch, so it waits for at most the forward pass under way.
#[derive(Clone)]
pub struct LocalEmbedder {
    thread: EncoderThread<(), Vec<f32>>,
    /// Counts tokens for usage records without a trip to the encoder thread.
    tokenizer: Arc<tokenizers::Tokenizer>,
    /// The unit chunks for this model are sized in.
    word_pieces: Arc<WordPieces>,
    options: Arc<LocalEmbedderOptions>,
    dimensions: usize,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model", &self.options.model)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl LocalEmbedder {
    /// Loads the model from `dir` (its config, tokenizer and weights: see
    /// [`LocalEmbeddingModel::find`]) and starts its thread, which ends when the last clone
    /// is dropped. Blocking: call it at startup or from `spawn_blocking`.
    pub fn load(dir: &Path, options: LocalEmbedderOptions) -> Result<Self, LoadError> {
        let max_tokens = (options.max_tokens).unwrap_or_else(|| options.model.max_tokens());
        if options.batch_size == 0 || options.queue == 0 || max_tokens < 2 {
            return Err(LoadError::Model(
                "batch_size and queue must be positive and max_tokens at least 2".into(),
            ));
        }
        let kernel = options.precision.kernel();
        let encoder = SentenceEncoder::load(dir, options.model, max_tokens, kernel)?;
        tracing::info!(
            model = options.model.name(),
            kernel = options.precision.kernel_name(),
            "embedding model loaded"
        );
        let dimensions = encoder.dimensions();
        let tokenizer = Arc::new(encoder.tokenizer());
        let word_pieces = Arc::new(WordPieces::new(encoder.tokenizer()).map_err(LoadError::Model)?);
        let thread = EncoderThread::spawn(
            "tessera-embed",
            options.queue,
            options.batch_size,
            move |(), texts: Vec<String>| {
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                encoder.embed(&texts)
            },
        )?;
        Ok(Self {
            thread,
            tokenizer,
            word_pieces,
            options: Arc::new(options),
            dimensions,
        })
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        self.options.model.name()
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn count_tokens(&self, text: &str) -> Option<u32> {
        let encoding = self.tokenizer.encode(text, true).ok()?;
        u32::try_from(encoding.get_ids().len()).ok()
    }

    fn chunk_tokens(&self) -> Option<Arc<dyn ChunkTokens>> {
        Some(self.word_pieces.clone())
    }

    async fn embed_query(&self, query: String) -> Result<Vec<f32>, EmbedError> {
        let instruction = self.options.model.query_instruction();
        let query = if instruction.is_empty() {
            query
        } else {
            format!("{instruction}{query}")
        };
        let mut vectors = self.thread.run_first((), vec![query]).await?;
        vectors
            .pop()
            .ok_or_else(|| EmbedError::Unavailable("the encoder returned no vector".into()))
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        longest_first(texts, self.options.batch_size, |batch| {
            self.thread.run((), batch)
        })
        .await
    }
}
