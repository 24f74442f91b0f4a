//! The routed model: a `ChatModel` over a catalog model's deployments.

use std::{
    hash::{BuildHasher, RandomState},
    sync::Arc,
};

use async_trait::async_trait;
use futures_util::{StreamExt, stream};
use tessera_kernel::Clock;
use tessera_prompts::TokenCounter;
use tokio::time::{Duration, Instant};

use super::{
    CircuitBoard, CircuitPhase, CircuitState, Deployment, FailedAttempt, Route,
    watchdog::{Circuit, Watch, is_first_token, watched},
};
use crate::{Capabilities, ChatEvent, ChatModel, ChatRequest, ChatStream, ProviderError};

/// Rounds of attempts: every deployment once, then again (after a back-off) those whose
/// failure may pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts on each deployment, the first included (0 counts as 1): the number of rounds.
    pub attempts_per_deployment: u32,
    /// The delay before the first retry; it doubles with every further one (with jitter).
    pub backoff_base: Duration,
    /// The longest wait before a round of retries. An upstream that asks (`Retry-After`)
    /// for longer is not retried.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts_per_deployment: 2,
            backoff_base: Duration::from_millis(200),
            max_delay: Duration::from_secs(4),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before attempt `attempt + 1`, or `None` when the upstream asked for
    /// more than `max_delay`.
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(asked) = retry_after {
            return (asked <= self.max_delay).then_some(asked);
        }
        let exponent = attempt.saturating_sub(1).min(20);
        let backoff = self
            .backoff_base
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        // Jitter in [50 %, 100 %]: callers failed together do not retry together.
        let factor = 0.5 + 0.5 * unit_random();
        Some(Duration::try_from_secs_f64(backoff.as_secs_f64() * factor).unwrap_or(backoff))
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NextStep {
    /// The request itself is at fault: every deployment would refuse it.
    GiveUp,
    /// Try this deployment again in the next round (after the upstream's `Retry-After`, if
    /// it said).
    Retry(Option<Duration>),
    /// This deployment cannot serve (e.g. its credentials are refused): not again.
    Fallback,
}

fn next_step(error: &ProviderError) -> NextStep {
    match error {
        ProviderError::InvalidRequest(_) => NextStep::GiveUp,
        ProviderError::Unavailable { retry_after, .. } => NextStep::Retry(*retry_after),
        ProviderError::Upstream {
            status: Some(401 | 403),
            ..
        } => NextStep::Fallback,
        ProviderError::Timeout | ProviderError::Upstream { .. } => NextStep::Retry(None),
    }
}

/// A catalog model served by one or more deployments. Before the first token reaches the
/// caller, a failed attempt (connect error, 429, 5xx, timeout, an answer that ends before
/// its first token) falls back to the next deployment at once; when every one has failed,
/// those that may be retried are tried again after a back-off; the first event of the
/// stream is [`ChatEvent::Routed`], saying which deployment answered after which failures.
/// After the first token nothing is retried: a failure ends the stream with its error.
pub struct RoutedChatModel {
    model_id: String,
    deployments: Vec<Deployment>,
    retry: RetryPolicy,
    circuits: Arc<dyn CircuitBoard>,
    clock: Arc<dyn Clock>,
}

impl RoutedChatModel {
    /// `None` when `deployments` is empty.
    pub fn new(
        model_id: impl Into<String>,
        deployments: Vec<Deployment>,
        retry: RetryPolicy,
        circuits: Arc<dyn CircuitBoard>,
        clock: Arc<dyn Clock>,
    ) -> Option<Self> {
        (!deployments.is_empty()).then(|| Self {
            model_id: model_id.into(),
            deployments,
            retry,
            circuits,
            clock,
        })
    }

    pub fn deployments(&self) -> &[Deployment] {
        &self.deployments
    }

    /// The circuit board's key of a deployment of this model.
    fn circuit(&self, deployment: &Deployment) -> String {
        format!("{}#{}", self.model_id, deployment.name)
    }

    /// Each deployment's circuit, in catalog order, with its phase now (the router's clock).
    pub async fn health(&self) -> Vec<(&Deployment, CircuitState, CircuitPhase)> {
        let keys: Vec<String> = self.deployments.iter().map(|d| self.circuit(d)).collect();
        let states = self.circuits.states(&keys).await;
        let now = self.clock.now();
        self.deployments
            .iter()
            .zip(states)
            .map(|(deployment, state)| (deployment, state, state.phase(now)))
            .collect()
    }

    /// Whether circuits are kept: a model with one deployment has nothing to fall back to,
    /// so it is always tried (and costs the board nothing).
    fn has_circuits(&self) -> bool {
        self.deployments.len() > 1
    }

    /// Whether a deployment is tried now: not while its circuit is open, and while it is
    /// half open only by the request that claims its one probe (issue 61: every request
    /// was let through).
    async fn admits(&self, deployment: &Deployment, phase: CircuitPhase) -> bool {
        match phase {
            CircuitPhase::Closed => true,
            CircuitPhase::Open { .. } => false,
            CircuitPhase::HalfOpen => {
                // The probe reports back by its first token at the latest.
                let lease = deployment
                    .timeouts
                    .first_token
                    .min(deployment.timeouts.total);
                let key = self.circuit(deployment);
                self.circuits
                    .claim_probe(&key, self.clock.now(), lease)
                    .await
            }
        }
    }

    /// The order deployments are tried in, with whether each had a circuit state (failures
    /// or an opening) to clear on success: the admitted ones by priority, and by a weighted
    /// draw among equal priorities; only when none is admitted, all of them by priority.
    async fn order(&self) -> (Vec<usize>, Vec<bool>) {
        if !self.has_circuits() {
            return (vec![0], vec![false]);
        }
        let health = self.health().await;
        let marked = health
            .iter()
            .map(|(_, state, _)| *state != CircuitState::default())
            .collect();
        let mut admitted = Vec::with_capacity(health.len());
        for (deployment, _, phase) in &health {
            admitted.push(self.admits(deployment, *phase).await);
        }
        let mut healthy: Vec<(u32, f64, usize)> = health
            .iter()
            .enumerate()
            .filter(|(index, _)| admitted[*index])
            .map(|(index, (deployment, _, _))| {
                // Efraimidis–Spirakis: sorting by u^(1/w) draws without replacement by weight.
                let weight = f64::from(deployment.weight.max(1));
                (deployment.priority, unit_random().powf(1.0 / weight), index)
            })
            .collect();
        if healthy.is_empty() {
            let mut all: Vec<usize> = (0..self.deployments.len()).collect();
            all.sort_by_key(|&index| self.deployments[index].priority);
            return (all, marked);
        }
        healthy.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let order = healthy.into_iter().map(|(_, _, index)| index).collect();
        (order, marked)
    }

    /// One attempt, up to its first token: the events so far and the rest of the stream.
    async fn first_token(
        deployment: &Deployment,
        request: &ChatRequest,
    ) -> Result<(Vec<ChatEvent>, ChatStream), ProviderError> {
        let mut request = request.clone();
        request.model.clone_from(&deployment.model_name);
        let timeouts = deployment.timeouts;
        let attempt = async {
            let mut stream = deployment.model.stream(request).await?;
            let mut head = Vec::new();
            loop {
                match stream.next().await {
                    Some(Ok(event)) => {
                        let first = is_first_token(&event);
                        head.push(event);
                        if first {
                            return Ok((head, stream));
                        }
                    }
                    Some(Err(error)) => return Err(error),
                    None => {
                        return Err(ProviderError::Upstream {
                            status: None,
                            message: "the answer ended before its first token".into(),
                        });
                    }
                }
            }
        };
        tokio::time::timeout(timeouts.first_token.min(timeouts.total), attempt)
            .await
            .unwrap_or(Err(ProviderError::Timeout))
    }

    /// The stream of the attempt that produced a first token: its route, what it has said
    /// so far, then the rest under the idle and total watchdog.
    async fn answering(
        &self,
        deployment: &Deployment,
        marked: bool,
        route: Route,
        head: Vec<ChatEvent>,
        rest: ChatStream,
        started: Instant,
    ) -> ChatStream {
        let circuit = self.circuit(deployment);
        if marked {
            self.circuits.succeeded(&circuit).await;
        }
        let watch = Watch {
            idle: deployment.timeouts.idle,
            deadline: started + deployment.timeouts.total,
            circuit: self.has_circuits().then(|| Circuit {
                board: self.circuits.clone(),
                key: circuit,
                clock: self.clock.clone(),
            }),
        };
        let head = std::iter::once(ChatEvent::Routed(route)).chain(head);
        Box::pin(stream::iter(head.map(Ok)).chain(watched(rest, watch)))
    }
}

#[async_trait]
impl ChatModel for RoutedChatModel {
    fn capabilities(&self) -> Capabilities {
        self.deployments[0].model.capabilities()
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        self.deployments[0].model.tokenizer()
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let mut failed_attempts = Vec::new();
        let mut last_error = None;
        let (mut candidates, mut marked) = self.order().await;
        let rounds = self.retry.attempts_per_deployment.max(1);
        // Round one tries every deployment once, falling back at once; the deployments that
        // may be retried are tried again in the next round, after the back-off (or the
        // longest `Retry-After` they asked for).
        for round in 1..=rounds {
            let mut retried = Vec::new();
            let mut wait = Duration::ZERO;
            for index in candidates {
                let deployment = &self.deployments[index];
                let started = Instant::now();
                let error = match Self::first_token(deployment, &request).await {
                    Ok((head, rest)) => {
                        let route = Route {
                            deployment: deployment.name.clone(),
                            provider: deployment.provider.clone(),
                            failed_attempts,
                        };
                        return Ok(self
                            .answering(deployment, marked[index], route, head, rest, started)
                            .await);
                    }
                    Err(error) => error,
                };
                let step = next_step(&error);
                if step == NextStep::GiveUp {
                    return Err(error);
                }
                if self.has_circuits() {
                    self.circuits
                        .failed(&self.circuit(deployment), self.clock.now())
                        .await;
                    marked[index] = true;
                }
                tracing::warn!(
                    model = %self.model_id,
                    deployment = %deployment.name,
                    round,
                    %error,
                    "a deployment failed before its first token"
                );
                failed_attempts.push(FailedAttempt {
                    deployment: deployment.name.clone(),
                    error: error.to_string(),
                });
                if let NextStep::Retry(retry_after) = step
                    && round < rounds
                    && let Some(delay) = self.retry.delay(round, retry_after)
                {
                    retried.push(index);
                    wait = wait.max(delay);
                }
                last_error = Some(error);
            }
            if retried.is_empty() {
                break;
            }
            tokio::time::sleep(wait).await;
            candidates = retried;
        }
        Err(last_error.unwrap_or_else(|| ProviderError::Unavailable {
            message: format!("model `{}` has no deployment", self.model_id),
            retry_after: None,
        }))
    }
}

/// A uniform draw in [0, 1) from the standard library's randomly keyed hasher.
fn unit_random() -> f64 {
    let bits = RandomState::new().hash_one(std::time::Instant::now()) >> 11;
    bits as f64 / (1u64 << 53) as f64
}
