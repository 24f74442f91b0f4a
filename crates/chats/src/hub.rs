//! Running generations and their listeners. A generation publishes its events here; any
//! number of listeners (the request that started it, clients re-attaching later) receive
//! everything published so far, then the rest live. Listeners come and go without
//! affecting the generation: it outlives every HTTP connection.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{Arc, Mutex},
};

use futures_channel::mpsc::{UnboundedSender, unbounded};
use futures_util::{
    Stream, StreamExt,
    future::{AbortHandle, AbortRegistration, Abortable},
    stream,
};
use tessera_models::ChatEvent;

use crate::{ChatError, ChatId, Message, MessageId, Source};

/// One step of a generation as listeners see it.
#[derive(Debug, Clone, PartialEq)]
pub enum GenerationEvent {
    /// Retrieved passages the answer is grounded on (first, when there are any).
    Sources(Vec<Source>),
    /// Text, reasoning or tool-call progress (never `ChatEvent::Finish`).
    Delta(ChatEvent),
    /// Progress of a call of a tool Tessera runs itself (an MCP tool linked to the model):
    /// its start, argument deltas and end, as `Delta` carries a client tool's.
    ServerToolDelta(ChatEvent),
    /// A server-run tool answered (or failed); the model reads the result next.
    ToolResult(ToolResult),
    /// The model is asked again, after tool results: a new step of the answer begins.
    StepStarted,
    /// The answer is complete and stored: the assistant message, with its usage.
    Finished(Box<Message>),
    /// The generation failed; the chat's status is `error`.
    Failed(ChatError),
}

/// The result of one server-run tool call, as it is fed back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub name: String,
    pub content: String,
    pub is_error: bool,
}

impl GenerationEvent {
    pub fn is_final(&self) -> bool {
        matches!(self, Self::Finished(_) | Self::Failed(_))
    }
}

/// A listener's view of a generation: the replay, then live events, then the end.
pub type EventStream = Pin<Box<dyn Stream<Item = Arc<GenerationEvent>> + Send>>;

/// The event that ends a generation (its answer or its failure), for a caller that waits
/// for the whole answer; `None` if the events ended without one.
pub async fn final_event(mut events: EventStream) -> Option<Arc<GenerationEvent>> {
    while let Some(event) = events.next().await {
        if event.is_final() {
            return Some(event);
        }
    }
    None
}

/// A listener attached to a running generation.
pub struct Attached {
    /// The id the answer will be stored under.
    pub message: MessageId,
    pub events: EventStream,
}

struct Channel {
    /// The id the answer will be stored under.
    message: MessageId,
    published: Vec<Arc<GenerationEvent>>,
    listeners: Vec<UnboundedSender<Arc<GenerationEvent>>>,
    closed: bool,
    /// Stops the generation (see [`GenerationHub::cancel`]); made with the channel, so a
    /// cancel that comes before the generation first runs stops it as it starts.
    abort: AbortHandle,
}

type Channels = Arc<Mutex<HashMap<ChatId, Arc<Mutex<Channel>>>>>;

/// The generations running in this process, by chat.
#[derive(Clone, Default)]
pub struct GenerationHub {
    running: Channels,
}

impl GenerationHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts publishing for a chat. The caller has made sure (through the store) that no
    /// other generation runs on it.
    pub(crate) fn open(&self, chat: &ChatId, message: &MessageId) -> Publisher {
        let (abort, registration) = AbortHandle::new_pair();
        let channel = Arc::new(Mutex::new(Channel {
            message: message.clone(),
            published: Vec::new(),
            listeners: Vec::new(),
            closed: false,
            abort,
        }));
        lock(&self.running).insert(chat.clone(), channel.clone());
        Publisher {
            running: self.running.clone(),
            chat: chat.clone(),
            channel,
            registration: Mutex::new(Some(registration)),
        }
    }

    /// Listens to the chat's running generation from its first event; `None` when nothing
    /// runs on the chat in this process.
    pub fn subscribe(&self, chat: &ChatId) -> Option<Attached> {
        let channel = lock(&self.running).get(chat).cloned()?;
        let mut channel = lock(&channel);
        let replay = stream::iter(channel.published.clone());
        let message = channel.message.clone();
        if channel.closed {
            return Some(Attached {
                message,
                events: Box::pin(replay),
            });
        }
        let (sender, receiver) = unbounded();
        channel.listeners.push(sender);
        Some(Attached {
            message,
            events: Box::pin(replay.chain(receiver)),
        })
    }

    /// Stops the chat's generation running in this process; `false` when none runs here.
    pub fn cancel(&self, chat: &ChatId) -> bool {
        let Some(channel) = lock(&self.running).get(chat).cloned() else {
            return false;
        };
        let channel = lock(&channel);
        if channel.closed {
            return false;
        }
        channel.abort.abort();
        true
    }

    /// How many generations run in this process.
    pub fn running(&self) -> usize {
        lock(&self.running).len()
    }
}

/// The generation's end of its channel. Dropping it (the generation ended, or its task
/// was aborted) ends every listener's stream.
pub(crate) struct Publisher {
    running: Channels,
    chat: ChatId,
    channel: Arc<Mutex<Channel>>,
    /// The other half of the channel's abort handle, until the generation takes it.
    registration: Mutex<Option<AbortRegistration>>,
}

impl Publisher {
    /// The generation, made stoppable through [`GenerationHub::cancel`] (also by a cancel
    /// that came before this).
    pub(crate) fn abortable<F: Future>(&self, generation: F) -> Abortable<F> {
        let registration = lock(&self.registration).take().unwrap_or_else(|| {
            // A second generation on one channel: it gets a handle of its own.
            let (abort, registration) = AbortHandle::new_pair();
            lock(&self.channel).abort = abort;
            registration
        });
        Abortable::new(generation, registration)
    }

    pub(crate) fn publish(&self, event: GenerationEvent) {
        let event = Arc::new(event);
        let mut channel = lock(&self.channel);
        channel
            .listeners
            .retain(|listener| listener.unbounded_send(event.clone()).is_ok());
        channel.published.push(event);
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let mut channel = lock(&self.channel);
        channel.closed = true;
        channel.listeners.clear();
        drop(channel);
        let mut running = lock(&self.running);
        if running
            .get(&self.chat)
            .is_some_and(|current| Arc::ptr_eq(current, &self.channel))
        {
            running.remove(&self.chat);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A listener that panicked must not stop the others: the data is still consistent
    // (every update is a single push or removal).
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;

    use super::*;

    fn text(delta: &str) -> GenerationEvent {
        GenerationEvent::Delta(ChatEvent::TextDelta(delta.into()))
    }

    #[tokio::test]
    async fn late_listeners_get_the_replay_then_live_events() {
        let hub = GenerationHub::new();
        let chat = ChatId::generate();
        assert!(hub.subscribe(&chat).is_none());
        let publisher = hub.open(&chat, &MessageId::generate());
        let early = hub.subscribe(&chat).unwrap().events;
        publisher.publish(text("Hel"));
        let late = hub.subscribe(&chat).unwrap().events;
        publisher.publish(text("lo"));
        assert_eq!(hub.running(), 1);
        drop(publisher);
        assert_eq!(hub.running(), 0);
        assert!(hub.subscribe(&chat).is_none());
        let early: Vec<_> = early.collect().await;
        let late: Vec<_> = late.collect().await;
        assert_eq!(early, late);
        assert_eq!(*early[1], text("lo"));
    }

    #[tokio::test]
    async fn a_cancelled_generation_stops_where_it_waits() {
        let hub = GenerationHub::new();
        let chat = ChatId::generate();
        assert!(!hub.cancel(&chat), "nothing runs");
        let publisher = hub.open(&chat, &MessageId::generate());
        let waiting = publisher.abortable(futures_util::future::pending::<()>());
        assert!(hub.cancel(&chat));
        assert!(waiting.await.is_err(), "the pending generation was aborted");
        drop(publisher);
        assert!(!hub.cancel(&chat), "nothing runs once it ended");
    }

    #[tokio::test]
    async fn a_cancel_before_the_generation_runs_stops_it_as_it_starts() {
        let hub = GenerationHub::new();
        let chat = ChatId::generate();
        let publisher = hub.open(&chat, &MessageId::generate());
        assert!(hub.cancel(&chat), "asked while it has not run yet");
        let starting = publisher.abortable(futures_util::future::pending::<()>());
        assert!(starting.await.is_err(), "stopped at its first poll");
    }

    #[tokio::test]
    async fn a_dropped_listener_does_not_disturb_the_others() {
        let hub = GenerationHub::new();
        let chat = ChatId::generate();
        let publisher = hub.open(&chat, &MessageId::generate());
        let gone = hub.subscribe(&chat).unwrap().events;
        let kept = hub.subscribe(&chat).unwrap().events;
        drop(gone);
        publisher.publish(text("a"));
        drop(publisher);
        assert_eq!(kept.count().await, 1);
    }
}
