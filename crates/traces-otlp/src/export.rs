//! Finished spans on their way to the collector: encoded as they close into one pending
//! buffer (a bounded queue: past [`MAX_QUEUED`] spans, new ones are dropped and counted),
//! sent by one task on the service's Tokio runtime every [`SCHEDULE`] or as soon as
//! [`BATCH`] spans wait, as one OTLP/HTTP protobuf request per batch. Shutting down sends
//! what is left.

use std::{
    sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc::RecvTimeoutError},
    time::{Duration, Instant},
};

use tokio::{runtime::Handle, sync::Notify};

use crate::{otlp, span::SpanRecord};

/// How long spans may wait before they are sent (OpenTelemetry's default schedule delay).
const SCHEDULE: Duration = Duration::from_secs(5);
/// Spans that start a send at once (OpenTelemetry's default batch size).
const BATCH: usize = 512;
/// Spans that may wait, sent or not; more are dropped (a collector that is down or slow must
/// not grow the service's memory).
const MAX_QUEUED: usize = 4096;
/// Gives up on a collector that does not answer, so a stuck export cannot hold spans forever.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// At most one warning about failed exports this often.
const WARN_EVERY: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Pending {
    /// Encoded `ScopeSpans.spans` entries.
    spans: Vec<u8>,
    count: usize,
    dropped: u64,
    closed: bool,
}

/// The spans waiting to be sent, shared by the layer that fills it and the task that
/// empties it.
#[derive(Default)]
pub(crate) struct Queue {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl Queue {
    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a finished span (dropped when the queue is full or closed).
    pub(crate) fn push(&self, record: &SpanRecord, end_unix_nanos: u64) {
        let mut pending = self.pending();
        if pending.closed || pending.count >= MAX_QUEUED {
            pending.dropped += 1;
            return;
        }
        otlp::write_span(record, end_unix_nanos, &mut pending.spans);
        pending.count += 1;
        if pending.count == BATCH {
            drop(pending);
            self.wake.notify_one();
        }
    }

    /// What waits (the spans and how many), leaving the queue empty.
    fn take(&self) -> (Vec<u8>, usize) {
        let mut pending = self.pending();
        let spans = std::mem::take(&mut pending.spans);
        (spans, std::mem::take(&mut pending.count))
    }

    /// How many spans were dropped since the last call, and whether the queue is closed.
    fn dropped_and_closed(&self) -> (u64, bool) {
        let mut pending = self.pending();
        (std::mem::take(&mut pending.dropped), pending.closed)
    }

    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.pending().count
    }

    #[cfg(test)]
    pub(crate) fn encoded(&self) -> Vec<u8> {
        self.pending().spans.clone()
    }

    fn close(&self) {
        self.pending().closed = true;
        self.wake.notify_one();
    }
}

/// Sends batches to the collector.
pub(crate) struct Sender {
    pub client: reqwest::Client,
    pub url: String,
    pub headers: reqwest::header::HeaderMap,
    pub envelope: otlp::Envelope,
}

impl Sender {
    async fn send(&self, spans: &[u8]) -> Result<(), String> {
        let answer = self
            .client
            .post(&self.url)
            .timeout(EXPORT_TIMEOUT)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .body(self.envelope.request(spans))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = answer.status();
        if status.is_success() {
            Ok(())
        } else {
            let body = answer.text().await.unwrap_or_default();
            Err(format!("the collector answered {status}: {}", body.trim()))
        }
    }
}

/// The running export: its queue, and how to stop it and wait for its last send.
pub(crate) struct Export {
    pub queue: Arc<Queue>,
    finished: Option<std::sync::mpsc::Receiver<()>>,
}

impl Export {
    /// Starts the task that sends `queue`'s spans with `sender`, on `runtime`.
    pub(crate) fn start(runtime: &Handle, sender: Sender) -> Self {
        let queue = Arc::new(Queue::default());
        let (finished, on_finish) = std::sync::mpsc::channel();
        runtime.spawn(run(queue.clone(), sender, finished));
        Self {
            queue,
            finished: Some(on_finish),
        }
    }

    /// Sends what waits and stops the task; waits (blocking the thread) until it has, for
    /// at most the export timeout.
    pub(crate) fn shutdown(&mut self) {
        let Some(finished) = self.finished.take() else {
            return;
        };
        self.queue.close();
        match finished.recv_timeout(EXPORT_TIMEOUT + SCHEDULE) {
            Ok(()) => {}
            Err(RecvTimeoutError::Timeout) => {
                eprintln!(
                    "warning: the last spans were not exported: the collector did not answer"
                );
            }
            // The runtime stopped first, taking the task with it.
            Err(RecvTimeoutError::Disconnected) => {
                let (_, count) = self.queue.take();
                if count > 0 {
                    eprintln!(
                        "warning: the last {count} spans were not exported: the runtime had stopped"
                    );
                }
            }
        }
    }
}

async fn run(queue: Arc<Queue>, sender: Sender, finished: std::sync::mpsc::Sender<()>) {
    let mut failures = Failures::default();
    loop {
        tokio::select! {
            () = queue.wake.notified() => {}
            () = tokio::time::sleep(SCHEDULE) => {}
        }
        let (dropped, closed) = queue.dropped_and_closed();
        failures.dropped += dropped;
        let (spans, _) = queue.take();
        if !spans.is_empty()
            && let Err(error) = sender.send(&spans).await
        {
            failures.failed(error);
        }
        failures.warn_if_due();
        if closed {
            break;
        }
    }
    let _ = finished.send(());
}

/// Export failures since the last warning, so a collector that is down is reported once a
/// minute, not once a batch.
#[derive(Default)]
struct Failures {
    failed: u64,
    dropped: u64,
    last_error: Option<String>,
    warned: Option<Instant>,
}

impl Failures {
    fn failed(&mut self, error: String) {
        self.failed += 1;
        self.last_error = Some(error);
    }

    fn warn_if_due(&mut self) {
        if self.failed == 0 && self.dropped == 0 {
            return;
        }
        if self.warned.is_some_and(|at| at.elapsed() < WARN_EVERY) {
            return;
        }
        tracing::warn!(
            failed_exports = self.failed,
            dropped_spans = self.dropped,
            last_error = self.last_error.as_deref().unwrap_or(""),
            "spans were not exported"
        );
        *self = Self {
            warned: Some(Instant::now()),
            ..Self::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use tokio::{
        io::{AsyncReadExt as _, AsyncWriteExt as _},
        net::TcpListener,
    };

    use super::*;
    use crate::{
        context::{SpanContext, SpanId, TraceId},
        span::AttributeValue,
    };

    fn finished_span() -> SpanRecord {
        let context = SpanContext {
            trace_id: TraceId([1; 16]),
            span_id: SpanId([2; 8]),
            sampled: true,
            trace_state: String::new(),
        };
        SpanRecord::new(context, None, false, "finished")
    }

    /// One HTTP request as received: its head (lowercased) and body.
    async fn receive_one(listener: TcpListener) -> (String, Vec<u8>) {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut received = Vec::new();
        let mut chunk = [0; 4096];
        let (head, body_start) = loop {
            let read = socket.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the request ended early");
            received.extend_from_slice(&chunk[..read]);
            if let Some(at) = received.windows(4).position(|w| w == b"\r\n\r\n") {
                break (
                    String::from_utf8_lossy(&received[..at]).to_lowercase(),
                    at + 4,
                );
            }
        };
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        while received.len() < body_start + length {
            let read = socket.read(&mut chunk).await.unwrap();
            received.extend_from_slice(&chunk[..read]);
        }
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        (head, received[body_start..].to_vec())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutting_down_sends_what_waits_with_the_configured_headers() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let receiving = tokio::spawn(receive_one(listener));
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("api-key", "secret".parse().unwrap());
        let envelope = otlp::Envelope::new(
            &[("service.name", AttributeValue::Str("test".into()))],
            "test",
            "1.0.0",
        );
        let mut export = Export::start(
            &Handle::current(),
            Sender {
                client: crate::http_client().unwrap(),
                url,
                headers,
                envelope: envelope.clone(),
            },
        );
        export.queue.push(&finished_span(), 42);
        let spans = export.queue.encoded();
        tokio::task::spawn_blocking(move || export.shutdown())
            .await
            .unwrap();
        let (head, body) = receiving.await.unwrap();
        assert!(head.starts_with("post /v1/traces http/1.1"), "{head}");
        assert!(
            head.contains("content-type: application/x-protobuf"),
            "{head}"
        );
        assert!(head.contains("api-key: secret"), "{head}");
        assert_eq!(body, envelope.request(&spans));
    }

    #[test]
    fn a_full_queue_drops_new_spans_and_counts_them() {
        let queue = Queue::default();
        for _ in 0..MAX_QUEUED + 3 {
            queue.push(&finished_span(), 42);
        }
        assert_eq!(queue.queued(), MAX_QUEUED);
        assert_eq!(queue.dropped_and_closed(), (3, false));
        queue.close();
        queue.push(&finished_span(), 42);
        assert_eq!(queue.dropped_and_closed(), (1, true));
        assert_eq!(queue.take().1, MAX_QUEUED);
        assert_eq!(queue.queued(), 0);
    }
}
