//! The [`Reranker`] adapter: one cross-encoder on its own thread, fed one query's passages
//! at a time in batches of similar length.

use std::{path::Path, sync::Arc};

use async_trait::async_trait;
use tessera_knowledge::{RerankError, Reranker};
use tokio::sync::{mpsc, oneshot};

use crate::{LoadError, Precision, cross_encoder::CrossEncoder};

/// How the cross-encoder reads and batches pairs.
#[derive(Debug, Clone)]
pub struct LocalRerankerOptions {
    /// The name the scores are known by.
    pub name: String,
    /// Tokens read of a query and passage together (the longer is cut first).
    pub max_tokens: usize,
    /// Pairs per forward pass.
    pub batch_size: usize,
    /// Queries waiting for the model before callers wait to hand theirs over.
    pub queue: usize,
    /// The arithmetic of the dense layers.
    pub precision: Precision,
}

impl Default for LocalRerankerOptions {
    fn default() -> Self {
        Self {
            name: "ms-marco-MiniLM-L-12-v2".into(),
            max_tokens: 256,
            batch_size: 16,
            queue: 16,
            precision: Precision::Auto,
        }
    }
}

/// One query's passages handed to the model's thread.
struct Request {
    query: String,
    passages: Vec<String>,
    reply: oneshot::Sender<Result<Vec<f32>, String>>,
}

/// A cross-encoder computed in this process.
#[derive(Clone)]
pub struct LocalReranker {
    queue: mpsc::Sender<Request>,
    options: Arc<LocalRerankerOptions>,
}

impl std::fmt::Debug for LocalReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalReranker")
            .field("name", &self.options.name)
            .finish_non_exhaustive()
    }
}

impl LocalReranker {
    /// Loads the cross-encoder from `dir` (see [`crate::find_reranker_dir`]) and starts its
    /// thread, which ends when the last clone is dropped. Blocking: call it at startup or
    /// from `spawn_blocking`.
    pub fn load(dir: &Path, options: LocalRerankerOptions) -> Result<Self, LoadError> {
        if options.batch_size == 0 || options.queue == 0 || options.max_tokens < 4 {
            return Err(LoadError::Model(
                "batch_size and queue must be positive and max_tokens at least 4".into(),
            ));
        }
        let model = CrossEncoder::load(dir, options.max_tokens, options.precision.kernel())?;
        tracing::info!(
            model = %options.name,
            kernel = options.precision.kernel_name(),
            "reranking model loaded"
        );
        let (queue, requests) = mpsc::channel(options.queue);
        let batch_size = options.batch_size;
        std::thread::Builder::new()
            .name("tessera-rerank".into())
            .spawn(move || serve(&model, requests, batch_size))
            .map_err(|e| LoadError::Thread(e.to_string()))?;
        Ok(Self {
            queue,
            options: Arc::new(options),
        })
    }
}

/// The model's thread: one query at a time until every sender is gone; a query whose
/// caller gave up is skipped.
fn serve(model: &CrossEncoder, mut requests: mpsc::Receiver<Request>, batch_size: usize) {
    while let Some(request) = requests.blocking_recv() {
        if request.reply.is_closed() {
            continue;
        }
        let result = score_all(model, &request.query, &request.passages, batch_size);
        if let Err(error) = &result {
            tracing::warn!(%error, passages = request.passages.len(), "reranking failed");
        }
        let _ = request.reply.send(result);
    }
}

/// Every passage's score, in order: longest first in batches, so each batch pads to a
/// length close to all of its pairs.
fn score_all(
    model: &CrossEncoder,
    query: &str,
    passages: &[String],
    batch_size: usize,
) -> Result<Vec<f32>, String> {
    let mut order: Vec<usize> = (0..passages.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(passages[i].len()));
    let mut scores = vec![0.0; passages.len()];
    for positions in order.chunks(batch_size) {
        let batch: Vec<&str> = positions.iter().map(|&i| passages[i].as_str()).collect();
        let scored = model.score(query, &batch)?;
        if scored.len() != batch.len() {
            return Err(format!(
                "the model scored {} of {} passages",
                scored.len(),
                batch.len()
            ));
        }
        for (&i, score) in positions.iter().zip(scored) {
            scores[i] = score;
        }
    }
    Ok(scores)
}

#[async_trait]
impl Reranker for LocalReranker {
    fn model(&self) -> &str {
        &self.options.name
    }

    async fn score(&self, query: &str, passages: Vec<String>) -> Result<Vec<f32>, RerankError> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let stopped = || RerankError::Unavailable("the reranking thread has stopped".into());
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Request {
                query: query.to_owned(),
                passages,
                reply,
            })
            .await
            .map_err(|_| stopped())?;
        answer
            .await
            .map_err(|_| stopped())?
            .map_err(RerankError::Unavailable)
    }
}
