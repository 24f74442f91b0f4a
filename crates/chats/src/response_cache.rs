//! The response cache in the completion pipeline: the [`ResponseCache`] port (the model's
//! policy, the question's embedding and the store of answers), what a completion decides
//! before its generation ([`CachePlan`]: hit, miss, or not cached) and what the generation
//! does with it ([`CacheRun`]: replays a hit's events in place of the model's first call,
//! or keeps a miss's events to store once the completion succeeded).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use futures_util::{StreamExt, stream::BoxStream};
use tessera_kernel::{Caller, OrganizationId};
use tessera_models::{ChatEvent, ChatRequest, FinishReason, ProviderError};
use tessera_response_cache::{
    CachePolicySpec, CacheScope, CachedAnswer, ExactKey, Partition, Question, ResponseCacheStore,
    normalised,
};

use crate::ChatError;

/// The response cache as completions use it (Tessera's: the organization's cache policies,
/// the knowledge embedder and the process's store, in `tessera-services`).
#[async_trait]
pub trait ResponseCache: Send + Sync {
    /// The model's cache policy in the organization; `None` when it is not opted in.
    async fn policy(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<CachePolicySpec>, ChatError>;

    /// The embedding of a question, for the semantic cache.
    async fn embed(&self, question: &str) -> Result<Vec<f32>, ChatError>;

    /// Where answers are kept.
    fn store(&self) -> Arc<dyn ResponseCacheStore>;

    /// Hears how a completion of a cached model was answered (for metrics).
    fn looked_up(&self, _status: CacheStatus) {}
}

/// What a request asks of the cache (HTTP's `Cache-Control` request directives).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheDirectives {
    /// `no-cache`: answer from the model, not from the cache (the answer may be stored).
    pub no_cache: bool,
    /// `no-store`: keep nothing of this request or its answer in the cache.
    pub no_store: bool,
}

/// Whether a completion of a cached model was answered from the cache (`X-Cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
}

impl CacheStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Miss => "miss",
        }
    }
}

/// What a completion's generation does with the cache.
pub(crate) struct CacheRun {
    /// The answer to replay in place of the model's first call.
    hit: Option<CachedAnswer>,
    /// Whether the first call was a replay (its usage is recorded as cached).
    pub(crate) served: bool,
    /// Where a miss's answer is stored, and its events so far.
    storing: Option<Storing>,
}

struct Storing {
    store: Arc<dyn ResponseCacheStore>,
    key: ExactKey,
    question: Option<Question>,
    ttl: Duration,
    events: Vec<ChatEvent>,
}

/// The cache's part in a completion, decided before its generation begins.
pub(crate) struct CachePlan {
    pub(crate) status: Option<CacheStatus>,
    pub(crate) run: Option<CacheRun>,
}

impl CachePlan {
    /// Not cached: the model is not opted in.
    pub(crate) fn none() -> Self {
        Self {
            status: None,
            run: None,
        }
    }

    /// Looks the completion up: `request` is what the provider would read; answers are
    /// shared within the organization and the model named, and within the caller's own
    /// requests only when `user_specific` (knowledge was retrieved for them). A request
    /// hotter than the policy allows, or that says `no-cache`, is a miss; one that says
    /// `no-store` is not stored.
    pub(crate) async fn decide(
        cache: &dyn ResponseCache,
        caller: &Caller,
        model_id: &str,
        request: &ChatRequest,
        user_specific: bool,
        directives: CacheDirectives,
        now: DateTime<Utc>,
    ) -> Result<Self, ChatError> {
        let Some(policy) = cache.policy(caller.organization(), model_id).await? else {
            return Ok(Self::none());
        };
        let miss = Self {
            status: Some(CacheStatus::Miss),
            run: None,
        };
        if request.temperature.unwrap_or(0.0) > policy.max_temperature
            || (directives.no_cache && directives.no_store)
        {
            cache.looked_up(CacheStatus::Miss);
            return Ok(miss);
        }
        let scope = CacheScope {
            organization: caller.organization(),
            model_id,
            principal: user_specific.then(|| caller.subject()),
        };
        let store = cache.store();
        let key = ExactKey::of(&scope, request);
        // The cache only saves work: when it fails, the model answers.
        let mut hit = match directives.no_cache {
            true => None,
            false => store.exact(&key, now).await.unwrap_or_else(|error| {
                tracing::warn!(%error, "the response cache could not be read");
                None
            }),
        };
        let mut question = None;
        if let (Some(semantic), Some((partition, asked))) =
            (&policy.semantic, Partition::of(&scope, request))
            && hit.is_none()
        {
            match cache.embed(asked).await {
                Ok(embedding) => {
                    let embedding = normalised(embedding);
                    if !directives.no_cache {
                        hit = (store.nearest(&partition, &embedding, semantic.threshold, now))
                            .await
                            .unwrap_or_else(|error| {
                                tracing::warn!(%error, "the response cache could not be read");
                                None
                            })
                            .map(|(answer, _)| answer);
                    }
                    question = Some(Question {
                        partition,
                        embedding,
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "a question could not be embedded for the semantic cache");
                }
            }
        }
        let storing = (hit.is_none() && !directives.no_store).then(|| Storing {
            store,
            key,
            question,
            ttl: Duration::seconds(i64::from(policy.ttl_seconds)),
            events: Vec::new(),
        });
        let status = match hit {
            Some(_) => CacheStatus::Hit,
            None => CacheStatus::Miss,
        };
        cache.looked_up(status);
        Ok(Self {
            status: Some(status),
            run: Some(CacheRun {
                hit,
                served: false,
                storing,
            }),
        })
    }
}

impl CacheRun {
    /// Whether the next call is a replay.
    pub(crate) fn will_replay(&self) -> bool {
        self.hit.is_some()
    }

    /// The cached answer's events as the model's stream, once (the first call).
    pub(crate) fn replay(
        &mut self,
    ) -> Option<BoxStream<'static, Result<ChatEvent, ProviderError>>> {
        let hit = self.hit.take()?;
        self.served = true;
        Some(futures_util::stream::iter(hit.events.into_iter().map(Ok)).boxed())
    }

    /// Keeps an event of the model's first call, to be stored.
    pub(crate) fn heard(&mut self, event: &ChatEvent) {
        if let Some(storing) = &mut self.storing {
            storing.events.push(event.clone());
        }
    }

    /// Stores what the first call answered, once the completion succeeded. Answers cut
    /// short or withheld by a filter are not kept.
    pub(crate) async fn store(self, now: DateTime<Utc>) {
        let Some(storing) = self.storing else {
            return;
        };
        let finished = storing.events.iter().rev().find_map(|event| match event {
            ChatEvent::Finish { reason, .. } => Some(reason.clone()),
            _ => None,
        });
        if !matches!(finished, Some(FinishReason::Stop | FinishReason::ToolCalls)) {
            return;
        }
        let Some(answer) = CachedAnswer::of(storing.events, now, now + storing.ttl) else {
            return;
        };
        if let Err(error) = storing
            .store
            .put(storing.key, storing.question, answer)
            .await
        {
            // A cache that cannot keep an answer costs the next request a model call only.
            tracing::warn!(%error, "could not keep an answer in the response cache");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tessera_models::{ChatMessage, Role, Usage};
    use tessera_response_cache::{InMemoryResponseCache, SemanticSpec};

    use super::*;

    /// One policy for every model, embeddings by a lookup table, and the lookups heard.
    struct FixedCache {
        policy: Option<CachePolicySpec>,
        store: Arc<InMemoryResponseCache>,
        heard: Mutex<Vec<CacheStatus>>,
    }

    impl FixedCache {
        fn new(policy: Option<CachePolicySpec>) -> Self {
            Self {
                policy,
                store: Arc::new(InMemoryResponseCache::new(100, 1 << 20)),
                heard: Mutex::new(Vec::new()),
            }
        }
    }

    #[async_trait]
    impl ResponseCache for FixedCache {
        async fn policy(
            &self,
            _organization: &OrganizationId,
            _model_id: &str,
        ) -> Result<Option<CachePolicySpec>, ChatError> {
            Ok(self.policy.clone())
        }

        async fn embed(&self, question: &str) -> Result<Vec<f32>, ChatError> {
            Ok(if question.contains("capital") {
                vec![1.0, 0.1]
            } else {
                vec![0.0, 1.0]
            })
        }

        fn store(&self) -> Arc<dyn ResponseCacheStore> {
            self.store.clone()
        }

        fn looked_up(&self, status: CacheStatus) {
            self.heard.lock().unwrap().push(status);
        }
    }

    fn caller(organization: &str, subject: &str) -> Caller {
        Caller::of(tessera_kernel::Principal {
            subject: subject.into(),
            organization_id: organization.parse().unwrap(),
            scopes: tessera_kernel::ScopeSet::default(),
            kind: tessera_kernel::PrincipalKind::Client,
            origin: None,
        })
    }

    fn asking(question: &str, temperature: Option<f32>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::new(Role::User, question)],
            temperature,
            ..ChatRequest::default()
        }
    }

    /// Decides, then runs a "model" that answers `text` through the plan's run.
    async fn ask(
        cache: &FixedCache,
        caller: &Caller,
        request: &ChatRequest,
        user_specific: bool,
        directives: CacheDirectives,
        text: &str,
    ) -> (Option<CacheStatus>, String) {
        let now = Utc::now();
        let plan = CachePlan::decide(cache, caller, "m", request, user_specific, directives, now)
            .await
            .unwrap();
        let Some(mut run) = plan.run else {
            return (plan.status, text.to_owned());
        };
        let events: Vec<ChatEvent> = match run.replay() {
            Some(replay) => replay.map(Result::unwrap).collect().await,
            None => vec![
                ChatEvent::TextDelta(text.into()),
                ChatEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Usage::default(),
                },
            ],
        };
        for event in &events {
            run.heard(event);
        }
        run.store(now).await;
        let answer = events
            .iter()
            .filter_map(|event| match event {
                ChatEvent::TextDelta(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (plan.status, answer)
    }

    fn policy(semantic: bool) -> CachePolicySpec {
        CachePolicySpec {
            semantic: semantic.then_some(SemanticSpec { threshold: 0.9 }),
            max_temperature: 0.5,
            ..CachePolicySpec::default()
        }
    }

    const PLAIN: CacheDirectives = CacheDirectives {
        no_cache: false,
        no_store: false,
    };

    #[tokio::test]
    async fn a_model_not_opted_in_is_neither_looked_up_nor_stored() {
        let cache = FixedCache::new(None);
        let alice = caller("acme", "alice");
        let request = asking("What is the capital of France?", None);
        let asked = ask(&cache, &alice, &request, false, PLAIN, "Paris").await;
        assert_eq!(asked, (None, "Paris".into()));
        assert!(cache.store.is_empty());
        assert!(cache.heard.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_same_request_is_a_hit_and_its_directives_are_honoured() {
        let cache = FixedCache::new(Some(policy(false)));
        let alice = caller("acme", "alice");
        let request = asking("What is the capital of France?", Some(0.0));
        let miss = ask(&cache, &alice, &request, false, PLAIN, "Paris").await;
        assert_eq!(miss, (Some(CacheStatus::Miss), "Paris".into()));
        let hit = ask(&cache, &alice, &request, false, PLAIN, "Lyon").await;
        assert_eq!(hit, (Some(CacheStatus::Hit), "Paris".into()));
        // Another user of the organization shares answers that are not user-specific...
        let bob = caller("acme", "bob");
        let shared = ask(&cache, &bob, &request, false, PLAIN, "Lyon").await;
        assert_eq!(shared, (Some(CacheStatus::Hit), "Paris".into()));
        // ...but not user-specific ones, nor another organization's.
        let own = ask(&cache, &bob, &request, true, PLAIN, "Lyon").await;
        assert_eq!(own, (Some(CacheStatus::Miss), "Lyon".into()));
        let stranger = caller("globex", "alice");
        let theirs = ask(&cache, &stranger, &request, false, PLAIN, "Nice").await;
        assert_eq!(theirs, (Some(CacheStatus::Miss), "Nice".into()));

        let no_cache = CacheDirectives {
            no_cache: true,
            ..PLAIN
        };
        let fresh = ask(&cache, &alice, &request, false, no_cache, "Marseille").await;
        assert_eq!(fresh, (Some(CacheStatus::Miss), "Marseille".into()));
        let kept = ask(&cache, &alice, &request, false, PLAIN, "Lyon").await;
        assert_eq!(
            kept,
            (Some(CacheStatus::Hit), "Marseille".into()),
            "no-cache stores"
        );

        let no_store = CacheDirectives {
            no_store: true,
            ..PLAIN
        };
        let other = asking("Will it rain?", None);
        ask(&cache, &alice, &other, false, no_store, "Yes").await;
        let unkept = ask(&cache, &alice, &other, false, PLAIN, "No").await;
        assert_eq!(
            unkept,
            (Some(CacheStatus::Miss), "No".into()),
            "no-store kept nothing"
        );
    }

    #[tokio::test]
    async fn hot_requests_are_never_cached() {
        let cache = FixedCache::new(Some(policy(false)));
        let alice = caller("acme", "alice");
        let hot = asking("What is the capital of France?", Some(0.9));
        ask(&cache, &alice, &hot, false, PLAIN, "Paris").await;
        let again = ask(&cache, &alice, &hot, false, PLAIN, "Lyon").await;
        assert_eq!(again, (Some(CacheStatus::Miss), "Lyon".into()));
        assert!(cache.store.is_empty());
        assert_eq!(
            *cache.heard.lock().unwrap(),
            vec![CacheStatus::Miss, CacheStatus::Miss]
        );
    }

    #[tokio::test]
    async fn a_near_question_is_a_semantic_hit_and_a_far_one_a_miss() {
        let cache = FixedCache::new(Some(policy(true)));
        let alice = caller("acme", "alice");
        let asked = asking("What is the capital of France?", None);
        ask(&cache, &alice, &asked, false, PLAIN, "Paris").await;
        let near = asking("Which city is the capital of France?", None);
        let hit = ask(&cache, &alice, &near, false, PLAIN, "Lyon").await;
        assert_eq!(hit, (Some(CacheStatus::Hit), "Paris".into()));
        let far = asking("How many legs has a spider?", None);
        let miss = ask(&cache, &alice, &far, false, PLAIN, "Eight").await;
        assert_eq!(miss, (Some(CacheStatus::Miss), "Eight".into()));
        // An exact-only policy does not match paraphrases.
        let exact = FixedCache::new(Some(policy(false)));
        ask(&exact, &alice, &asked, false, PLAIN, "Paris").await;
        let paraphrase = ask(&exact, &alice, &near, false, PLAIN, "Lyon").await;
        assert_eq!(paraphrase, (Some(CacheStatus::Miss), "Lyon".into()));
    }

    #[tokio::test]
    async fn answers_cut_short_are_not_kept() {
        let cache = FixedCache::new(Some(policy(false)));
        let alice = caller("acme", "alice");
        let request = asking("Tell me a long story", None);
        let plan = CachePlan::decide(&cache, &alice, "m", &request, false, PLAIN, Utc::now())
            .await
            .unwrap();
        let mut run = plan.run.unwrap();
        run.heard(&ChatEvent::TextDelta("Once".into()));
        run.heard(&ChatEvent::Finish {
            reason: FinishReason::Length,
            usage: Usage::default(),
        });
        run.store(Utc::now()).await;
        assert!(cache.store.is_empty());
    }
}
