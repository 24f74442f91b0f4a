//! [`InMemoryResponseCache`]: the embedded setup's cache of answers, in this process's
//! memory, bounded by a number of answers and a number of bytes (least recently used
//! evicted first). Each replica keeps its own; a restart empties it.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Mutex,
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::DomainError;

use crate::{CachedAnswer, ExactKey, Partition, Question, ResponseCacheStore};

/// Answers kept in memory, at most `max_entries` of them and about `max_bytes` in all.
pub struct InMemoryResponseCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<ExactKey, Entry>,
    /// Each partition's answers that have a question, for semantic lookups.
    partitions: HashMap<Partition, Vec<ExactKey>>,
    /// Last use → key: the first is the least recently used.
    recency: BTreeMap<u64, ExactKey>,
    clock: u64,
    bytes: usize,
}

struct Entry {
    answer: CachedAnswer,
    question: Option<Question>,
    used: u64,
    weight: usize,
}

impl InMemoryResponseCache {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            max_entries: max_entries.max(1),
            max_bytes,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// How many answers it holds (expired ones included until they are evicted or read).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves nothing half-written that matters here.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    fn touch(&mut self, key: &ExactKey) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(entry) = self.entries.get_mut(key) {
            self.recency.remove(&entry.used);
            entry.used = clock;
            self.recency.insert(clock, key.clone());
        }
    }

    fn remove(&mut self, key: &ExactKey) {
        let Some(entry) = self.entries.remove(key) else {
            return;
        };
        self.recency.remove(&entry.used);
        self.bytes -= entry.weight;
        if let Some(question) = entry.question
            && let Some(keys) = self.partitions.get_mut(&question.partition)
        {
            keys.retain(|kept| kept != key);
            if keys.is_empty() {
                self.partitions.remove(&question.partition);
            }
        }
    }

    fn evict_least_recent(&mut self) -> bool {
        let Some((_, key)) = self.recency.pop_first() else {
            return false;
        };
        self.remove(&key);
        true
    }
}

#[async_trait]
impl ResponseCacheStore for InMemoryResponseCache {
    async fn exact(
        &self,
        key: &ExactKey,
        now: DateTime<Utc>,
    ) -> Result<Option<CachedAnswer>, DomainError> {
        let mut inner = self.lock();
        let Some(entry) = inner.entries.get(key) else {
            return Ok(None);
        };
        if entry.answer.expires_at <= now {
            inner.remove(key);
            return Ok(None);
        }
        let answer = entry.answer.clone();
        inner.touch(key);
        Ok(Some(answer))
    }

    async fn nearest(
        &self,
        partition: &Partition,
        embedding: &[f32],
        threshold: f32,
        now: DateTime<Utc>,
    ) -> Result<Option<(CachedAnswer, f32)>, DomainError> {
        let mut inner = self.lock();
        let Some(keys) = inner.partitions.get(partition) else {
            return Ok(None);
        };
        let mut expired = Vec::new();
        let mut best: Option<(&ExactKey, f32)> = None;
        for key in keys {
            let Some(entry) = inner.entries.get(key) else {
                continue;
            };
            if entry.answer.expires_at <= now {
                expired.push(key.clone());
                continue;
            }
            let Some(question) = &entry.question else {
                continue;
            };
            let similarity: f32 = (question.embedding.iter().zip(embedding))
                .map(|(a, b)| a * b)
                .sum();
            if similarity >= threshold && best.is_none_or(|(_, top)| similarity > top) {
                best = Some((key, similarity));
            }
        }
        let best = best.map(|(key, similarity)| (key.clone(), similarity));
        for key in &expired {
            inner.remove(key);
        }
        let Some((key, similarity)) = best else {
            return Ok(None);
        };
        let answer = inner.entries.get(&key).map(|entry| entry.answer.clone());
        inner.touch(&key);
        Ok(answer.map(|answer| (answer, similarity)))
    }

    async fn put(
        &self,
        key: ExactKey,
        question: Option<Question>,
        answer: CachedAnswer,
    ) -> Result<(), DomainError> {
        let weight = answer.weight()
            + key.as_str().len()
            + question.as_ref().map_or(0, |q| q.embedding.len() * 4);
        if weight > self.max_bytes {
            return Ok(()); // larger than the whole cache: not kept
        }
        let mut inner = self.lock();
        inner.remove(&key);
        while inner.entries.len() >= self.max_entries || inner.bytes + weight > self.max_bytes {
            if !inner.evict_least_recent() {
                break;
            }
        }
        if let Some(question) = &question {
            (inner.partitions.entry(question.partition.clone()))
                .or_default()
                .push(key.clone());
        }
        inner.bytes += weight;
        inner.entries.insert(
            key.clone(),
            Entry {
                answer,
                question,
                used: 0,
                weight,
            },
        );
        inner.touch(&key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use tessera_kernel::OrganizationId;
    use tessera_models::{ChatEvent, ChatMessage, ChatRequest, FinishReason, Role, Usage};

    use super::*;
    use crate::{CacheScope, normalised};

    fn answer(text: &str, expires_at: DateTime<Utc>) -> CachedAnswer {
        let events = [
            ChatEvent::TextDelta(text.into()),
            ChatEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage::default(),
            },
        ];
        CachedAnswer::of(events, expires_at - Duration::hours(1), expires_at).unwrap()
    }

    fn keyed(question: &str) -> (ExactKey, Partition) {
        let organization: OrganizationId = "acme".parse().unwrap();
        let scope = CacheScope {
            organization: &organization,
            model_id: "m",
            principal: None,
        };
        let request = ChatRequest {
            messages: vec![ChatMessage::new(Role::User, question)],
            ..ChatRequest::default()
        };
        let partition = Partition::of(&scope, &request).unwrap().0;
        (ExactKey::of(&scope, &request), partition)
    }

    fn text(answer: &CachedAnswer) -> &str {
        match &answer.events[0] {
            ChatEvent::TextDelta(text) => text,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_exact_answer_is_served_until_it_expires() {
        let cache = InMemoryResponseCache::new(10, 1 << 20);
        let now = Utc::now();
        let (key, _) = keyed("What is Rust?");
        cache
            .put(
                key.clone(),
                None,
                answer("A language.", now + Duration::seconds(60)),
            )
            .await
            .unwrap();
        let hit = cache.exact(&key, now).await.unwrap().unwrap();
        assert_eq!(text(&hit), "A language.");
        assert!(
            cache
                .exact(&keyed("What is Go?").0, now)
                .await
                .unwrap()
                .is_none()
        );
        let later = now + Duration::seconds(61);
        assert!(cache.exact(&key, later).await.unwrap().is_none());
        assert!(cache.is_empty(), "an expired answer is dropped when read");
    }

    #[tokio::test]
    async fn the_nearest_question_above_the_threshold_answers() {
        let cache = InMemoryResponseCache::new(10, 1 << 20);
        let now = Utc::now();
        let expires = now + Duration::seconds(60);
        let (rust, partition) = keyed("What is Rust?");
        let (go, _) = keyed("What is Go?");
        let question = |embedding: Vec<f32>| Question {
            partition: partition.clone(),
            embedding: normalised(embedding),
        };
        cache
            .put(
                rust,
                Some(question(vec![1.0, 0.0, 0.0])),
                answer("rust", expires),
            )
            .await
            .unwrap();
        cache
            .put(
                go,
                Some(question(vec![0.0, 1.0, 0.0])),
                answer("go", expires),
            )
            .await
            .unwrap();
        let probe = normalised(vec![0.9, 0.1, 0.0]);
        let (hit, similarity) = cache
            .nearest(&partition, &probe, 0.9, now)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text(&hit), "rust");
        assert!(similarity > 0.99);
        let far = normalised(vec![0.0, 0.0, 1.0]);
        assert!(
            cache
                .nearest(&partition, &far, 0.9, now)
                .await
                .unwrap()
                .is_none()
        );
        let other = keyed("x").1;
        let (_, other_partition) = {
            let organization: OrganizationId = "globex".parse().unwrap();
            let scope = CacheScope {
                organization: &organization,
                model_id: "m",
                principal: None,
            };
            let request = ChatRequest {
                messages: vec![ChatMessage::new(Role::User, "x")],
                ..ChatRequest::default()
            };
            (other, Partition::of(&scope, &request).unwrap().0)
        };
        assert!(
            cache
                .nearest(&other_partition, &probe, 0.5, now)
                .await
                .unwrap()
                .is_none()
        );
        let later = now + Duration::seconds(61);
        assert!(
            cache
                .nearest(&partition, &probe, 0.5, later)
                .await
                .unwrap()
                .is_none()
        );
        assert!(cache.is_empty());
    }

    #[tokio::test]
    async fn the_least_recently_used_answer_goes_first() {
        let cache = InMemoryResponseCache::new(2, 1 << 20);
        let now = Utc::now();
        let expires = now + Duration::seconds(60);
        let (a, b, c) = (keyed("a").0, keyed("b").0, keyed("c").0);
        cache
            .put(a.clone(), None, answer("a", expires))
            .await
            .unwrap();
        cache
            .put(b.clone(), None, answer("b", expires))
            .await
            .unwrap();
        cache.exact(&a, now).await.unwrap().unwrap();
        cache
            .put(c.clone(), None, answer("c", expires))
            .await
            .unwrap();
        assert!(
            cache.exact(&b, now).await.unwrap().is_none(),
            "b was least recent"
        );
        assert!(cache.exact(&a, now).await.unwrap().is_some());
        assert!(cache.exact(&c, now).await.unwrap().is_some());
        assert_eq!(cache.len(), 2);
    }

    #[tokio::test]
    async fn the_byte_bound_holds() {
        let big = "x".repeat(1_000);
        let cache = InMemoryResponseCache::new(100, 2_500);
        let now = Utc::now();
        let expires = now + Duration::seconds(60);
        for question in ["a", "b", "c", "d"] {
            cache
                .put(keyed(question).0, None, answer(&big, expires))
                .await
                .unwrap();
        }
        assert!(cache.len() <= 2);
        assert!(cache.exact(&keyed("d").0, now).await.unwrap().is_some());
        let huge = "x".repeat(10_000);
        cache
            .put(keyed("e").0, None, answer(&huge, expires))
            .await
            .unwrap();
        assert!(cache.exact(&keyed("e").0, now).await.unwrap().is_none());
    }
}
