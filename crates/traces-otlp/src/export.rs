//! Finished spans on their way to the collector: encoded as they close into one pending
//! buffer (a bounded queue: past [`MAX_QUEUED`] spans, new ones are dropped and counted),
//! sent by one task on the service's Tokio runtime every [`SCHEDULE`] or as soon as
//! [`BATCH`] spans wait, as one OTLP/HTTP protobuf request per batch (gzip-compressed when
//! configured). A batch the collector could not take for now (429, 502, 503, 504, no
//! connection, no answer in time) is tried again after a back-off or the collector's
//! `Retry-After`, within bounds ([`Retry`]). Shutting down sends what is left, a batch
//! waiting for its retry included. Everything here runs per batch, never per span.

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
    /// Cuts a retry's wait short when shutting down.
    closing: Notify,
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

    fn is_closed(&self) -> bool {
        self.pending().closed
    }

    fn close(&self) {
        self.pending().closed = true;
        self.wake.notify_one();
        self.closing.notify_one();
    }
}

/// How export bodies are compressed (`OTEL_EXPORTER_OTLP_COMPRESSION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    Gzip,
}

/// How a batch the collector could not take for now is tried again: after an exponential
/// back-off with jitter, or after the collector's `Retry-After`, at most `attempts` times and
/// `max_wait` of waiting in all, so a collector that stays down costs a batch, never the
/// queue behind it for long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retry {
    pub attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    pub max_wait: Duration,
}

impl Default for Retry {
    /// 5 tries, waits of about 1, 2, 4 and 8 s, at most 30 s of waiting for one batch.
    fn default() -> Self {
        Self {
            attempts: 5,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(8),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl Retry {
    /// The wait before try `attempt + 1`: doubling from the first, capped, ±20 % jitter (so
    /// replicas that failed together do not come back together).
    fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .first_backoff
            .saturating_mul(1 << attempt.saturating_sub(1).min(16));
        doubled
            .min(self.max_backoff)
            .mul_f64(0.8 + 0.4 * rand::random::<f64>())
    }
}

/// What one try of a batch came to.
enum Attempt {
    Sent,
    /// Worth trying again; the collector may say when.
    Retryable {
        error: String,
        after: Option<Duration>,
    },
    Failed(String),
}

/// What became of a batch.
enum Delivery {
    Sent,
    Failed(String),
    /// Shutting down cut a retry's wait short: the batch goes with the last send.
    Interrupted,
}

/// Sends batches to the collector.
pub(crate) struct Sender {
    pub client: reqwest::Client,
    pub url: String,
    /// How long one try may take.
    pub timeout: Duration,
    pub compression: Compression,
    pub retry: Retry,
    pub headers: reqwest::header::HeaderMap,
    pub envelope: otlp::Envelope,
}

impl Sender {
    /// The request body of a batch, compressed as configured.
    fn body(&self, spans: &[u8]) -> Result<Vec<u8>, String> {
        let request = self.envelope.request(spans);
        match self.compression {
            Compression::None => Ok(request),
            Compression::Gzip => {
                use std::io::Write as _;
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(request.len() / 2),
                    flate2::Compression::default(),
                );
                encoder
                    .write_all(&request)
                    .and_then(|()| encoder.finish())
                    .map_err(|e| format!("cannot gzip the export: {e}"))
            }
        }
    }

    async fn attempt(&self, body: &[u8]) -> Attempt {
        let mut request = self
            .client
            .post(&self.url)
            .timeout(self.timeout)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf");
        if self.compression == Compression::Gzip {
            request = request.header(reqwest::header::CONTENT_ENCODING, "gzip");
        }
        // A copy per try (per batch, not per span): the body may be needed again.
        let answer = match request.body(body.to_vec()).send().await {
            Ok(answer) => answer,
            Err(error) if error.is_connect() || error.is_timeout() || error.is_request() => {
                return Attempt::Retryable {
                    error: error.to_string(),
                    after: None,
                };
            }
            Err(error) => return Attempt::Failed(error.to_string()),
        };
        let status = answer.status();
        if status.is_success() {
            return Attempt::Sent;
        }
        let after = answer
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(retry_after);
        let body = answer.text().await.unwrap_or_default();
        let error = format!("the collector answered {status}: {}", body.trim());
        // OTLP/HTTP's retryable answers.
        if matches!(status.as_u16(), 429 | 502 | 503 | 504) {
            Attempt::Retryable { error, after }
        } else {
            Attempt::Failed(error)
        }
    }

    /// Sends a batch, trying again within the retry bounds; shutting down (`queue` closed)
    /// stops the waiting.
    async fn deliver(&self, queue: &Queue, spans: &[u8]) -> Delivery {
        let body = match self.body(spans) {
            Ok(body) => body,
            Err(error) => return Delivery::Failed(error),
        };
        let mut waited = Duration::ZERO;
        let mut attempt = 1;
        loop {
            let (error, after) = match self.attempt(&body).await {
                Attempt::Sent => return Delivery::Sent,
                Attempt::Failed(error) => return Delivery::Failed(error),
                Attempt::Retryable { error, after } => (error, after),
            };
            if attempt >= self.retry.attempts || queue.is_closed() {
                return Delivery::Failed(format!("{error} (after {attempt} tries)"));
            }
            let wait = after.unwrap_or_else(|| self.retry.backoff(attempt));
            if waited + wait > self.retry.max_wait {
                return Delivery::Failed(format!(
                    "{error} (a retry in {} s would pass the {} s the exporter waits for a batch)",
                    wait.as_secs(),
                    self.retry.max_wait.as_secs()
                ));
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = queue.closing.notified() => return Delivery::Interrupted,
            }
            waited += wait;
            attempt += 1;
        }
    }
}

/// `Retry-After`: seconds, or an HTTP date.
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

/// The running export: its queue, and how to stop it and wait for its last send.
pub(crate) struct Export {
    pub queue: Arc<Queue>,
    finished: Option<std::sync::mpsc::Receiver<()>>,
    /// The longest a shutdown waits: a try in flight, then the last send.
    shutdown_wait: Duration,
}

impl Export {
    /// Starts the task that sends `queue`'s spans with `sender`, on `runtime`.
    pub(crate) fn start(runtime: &Handle, sender: Sender) -> Self {
        let queue = Arc::new(Queue::default());
        let (finished, on_finish) = std::sync::mpsc::channel();
        let shutdown_wait = sender.timeout.saturating_mul(2) + Duration::from_secs(1);
        runtime.spawn(run(queue.clone(), sender, finished));
        Self {
            queue,
            finished: Some(on_finish),
            shutdown_wait,
        }
    }

    /// Sends what waits and stops the task; waits (blocking the thread) until it has, for
    /// at most two export timeouts (a try in flight, then the last send).
    pub(crate) fn shutdown(&mut self) {
        let Some(finished) = self.finished.take() else {
            return;
        };
        self.queue.close();
        match finished.recv_timeout(self.shutdown_wait) {
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
    // A batch whose retry shutting down cut short, sent ahead of what is left.
    let mut carried = Vec::new();
    loop {
        tokio::select! {
            () = queue.wake.notified() => {}
            () = tokio::time::sleep(SCHEDULE) => {}
        }
        let (dropped, closed) = queue.dropped_and_closed();
        failures.dropped += dropped;
        let (spans, _) = queue.take();
        // Entries of `ScopeSpans.spans` concatenate into one longer list.
        let spans = if carried.is_empty() {
            spans
        } else {
            carried.extend_from_slice(&spans);
            std::mem::take(&mut carried)
        };
        if !spans.is_empty() {
            match sender.deliver(&queue, &spans).await {
                Delivery::Sent => {}
                Delivery::Failed(error) => failures.failed(error),
                Delivery::Interrupted => carried = spans,
            }
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

    /// One HTTP request as received: its head (lowercased) and body; answered 200.
    async fn receive_one(listener: TcpListener) -> (String, Vec<u8>) {
        receive_answering(
            &listener,
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
        )
        .await
    }

    /// One HTTP request as received, answered with `reply`.
    async fn receive_answering(listener: &TcpListener, reply: &[u8]) -> (String, Vec<u8>) {
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
        socket.write_all(reply).await.unwrap();
        (head, received[body_start..].to_vec())
    }

    fn envelope() -> otlp::Envelope {
        otlp::Envelope::new(
            &[("service.name", AttributeValue::Str("test".into()))],
            "test",
            "1.0.0",
        )
    }

    fn sender(url: String, compression: Compression) -> Sender {
        Sender {
            client: crate::http_client().unwrap(),
            url,
            timeout: Duration::from_secs(5),
            compression,
            retry: Retry {
                attempts: 5,
                first_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_millis(400),
                max_wait: Duration::from_secs(5),
            },
            headers: reqwest::header::HeaderMap::new(),
            envelope: envelope(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutting_down_sends_what_waits_with_the_configured_headers() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let receiving = tokio::spawn(receive_one(listener));
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("api-key", "secret".parse().unwrap());
        let envelope = envelope();
        let mut export = Export::start(
            &Handle::current(),
            Sender {
                headers,
                ..sender(url, Compression::None)
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

    /// Connection refused, then a 503 with `Retry-After`, then taken: the same batch each
    /// time, gzip-compressed, and sent no sooner than the collector asked.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_is_retried_until_the_collector_takes_it() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let queue = Queue::default();
        queue.push(&finished_span(), 42);
        let (spans, _) = queue.take();
        let sender = sender(
            format!("http://127.0.0.1:{port}/v1/traces"),
            Compression::Gzip,
        );
        let expected = envelope().request(&spans);
        let collector = tokio::spawn(async move {
            // Not listening for the first tries: connections are refused.
            tokio::time::sleep(Duration::from_millis(250)).await;
            let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
            let busy =
                b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
            let (first_head, first) = receive_answering(&listener, busy).await;
            let refused_at = Instant::now();
            let (_, second) = receive_one(listener).await;
            (first_head, first, second, refused_at.elapsed())
        });
        let delivered = sender.deliver(&queue, &spans).await;
        assert!(matches!(delivered, Delivery::Sent));
        let (head, first, second, gap) = collector.await.unwrap();
        assert!(head.contains("content-encoding: gzip"), "{head}");
        assert_eq!(first, second, "the same batch");
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&first[..]), &mut unzipped)
            .unwrap();
        assert_eq!(unzipped, expected);
        assert!(
            gap >= Duration::from_millis(900),
            "{gap:?}: Retry-After ignored"
        );
    }

    #[tokio::test]
    async fn a_refused_batch_is_not_retried_and_retries_are_bounded() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let queue = Queue::default();
        let collector = tokio::spawn(async move {
            let bad =
                b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 3\r\n\r\nbad";
            receive_answering(&listener, bad).await;
            for _ in 0..5 {
                let busy = b"HTTP/1.1 429 Too Many Requests\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
                receive_answering(&listener, busy).await;
            }
        });
        let sender = sender(url, Compression::None);
        let Delivery::Failed(error) = sender.deliver(&queue, b"").await else {
            panic!("a 400 is final");
        };
        assert!(error.contains("400") && error.contains("bad"), "{error}");
        let Delivery::Failed(error) = sender.deliver(&queue, b"").await else {
            panic!("retries are bounded");
        };
        assert!(
            error.contains("429") && error.contains("after 5 tries"),
            "{error}"
        );
        collector.await.unwrap();
    }

    #[test]
    fn retry_after_is_seconds_or_a_date_and_back_off_doubles() {
        assert_eq!(retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon"), None);
        let retry = Retry::default();
        for (attempt, nominal) in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)] {
            let wait = retry.backoff(attempt).as_secs_f64();
            assert!(
                (nominal * 0.8..=nominal * 1.2).contains(&wait),
                "{attempt}: {wait}"
            );
        }
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
