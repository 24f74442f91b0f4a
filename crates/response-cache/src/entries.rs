//! Cached answers and the port of the store that keeps them.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::DomainError;
use tessera_models::ChatEvent;

use crate::{ExactKey, Partition};

/// An answer as the provider streamed it, kept to be replayed through the same pipeline as
/// a live answer: text, reasoning and tool call events (consecutive deltas joined), ending
/// with the provider's `Finish` and the usage it reported.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedAnswer {
    pub events: Vec<ChatEvent>,
    pub stored_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl CachedAnswer {
    /// The answer of `events` (a route is left out: a replay is not routed), kept until
    /// `expires_at`; `None` unless the events end with a `Finish`.
    pub fn of(
        events: impl IntoIterator<Item = ChatEvent>,
        stored_at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Option<Self> {
        let mut kept: Vec<ChatEvent> = Vec::new();
        for event in events {
            match (kept.last_mut(), event) {
                (_, ChatEvent::Routed(_)) => {}
                (Some(ChatEvent::TextDelta(text)), ChatEvent::TextDelta(more))
                | (Some(ChatEvent::ReasoningDelta(text)), ChatEvent::ReasoningDelta(more)) => {
                    text.push_str(&more)
                }
                (
                    Some(ChatEvent::ToolCallArgumentsDelta { index, delta }),
                    ChatEvent::ToolCallArgumentsDelta {
                        index: next,
                        delta: more,
                    },
                ) if *index == next => delta.push_str(&more),
                (_, event) => kept.push(event),
            }
        }
        matches!(kept.last(), Some(ChatEvent::Finish { .. })).then_some(Self {
            events: kept,
            stored_at,
            expires_at,
        })
    }

    /// Roughly what it occupies in memory, for a store's bound.
    pub fn weight(&self) -> usize {
        self.events
            .iter()
            .map(|event| match event {
                ChatEvent::TextDelta(text) | ChatEvent::ReasoningDelta(text) => text.len(),
                ChatEvent::ToolCallStart { id, name, .. } => id.len() + name.len(),
                ChatEvent::ToolCallArgumentsDelta { delta, .. } => delta.len(),
                _ => 0,
            })
            .sum::<usize>()
            + self.events.len() * std::mem::size_of::<ChatEvent>()
    }
}

/// How a lookup was answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// The same request was answered before.
    Exact(CachedAnswer),
    /// A question of the same partition this similar to the request's was answered before.
    Semantic {
        answer: CachedAnswer,
        similarity: f32,
    },
}

impl Lookup {
    pub fn answer(&self) -> &CachedAnswer {
        match self {
            Lookup::Exact(answer) | Lookup::Semantic { answer, .. } => answer,
        }
    }

    pub fn into_answer(self) -> CachedAnswer {
        match self {
            Lookup::Exact(answer) | Lookup::Semantic { answer, .. } => answer,
        }
    }
}

/// A question's place in the semantic cache: its partition and its embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub partition: Partition,
    /// Unit length.
    pub embedding: Vec<f32>,
}

/// Where cached answers are kept. Expired answers are never returned; how many are kept is
/// the store's own bound.
#[async_trait]
pub trait ResponseCacheStore: Send + Sync {
    /// The unexpired answer of exactly this request.
    async fn exact(
        &self,
        key: &ExactKey,
        now: DateTime<Utc>,
    ) -> Result<Option<CachedAnswer>, DomainError>;

    /// The unexpired answer in `partition` whose question's embedding is the most similar
    /// to `embedding` (cosine, both of unit length), if at least `threshold`.
    async fn nearest(
        &self,
        partition: &Partition,
        embedding: &[f32],
        threshold: f32,
        now: DateTime<Utc>,
    ) -> Result<Option<(CachedAnswer, f32)>, DomainError>;

    /// Keeps `answer` under `key` and, with `question`, for near-duplicates of it too.
    async fn put(
        &self,
        key: ExactKey,
        question: Option<Question>,
        answer: CachedAnswer,
    ) -> Result<(), DomainError>;
}

/// `vector` scaled to unit length (the zero vector stays zero).
pub fn normalised(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

#[cfg(test)]
mod tests {
    use tessera_models::{FinishReason, Route, Usage};

    use super::*;

    #[test]
    fn an_answer_keeps_its_events_joined_and_needs_its_finish() {
        let now = Utc::now();
        let finish = ChatEvent::Finish {
            reason: FinishReason::Stop,
            usage: Usage::default(),
        };
        let answer = CachedAnswer::of(
            [
                ChatEvent::Routed(Route {
                    deployment: "primary".into(),
                    provider: "openai".into(),
                    failed_attempts: Vec::new(),
                }),
                ChatEvent::ReasoningDelta("Think".into()),
                ChatEvent::ReasoningDelta("ing".into()),
                ChatEvent::TextDelta("Hel".into()),
                ChatEvent::TextDelta("lo".into()),
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "call_1".into(),
                    name: "weather".into(),
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "{\"city\":".into(),
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "\"Oslo\"}".into(),
                },
                ChatEvent::ToolCallEnd { index: 0 },
                finish.clone(),
            ],
            now,
            now,
        )
        .unwrap();
        assert_eq!(
            answer.events,
            vec![
                ChatEvent::ReasoningDelta("Thinking".into()),
                ChatEvent::TextDelta("Hello".into()),
                ChatEvent::ToolCallStart {
                    index: 0,
                    id: "call_1".into(),
                    name: "weather".into(),
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "{\"city\":\"Oslo\"}".into(),
                },
                ChatEvent::ToolCallEnd { index: 0 },
                finish,
            ]
        );
        assert!(CachedAnswer::of([ChatEvent::TextDelta("cut".into())], now, now).is_none());
    }

    #[test]
    fn vectors_are_normalised() {
        assert_eq!(normalised(vec![3.0, 4.0]), vec![0.6, 0.8]);
        assert_eq!(normalised(vec![0.0, 0.0]), vec![0.0, 0.0]);
    }
}
