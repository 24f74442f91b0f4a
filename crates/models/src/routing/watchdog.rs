//! The answer's stream after its first token: each chunk must come within the idle time
//! and the answer must end within the total time; a failure is reported to the circuit.

use std::sync::Arc;

use futures_util::{StreamExt, stream};
use tessera_kernel::Clock;
use tokio::time::{Duration, Instant};

use crate::{ChatEvent, ChatStream, ProviderError};

use super::CircuitBoard;

/// What watches one answer.
pub(super) struct Watch {
    pub idle: Duration,
    pub deadline: Instant,
    /// Where a failure is reported, when the model keeps circuits.
    pub circuit: Option<Circuit>,
}

/// A deployment's circuit on its board.
pub(super) struct Circuit {
    pub board: Arc<dyn CircuitBoard>,
    pub key: String,
    pub clock: Arc<dyn Clock>,
}

/// `inner` with its timeouts applied. The stream ends after the first error.
pub(super) fn watched(inner: ChatStream, watch: Watch) -> ChatStream {
    Box::pin(stream::unfold(Some((inner, watch)), |state| async move {
        let (mut inner, watch) = state?;
        let wait = watch
            .idle
            .min(watch.deadline.saturating_duration_since(Instant::now()));
        let error = match tokio::time::timeout(wait, inner.next()).await {
            Ok(None) => return None,
            Ok(Some(Ok(event))) => return Some((Ok(event), Some((inner, watch)))),
            Ok(Some(Err(error))) => error,
            Err(_) => ProviderError::Timeout,
        };
        if let Some(circuit) = &watch.circuit {
            circuit
                .board
                .failed(&circuit.key, circuit.clock.now())
                .await;
        }
        Some((Err(error), None))
    }))
}

/// Whether `event` is a token the caller sees (the end of the answer counts: an empty
/// answer is an answer).
pub(super) fn is_first_token(event: &ChatEvent) -> bool {
    match event {
        ChatEvent::TextDelta(text) | ChatEvent::ReasoningDelta(text) => !text.is_empty(),
        ChatEvent::ToolCallStart { .. } | ChatEvent::Finish { .. } => true,
        ChatEvent::ToolCallArgumentsDelta { .. }
        | ChatEvent::ToolCallEnd { .. }
        | ChatEvent::Routed(_) => false,
    }
}
