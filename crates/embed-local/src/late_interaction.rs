//! The [`LateInteraction`] adapter: one token encoder on its own thread, fed batch by batch
//! as the sentence embedder is.

use std::{path::Path, sync::Arc};

use crate::{
    LoadError, LocalLateInteractionModel, Precision,
    encoder_thread::{EncoderThread, longest_first},
    token_encoder::{Role, TokenEncoder},
};
use async_trait::async_trait;
use tessera_knowledge::{EmbedError, LateInteraction, TokenVectors};

/// Which model runs, how wide its token vectors are, and how it reads and batches texts.
#[derive(Debug, Clone)]
pub struct LocalLateInteractionOptions {
    /// The model (its name is the vectors' name).
    pub model: LocalLateInteractionModel,
    /// The values kept of each token's state (its first ones, then scaled to unit length):
    /// 384, all of answerai-colbert-small-v1's, or 128, a third of the storage.
    pub dims: usize,
    /// Tokens read of a query, markers included (`None`: the model's own setting).
    pub query_tokens: Option<usize>,
    /// Tokens read of a passage, markers included (`None`: the model's own setting).
    pub document_tokens: Option<usize>,
    /// Passages per forward pass.
    pub batch_size: usize,
    /// Batches waiting for the encoder before callers wait to hand theirs over.
    pub queue: usize,
    /// The arithmetic of the dense layers ([`Precision::Auto`]: 8-bit where the CPU has
    /// AVX-512 VNNI or AVX2).
    pub precision: Precision,
}

impl Default for LocalLateInteractionOptions {
    fn default() -> Self {
        Self {
            model: LocalLateInteractionModel::default(),
            dims: 384,
            query_tokens: None,
            document_tokens: None,
            batch_size: 32,
            queue: 16,
            precision: Precision::Auto,
        }
    }
}

/// Late-interaction token vectors computed in this process.
///
/// As with [`crate::LocalEmbedder`], each call is split into batches of similar length that
/// are queued one at a time and share forward passes with concurrent calls; a search
/// query waits for at most the forward pass under way.
#[derive(Clone)]
pub struct LocalLateInteraction {
    thread: EncoderThread<Role, TokenVectors>,
    options: Arc<LocalLateInteractionOptions>,
    dims: usize,
}

impl std::fmt::Debug for LocalLateInteraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLateInteraction")
            .field("model", &self.options.model)
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

impl LocalLateInteraction {
    /// Loads the model from `dir` (see [`LocalLateInteractionModel::find`]) and starts its
    /// thread, which ends when the last clone is dropped. Blocking: call it at startup or
    /// from `spawn_blocking`.
    pub fn load(dir: &Path, options: LocalLateInteractionOptions) -> Result<Self, LoadError> {
        let model = options.model;
        let query_tokens = options.query_tokens.unwrap_or_else(|| model.query_tokens());
        let document_tokens = (options.document_tokens).unwrap_or_else(|| model.document_tokens());
        if options.batch_size == 0 || options.queue == 0 || query_tokens.min(document_tokens) < 3 {
            return Err(LoadError::Model(
                "batch_size and queue must be positive and a text read as at least 3 tokens".into(),
            ));
        }
        let kernel = options.precision.kernel();
        let encoder = TokenEncoder::load(
            dir,
            model,
            (query_tokens, document_tokens),
            options.dims,
            kernel,
        )?;
        tracing::info!(
            model = model.name(),
            dims = options.dims,
            kernel = options.precision.kernel_name(),
            "late-interaction model loaded"
        );
        let dims = encoder.dims();
        let thread = EncoderThread::spawn(
            "tessera-late-interaction",
            options.queue,
            options.batch_size,
            move |role: &Role, texts: Vec<String>| {
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                encoder.encode(&texts, *role)
            },
        )?;
        Ok(Self {
            thread,
            options: Arc::new(options),
            dims,
        })
    }
}

#[async_trait]
impl LateInteraction for LocalLateInteraction {
    fn model(&self) -> &str {
        self.options.model.name()
    }

    fn dims(&self) -> usize {
        self.dims
    }

    async fn encode_documents(&self, texts: Vec<String>) -> Result<Vec<TokenVectors>, EmbedError> {
        longest_first(texts, self.options.batch_size, |batch| {
            self.thread.run(Role::Document, batch)
        })
        .await
    }

    async fn encode_query(&self, query: String) -> Result<TokenVectors, EmbedError> {
        self.thread
            .run_first(Role::Query, vec![query])
            .await?
            .pop()
            .ok_or_else(|| EmbedError::Unavailable("the encoder returned no vectors".into()))
    }
}
