//! One model on its own thread behind a bounded queue, and texts fed to it batch by batch,
//! longest first: what the embedder and the late-interaction model share. Each call is split
//! into batches queued one at a time, so a short search query waits for at most one batch
//! of a large ingestion.

use std::future::Future;

use tessera_knowledge::EmbedError;
use tokio::sync::{mpsc, oneshot};

use crate::LoadError;

/// One input handed to the thread, with where its result goes.
struct Job<I, O> {
    input: I,
    reply: oneshot::Sender<Result<O, String>>,
}

/// The sending side of a model's thread; the thread ends when the last clone is dropped.
pub(crate) struct EncoderThread<I, O> {
    queue: mpsc::Sender<Job<I, O>>,
    name: &'static str,
}

impl<I, O> Clone for EncoderThread<I, O> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            name: self.name,
        }
    }
}

impl<I: Send + 'static, O: Send + 'static> EncoderThread<I, O> {
    /// Starts thread `name` running `work` on one input at a time, `capacity` inputs
    /// waiting at most; an input whose caller gave up is skipped.
    pub(crate) fn spawn(
        name: &'static str,
        capacity: usize,
        mut work: impl FnMut(I) -> Result<O, String> + Send + 'static,
    ) -> Result<Self, LoadError> {
        let (queue, mut jobs) = mpsc::channel::<Job<I, O>>(capacity);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Some(job) = jobs.blocking_recv() {
                    if job.reply.is_closed() {
                        continue;
                    }
                    let result = work(job.input);
                    if let Err(error) = &result {
                        tracing::warn!(%error, thread = name, "encoding failed");
                    }
                    let _ = job.reply.send(result);
                }
            })
            .map_err(|e| LoadError::Thread(e.to_string()))?;
        Ok(Self { queue, name })
    }

    /// `input`'s result, once the thread has run the inputs queued before it.
    pub(crate) async fn run(&self, input: I) -> Result<O, EmbedError> {
        let stopped = || EmbedError::Unavailable(format!("the {} thread has stopped", self.name));
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Job { input, reply })
            .await
            .map_err(|_| stopped())?;
        answer
            .await
            .map_err(|_| stopped())?
            .map_err(EmbedError::Unavailable)
    }
}

/// Runs `texts` through `encode` in batches of `batch_size`, longest first (so each batch
/// pads to a length close to all of its texts), and returns the results in the texts'
/// order. A batch answered with another number of results is an error, never a misaligned
/// answer.
pub(crate) async fn longest_first<T, F, Fut>(
    texts: Vec<String>,
    batch_size: usize,
    mut encode: F,
) -> Result<Vec<T>, EmbedError>
where
    F: FnMut(Vec<String>) -> Fut,
    Fut: Future<Output = Result<Vec<T>, EmbedError>>,
{
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
    let mut texts: Vec<Option<String>> = texts.into_iter().map(Some).collect();
    let mut results: Vec<Option<T>> = texts.iter().map(|_| None).collect();
    for positions in order.chunks(batch_size.max(1)) {
        let batch = positions
            .iter()
            .map(|&i| texts[i].take().unwrap_or_default())
            .collect();
        let encoded = encode(batch).await?;
        if encoded.len() != positions.len() {
            return Err(EmbedError::Unavailable(format!(
                "the encoder returned {} results for {} texts",
                encoded.len(),
                positions.len()
            )));
        }
        for (&i, result) in positions.iter().zip(encoded) {
            results[i] = Some(result);
        }
    }
    results
        .into_iter()
        .map(|result| {
            result.ok_or_else(|| EmbedError::Unavailable("a text was not encoded".into()))
        })
        .collect()
}
