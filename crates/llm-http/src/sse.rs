//! A successful response → the `ChatStream`: server-sent events read with an idle timeout
//! and a bound on buffered bytes, translated by the adapter's [`Translate`]. A server that
//! ignored `stream: true` and answered with one JSON document is translated whole.

use std::{
    collections::VecDeque,
    fmt,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use eventsource_stream::{Event, EventStream, EventStreamError};
use futures_util::{Stream, StreamExt, stream};
use reqwest::header::CONTENT_TYPE;
use tessera_models::{ChatEvent, ChatStream, ProviderError};

use crate::upstream::error_chain;

/// What one step of a translation produced.
pub type Items = Vec<Result<ChatEvent, ProviderError>>;

/// A provider's answer → `ChatEvent`s: pure, fed the answer's events (or its whole body) and
/// told how the stream ended, so every odd shape can be unit-tested without a socket.
pub trait Translate: Send + 'static {
    /// Whether the answer is over (finished or failed): nothing more is fed.
    fn is_done(&self) -> bool;
    /// One server-sent event: its type (`message` unless named) and data.
    fn event(&mut self, kind: &str, data: &str) -> Items;
    /// A whole (non-streamed) answer.
    fn whole(&mut self, body: &[u8]) -> Items;
    /// Whether the answer said how it ends (a finish or stop reason): if the stream ends or
    /// goes silent now, the answer is complete.
    fn finishing(&self) -> bool;
    /// The answer's `Finish` (after whatever must close first); the translation is done.
    fn complete(&mut self) -> Items;
    /// The answer failed with `error`; the translation is done.
    fn failed(&mut self, error: ProviderError) -> Items;

    /// The stream ended (the connection closed) without the protocol's last event: complete
    /// if the answer said how it ends, a failure otherwise.
    fn end(&mut self) -> Items {
        if self.is_done() {
            Vec::new()
        } else if self.finishing() {
            self.complete()
        } else {
            self.failed(ProviderError::Upstream {
                status: None,
                message: "the provider's stream ended before the answer was complete".into(),
            })
        }
    }

    /// The stream went silent for the idle timeout.
    fn silence(&mut self) -> Items {
        if self.is_done() {
            Vec::new()
        } else if self.finishing() {
            self.complete()
        } else {
            self.failed(ProviderError::Timeout)
        }
    }

    /// The transport failed after the answer began.
    fn broken(&mut self, message: String) -> Items {
        if self.is_done() {
            return Vec::new();
        }
        self.failed(ProviderError::Upstream {
            status: None,
            message,
        })
    }
}

/// The most bytes received without completing an event (an SSE event, or a whole JSON
/// answer): a misbehaving upstream cannot make the adapter buffer without end.
const MAX_PENDING_BYTES: usize = 16 * 1024 * 1024;

type Item = Result<ChatEvent, ProviderError>;

/// The events of an answer whose headers arrived. Waits for the first event, so that a
/// failure before it is returned here rather than as the stream's first item.
pub async fn answer<T: Translate>(
    response: reqwest::Response,
    idle_timeout: Duration,
    translator: T,
) -> Result<ChatStream, ProviderError> {
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    let mut events: ChatStream = if is_json {
        whole(response, idle_timeout, translator)
    } else {
        server_sent(response, idle_timeout, translator)
    };
    match events.next().await {
        Some(Err(error)) => Err(error),
        Some(Ok(first)) => Ok(Box::pin(
            stream::once(async move { Ok(first) }).chain(events),
        )),
        None => Ok(events),
    }
}

/// Why reading the body failed.
#[derive(Debug)]
enum Transport {
    Http(reqwest::Error),
    TooLarge,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Http(e) => {
                write!(
                    f,
                    "the connection to the provider broke: {}",
                    error_chain(e)
                )
            }
            Transport::TooLarge => write!(
                f,
                "the provider sent more than {} MiB without completing an event",
                MAX_PENDING_BYTES / (1024 * 1024)
            ),
        }
    }
}

/// When bytes last arrived, and how many arrived since the last complete event.
struct Activity {
    start: Instant,
    last_byte_ms: AtomicU64,
    pending_bytes: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_byte_ms: AtomicU64::new(0),
            pending_bytes: AtomicUsize::new(0),
        }
    }

    fn received(&self, bytes: usize) -> Result<(), Transport> {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_byte_ms.store(now, Ordering::Relaxed);
        let pending = self
            .pending_bytes
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        if pending > MAX_PENDING_BYTES {
            return Err(Transport::TooLarge);
        }
        Ok(())
    }

    fn event_completed(&self) {
        self.pending_bytes.store(0, Ordering::Relaxed);
    }

    fn silent_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_byte_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<Transport>>> + Send>>;

struct ServerSent<T> {
    events: Events,
    activity: Arc<Activity>,
    idle_timeout: Duration,
    translator: T,
    pending: VecDeque<Item>,
}

enum Next {
    Event(Event),
    End,
    Silence,
    Broken(String),
}

impl<T: Translate> ServerSent<T> {
    /// The next event, or why there is none. Bytes that complete no event (comments used
    /// as keep-alives, halves of events) still count as activity.
    async fn next_event(&mut self) -> Next {
        loop {
            let remaining = self.idle_timeout.saturating_sub(self.activity.silent_for());
            if remaining.is_zero() {
                return Next::Silence;
            }
            match tokio::time::timeout(remaining, self.events.next()).await {
                // `next` is cancel-safe: the parser's state lives in the stream.
                Err(_) => continue,
                Ok(None) => return Next::End,
                Ok(Some(Ok(event))) => {
                    self.activity.event_completed();
                    return Next::Event(event);
                }
                Ok(Some(Err(error))) => {
                    return Next::Broken(match error {
                        EventStreamError::Transport(transport) => transport.to_string(),
                        EventStreamError::Utf8(_) => "the provider sent invalid UTF-8".into(),
                        EventStreamError::Parser(_) => {
                            "the provider sent a malformed event stream".into()
                        }
                    });
                }
            }
        }
    }

    async fn next_item(mut self) -> Option<(Item, Self)> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some((item, self));
            }
            if self.translator.is_done() {
                return None;
            }
            let items = match self.next_event().await {
                Next::Event(event) => self.translator.event(&event.event, &event.data),
                Next::End => self.translator.end(),
                Next::Silence => self.translator.silence(),
                Next::Broken(message) => self.translator.broken(message),
            };
            self.pending.extend(items);
        }
    }
}

fn server_sent<T: Translate>(
    response: reqwest::Response,
    idle_timeout: Duration,
    translator: T,
) -> ChatStream {
    let activity = Arc::new(Activity::new());
    let counter = Arc::clone(&activity);
    // Bytes, not text: the parser joins UTF-8 sequences split across network chunks.
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(Transport::Http)?;
        counter.received(chunk.len())?;
        Ok::<_, Transport>(chunk)
    });
    let state = ServerSent {
        events: Box::pin(EventStream::new(bytes)),
        activity,
        idle_timeout,
        translator,
        pending: VecDeque::new(),
    };
    Box::pin(stream::unfold(state, ServerSent::next_item))
}

fn whole<T: Translate>(
    response: reqwest::Response,
    idle_timeout: Duration,
    mut translator: T,
) -> ChatStream {
    let items = async move {
        match read_whole(response, idle_timeout).await {
            Ok(body) => translator.whole(&body),
            Err(None) => vec![Err(ProviderError::Timeout)],
            Err(Some(transport)) => translator.broken(transport.to_string()),
        }
    };
    Box::pin(stream::once(items).flat_map(stream::iter))
}

/// The body, each chunk within the idle timeout (`Err(None)` when one is late).
async fn read_whole(
    mut response: reqwest::Response,
    idle_timeout: Duration,
) -> Result<Vec<u8>, Option<Transport>> {
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(idle_timeout, response.chunk()).await {
            Err(_) => return Err(None),
            Ok(Err(e)) => return Err(Some(Transport::Http(e))),
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(chunk))) => {
                if body.len().saturating_add(chunk.len()) > MAX_PENDING_BYTES {
                    return Err(Some(Transport::TooLarge));
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}
