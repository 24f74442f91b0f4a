//! Reading an answer to its end, checking on the way what the port promises of every
//! stream: no error item in a successful answer, a `Routed` event only first, exactly one
//! `Finish` and nothing after it, and tool calls numbered as [`Completion::apply`] files them
//! (the `n`th call started is index `n`; deltas and ends name a call already started).
//! Every wait is bounded by the subject's `answer_within`: a hang is a failure.

use futures_util::StreamExt;
use tokio::time::{Instant, timeout, timeout_at};

use super::subject::ChatModelUnderTest;
use crate::{
    ChatEvent, ChatRequest, ChatStream, Completion, FinishReason, ProviderError, Usage, complete,
};

/// A whole answer: its events in order, and the same folded.
#[derive(Debug, Clone)]
pub struct Answer {
    pub events: Vec<ChatEvent>,
    /// Its finish reason is always set.
    pub completion: Completion,
}

impl Answer {
    pub fn text(&self) -> &str {
        &self.completion.content
    }

    pub fn finish_reason(&self) -> &FinishReason {
        (self.completion.finish_reason.as_ref())
            .expect("`read_stream` returns no answer without its finish event")
    }

    pub fn usage(&self) -> Usage {
        self.completion.usage
    }
}

/// Starts `request`, within `answer_within`; the model's refusal is the `Err`.
pub async fn start(
    subject: &ChatModelUnderTest,
    request: ChatRequest,
    what: &str,
) -> Result<ChatStream, ProviderError> {
    timeout(subject.answer_within, subject.model.stream(request))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{what}: the stream did not start within {:?}",
                subject.answer_within
            )
        })
}

/// Streams `request` and reads the answer to its end; `what` names it in failures.
pub async fn read(subject: &ChatModelUnderTest, request: ChatRequest, what: &str) -> Answer {
    let stream = start(subject, request, what)
        .await
        .unwrap_or_else(|error| panic!("{what}: the model refused the request: {error}"));
    read_stream(subject, stream, what).await
}

/// Reads `stream` to its end, within `answer_within`, checking every event.
pub async fn read_stream(
    subject: &ChatModelUnderTest,
    mut stream: ChatStream,
    what: &str,
) -> Answer {
    let deadline = Instant::now() + subject.answer_within;
    let mut events: Vec<ChatEvent> = Vec::new();
    let mut calls_started = 0_u32;
    loop {
        let item = timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{what}: the stream did not end within {:?}; so far {events:?}",
                    subject.answer_within
                )
            });
        let Some(item) = item else { break };
        let event = item.unwrap_or_else(|error| {
            panic!("{what}: an error in the stream: {error}; before it {events:?}")
        });
        if let Some(finish @ ChatEvent::Finish { .. }) = events.last() {
            panic!("{what}: {event:?} after the finish event {finish:?}");
        }
        match &event {
            ChatEvent::Routed(_) => assert!(
                events.is_empty(),
                "{what}: a Routed event after others: {events:?}"
            ),
            ChatEvent::ToolCallStart { index, .. } => {
                assert_eq!(
                    *index, calls_started,
                    "{what}: tool call {calls_started} started as index {index}"
                );
                calls_started += 1;
            }
            ChatEvent::ToolCallArgumentsDelta { index, .. } | ChatEvent::ToolCallEnd { index } => {
                assert!(
                    *index < calls_started,
                    "{what}: {event:?} names a call not started ({calls_started} started)"
                );
            }
            _ => {}
        }
        events.push(event);
    }
    assert!(
        matches!(events.last(), Some(ChatEvent::Finish { .. })),
        "{what}: the stream ended without a finish event: {events:?}"
    );
    let mut completion = Completion::default();
    for event in events.iter().cloned() {
        completion.apply(event);
    }
    Answer { events, completion }
}

/// The non-streamed answer (the port's `complete`), within `answer_within`.
pub async fn complete_within(
    subject: &ChatModelUnderTest,
    request: ChatRequest,
    what: &str,
) -> Completion {
    timeout(
        subject.answer_within,
        complete(subject.model.as_ref(), request),
    )
    .await
    .unwrap_or_else(|_| panic!("{what}: no answer within {:?}", subject.answer_within))
    .unwrap_or_else(|error| panic!("{what}: {error}"))
}

/// Panics unless `usage` counts the prompt's and the answer's tokens.
pub fn assert_counts_tokens(usage: Usage, what: &str) {
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{what}: the finish event counts no input or no output tokens: {usage:?}"
    );
}
