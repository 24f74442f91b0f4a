//! One model on its own thread behind a bounded queue, and texts fed to it batch by batch,
//! longest first: what the embedder and the late-interaction model share.
//!
//! Jobs queued together by different callers (several files processed at once, each with a
//! few chunks) share one forward pass, up to the batch size, so small files cost per text
//! what large ones do. A search query goes first: it waits for the forward pass under way,
//! never for the ingestion batches queued behind it, and shares a pass only with other
//! queries.

use std::{collections::VecDeque, future::Future};

use tessera_knowledge::EmbedError;
use tokio::sync::{mpsc, oneshot};

use crate::LoadError;

/// Texts handed to the thread, with the kind of reading they need (texts of the same key
/// may share a forward pass), whether they go before batches, and where their results go.
struct Job<K, O> {
    key: K,
    urgent: bool,
    texts: Vec<String>,
    reply: oneshot::Sender<Result<Vec<O>, String>>,
}

/// The sending side of a model's thread; the thread ends when the last clone is dropped.
pub(crate) struct EncoderThread<K, O> {
    queue: mpsc::Sender<Job<K, O>>,
    name: &'static str,
}

impl<K, O> Clone for EncoderThread<K, O> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            name: self.name,
        }
    }
}

impl<K: PartialEq + Send + 'static, O: Send + 'static> EncoderThread<K, O> {
    /// Starts thread `name` running `work` on the texts of one or more waiting jobs of the
    /// same key and lane at a time (at most `max_batch` texts, unless one job alone has
    /// more), `capacity` jobs queued at most; a job whose caller gave up is skipped.
    pub(crate) fn spawn(
        name: &'static str,
        capacity: usize,
        max_batch: usize,
        mut work: impl FnMut(&K, Vec<String>) -> Result<Vec<O>, String> + Send + 'static,
    ) -> Result<Self, LoadError> {
        let (queue, mut jobs) = mpsc::channel::<Job<K, O>>(capacity);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                // Each caller waits for its job before queuing another, so what waits here
                // is bounded by the callers.
                let mut waiting: VecDeque<Job<K, O>> = VecDeque::new();
                loop {
                    if waiting.is_empty() {
                        match jobs.blocking_recv() {
                            Some(job) => waiting.push_back(job),
                            None => break,
                        }
                    }
                    while let Ok(job) = jobs.try_recv() {
                        waiting.push_back(job);
                    }
                    waiting.retain(|job| !job.reply.is_closed());
                    let group = next_group(&mut waiting, max_batch);
                    if !group.is_empty() {
                        run_group(name, group, &mut work);
                    }
                }
            })
            .map_err(|e| LoadError::Thread(e.to_string()))?;
        Ok(Self { queue, name })
    }

    /// The results for `texts` read as `key`, once the thread has run the jobs queued
    /// before them.
    pub(crate) async fn run(&self, key: K, texts: Vec<String>) -> Result<Vec<O>, EmbedError> {
        self.send(key, false, texts).await
    }

    /// The results for a search query's `texts`, before any batch still waiting.
    pub(crate) async fn run_first(&self, key: K, texts: Vec<String>) -> Result<Vec<O>, EmbedError> {
        self.send(key, true, texts).await
    }

    async fn send(&self, key: K, urgent: bool, texts: Vec<String>) -> Result<Vec<O>, EmbedError> {
        let stopped = || EmbedError::Unavailable(format!("the {} thread has stopped", self.name));
        let (reply, answer) = oneshot::channel();
        let job = Job {
            key,
            urgent,
            texts,
            reply,
        };
        self.queue.send(job).await.map_err(|_| stopped())?;
        answer
            .await
            .map_err(|_| stopped())?
            .map_err(EmbedError::Unavailable)
    }
}

/// Takes the next forward pass's jobs out of `waiting`: the first urgent job (else the
/// oldest), with the jobs after it of the same key and lane while their texts fit in
/// `max_batch`.
fn next_group<K: PartialEq, O>(
    waiting: &mut VecDeque<Job<K, O>>,
    max_batch: usize,
) -> Vec<Job<K, O>> {
    let start = waiting.iter().position(|job| job.urgent).unwrap_or(0);
    let Some(first) = waiting.remove(start) else {
        return Vec::new();
    };
    let mut texts = first.texts.len();
    let mut group = vec![first];
    let mut index = start;
    while index < waiting.len() && texts < max_batch {
        let job = &waiting[index];
        let fits = texts + job.texts.len() <= max_batch;
        if fits && job.key == group[0].key && job.urgent == group[0].urgent {
            texts += job.texts.len();
            group.extend(waiting.remove(index));
        } else {
            index += 1;
        }
    }
    group
}

/// Runs the group's texts in one call and hands each job its share. When a shared call
/// fails, each job runs alone, so one bad text fails only its own caller.
fn run_group<K, O>(
    name: &str,
    group: Vec<Job<K, O>>,
    work: &mut impl FnMut(&K, Vec<String>) -> Result<Vec<O>, String>,
) {
    if group.len() == 1 {
        for job in group {
            let result = checked(job.texts.len(), work(&job.key, job.texts));
            if let Err(error) = &result {
                tracing::warn!(%error, thread = name, "encoding failed");
            }
            let _ = job.reply.send(result);
        }
        return;
    }
    let sizes: Vec<usize> = group.iter().map(|job| job.texts.len()).collect();
    let texts: Vec<String> = group.iter().flat_map(|job| job.texts.clone()).collect();
    match checked(texts.len(), work(&group[0].key, texts)) {
        Ok(results) => {
            let mut results = results.into_iter();
            for (job, size) in group.into_iter().zip(sizes) {
                let _ = job.reply.send(Ok(results.by_ref().take(size).collect()));
            }
        }
        Err(_) => {
            for job in group {
                run_group(name, vec![job], work);
            }
        }
    }
}

/// A model's results, one per text, or an error saying it answered with another number.
fn checked<O>(texts: usize, results: Result<Vec<O>, String>) -> Result<Vec<O>, String> {
    match results {
        Ok(results) if results.len() != texts => Err(format!(
            "the encoder returned {} results for {texts} texts",
            results.len()
        )),
        other => other,
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Each call's key and texts, joined by spaces.
    type Calls = Arc<Mutex<Vec<(u8, String)>>>;

    /// A thread (batch size 6) whose first call waits for `release`, so later jobs wait
    /// together; it records each call and fails any call with a text "bad".
    fn blocked_thread() -> (
        EncoderThread<u8, String>,
        Calls,
        tokio::sync::mpsc::UnboundedReceiver<()>,
        std::sync::mpsc::Sender<()>,
    ) {
        let calls = Calls::default();
        let (started, started_rx) = tokio::sync::mpsc::unbounded_channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let recorded = Arc::clone(&calls);
        let thread = EncoderThread::spawn("test-encoder", 16, 6, move |key: &u8, texts| {
            let first = {
                let mut calls = recorded.lock().unwrap();
                calls.push((*key, texts.join(" ")));
                calls.len() == 1
            };
            if first {
                let _ = started.send(());
                let _ = released.recv();
            }
            if texts.iter().any(|text| text == "bad") {
                return Err("a bad text".to_owned());
            }
            Ok(texts.iter().map(|text| text.to_uppercase()).collect())
        })
        .unwrap();
        (thread, calls, started_rx, release)
    }

    /// [`blocked_thread`] running its first job, "a" as key 0, and that job's answer: what
    /// is queued next waits together until `release`.
    async fn held_thread() -> (
        EncoderThread<u8, String>,
        Calls,
        oneshot::Receiver<Result<Vec<String>, String>>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (thread, recorded, mut started, release) = blocked_thread();
        let first = queue(&thread, 0, false, &["a"]);
        started.recv().await.unwrap();
        (thread, recorded, first, release)
    }

    /// Queues `texts` as `key` at once (no await), returning where the answer arrives.
    fn queue(
        thread: &EncoderThread<u8, String>,
        key: u8,
        urgent: bool,
        texts: &[&str],
    ) -> oneshot::Receiver<Result<Vec<String>, String>> {
        let (reply, answer) = oneshot::channel();
        let texts = strings(texts);
        let job = Job {
            key,
            urgent,
            texts,
            reply,
        };
        assert!(thread.queue.try_send(job).is_ok());
        answer
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|text| (*text).to_owned()).collect()
    }

    /// The thread made exactly these calls, in this order.
    fn assert_calls(calls: &Calls, expected: &[(u8, &str)]) {
        let calls = calls.lock().unwrap();
        let made: Vec<(u8, &str)> = calls.iter().map(|(key, t)| (*key, t.as_str())).collect();
        assert_eq!(made, expected);
    }

    #[tokio::test]
    async fn jobs_waiting_together_share_a_call_per_key_up_to_the_batch_size() {
        let (thread, recorded, first, release) = held_thread().await;
        let b = queue(&thread, 0, false, &["b1", "b2"]);
        let c = queue(&thread, 0, false, &["c1", "c2", "c3"]);
        let d = queue(&thread, 1, false, &["d"]);
        let e = queue(&thread, 0, false, &["e"]);
        let f = queue(
            &thread,
            0,
            false,
            &["f1", "f2", "f3", "f4", "f5", "f6", "f7"],
        );
        release.send(()).unwrap();

        assert_eq!(first.await.unwrap().unwrap(), strings(&["A"]));
        assert_eq!(b.await.unwrap().unwrap(), strings(&["B1", "B2"]));
        assert_eq!(c.await.unwrap().unwrap(), strings(&["C1", "C2", "C3"]));
        assert_eq!(d.await.unwrap().unwrap(), strings(&["D"]));
        assert_eq!(e.await.unwrap().unwrap(), strings(&["E"]));
        assert_eq!(f.await.unwrap().unwrap().len(), 7);
        // b, c and e fill the batch of 6 (d has another key); f alone is larger than it.
        assert_calls(
            &recorded,
            &[
                (0, "a"),
                (0, "b1 b2 c1 c2 c3 e"),
                (1, "d"),
                (0, "f1 f2 f3 f4 f5 f6 f7"),
            ],
        );
    }

    #[tokio::test]
    async fn queries_go_before_waiting_batches_and_share_calls_only_with_queries() {
        let (thread, recorded, first, release) = held_thread().await;
        let batch = queue(&thread, 0, false, &["b1", "b2"]);
        let query = queue(&thread, 0, true, &["q1"]);
        let later = queue(&thread, 0, false, &["c"]);
        let other = queue(&thread, 0, true, &["q2"]);
        release.send(()).unwrap();

        assert!(first.await.unwrap().is_ok());
        assert_eq!(query.await.unwrap().unwrap(), strings(&["Q1"]));
        assert_eq!(other.await.unwrap().unwrap(), strings(&["Q2"]));
        assert_eq!(batch.await.unwrap().unwrap(), strings(&["B1", "B2"]));
        assert_eq!(later.await.unwrap().unwrap(), strings(&["C"]));
        assert_calls(&recorded, &[(0, "a"), (0, "q1 q2"), (0, "b1 b2 c")]);
    }

    #[tokio::test]
    async fn a_failed_shared_call_fails_only_the_job_with_the_bad_text() {
        let (thread, recorded, first, release) = held_thread().await;
        let good = queue(&thread, 0, false, &["g1", "g2"]);
        let bad = queue(&thread, 0, false, &["bad"]);
        let other = queue(&thread, 0, false, &["o"]);
        release.send(()).unwrap();

        assert!(first.await.unwrap().is_ok());
        assert_eq!(good.await.unwrap().unwrap(), strings(&["G1", "G2"]));
        assert_eq!(bad.await.unwrap().unwrap_err(), "a bad text");
        assert_eq!(other.await.unwrap().unwrap(), strings(&["O"]));
        assert_calls(
            &recorded,
            &[
                (0, "a"),
                (0, "g1 g2 bad o"),
                (0, "g1 g2"),
                (0, "bad"),
                (0, "o"),
            ],
        );
    }

    #[tokio::test]
    async fn a_model_answering_with_another_count_is_an_error() {
        let thread = EncoderThread::spawn("test-encoder", 4, 8, |_: &(), _texts| {
            Ok(vec!["only one".to_owned()])
        })
        .unwrap();
        let error = thread.run((), strings(&["x", "y"])).await.unwrap_err();
        assert!(
            error.to_string().contains("returned 1 results for 2 texts"),
            "{error}"
        );
        let one = thread.run_first((), strings(&["x"])).await.unwrap();
        assert_eq!(one, strings(&["only one"]));
    }
}
