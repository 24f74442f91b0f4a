//! The router against scripted deployments (time paused: timeouts and back-offs elapse at
//! once, in order).

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use chrono::DateTime;
use futures_util::{StreamExt, stream};
use tessera_kernel::{Clock, ManualClock};
use tessera_prompts::TokenCounter;

use super::*;
use crate::{
    Capabilities, ChatEvent, ChatModel, ChatRequest, ChatStream, FinishReason, ProviderError, Usage,
};

/// What one call of a scripted deployment does.
#[derive(Clone)]
enum Behaviour {
    Refuse(ProviderError),
    /// Never answers.
    Hang,
    /// Streams these items, then (with `stall`) never ends.
    Answer {
        items: Vec<Result<ChatEvent, ProviderError>>,
        stall: bool,
    },
}

struct Scripted {
    calls: AtomicU32,
    script: Mutex<VecDeque<Behaviour>>,
    otherwise: Behaviour,
    models: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(script: Vec<Behaviour>, otherwise: Behaviour) -> Arc<Self> {
        Arc::new(Self {
            calls: AtomicU32::new(0),
            script: Mutex::new(script.into()),
            otherwise,
            models: Mutex::default(),
        })
    }

    fn always(behaviour: Behaviour) -> Arc<Self> {
        Self::new(Vec::new(), behaviour)
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        Arc::new(crate::memory::WordCounter)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.models.lock().unwrap().push(request.model);
        let behaviour = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| self.otherwise.clone());
        match behaviour {
            Behaviour::Refuse(error) => Err(error),
            Behaviour::Hang => std::future::pending().await,
            Behaviour::Answer { items, stall } => {
                let items = stream::iter(items);
                if stall {
                    Ok(Box::pin(items.chain(stream::pending())))
                } else {
                    Ok(Box::pin(items))
                }
            }
        }
    }
}

fn answer(text: &str) -> Behaviour {
    Behaviour::Answer {
        items: vec![
            Ok(ChatEvent::TextDelta(text.into())),
            Ok(ChatEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 1,
                    reasoning_tokens: 0,
                    cached_input_tokens: 0,
                },
            }),
        ],
        stall: false,
    }
}

fn server_error() -> Behaviour {
    Behaviour::Refuse(ProviderError::Upstream {
        status: Some(500),
        message: "boom".into(),
    })
}

fn deployment(name: &str, model: Arc<Scripted>, priority: u32, weight: u32) -> Deployment {
    Deployment {
        name: name.into(),
        provider: name.into(),
        model_name: format!("{name}-model"),
        weight,
        priority,
        timeouts: Timeouts {
            connect: Duration::from_secs(1),
            first_token: Duration::from_secs(2),
            idle: Duration::from_secs(3),
            total: Duration::from_secs(60),
        },
        model,
    }
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
    ))
}

fn routed(deployments: Vec<Deployment>, circuits: Arc<dyn CircuitBoard>) -> RoutedChatModel {
    RoutedChatModel::new(
        "acme/chat",
        deployments,
        RetryPolicy::default(),
        circuits,
        clock(),
    )
    .unwrap()
}

async fn collect(stream: ChatStream) -> Vec<Result<ChatEvent, ProviderError>> {
    stream.collect().await
}

/// The deployments of a route's failed attempts, in order.
fn failed_deployments(route: &Route) -> Vec<&str> {
    route
        .failed_attempts
        .iter()
        .map(|attempt| attempt.deployment.as_str())
        .collect()
}

fn route_of(events: &[Result<ChatEvent, ProviderError>]) -> Route {
    match &events[0] {
        Ok(ChatEvent::Routed(route)) => route.clone(),
        other => panic!("the first event is not the route: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_deployment_is_fallen_back_from_at_once() {
    let failing = Scripted::always(server_error());
    let healthy = Scripted::always(answer("Hello"));
    let model = routed(
        vec![
            deployment("primary", failing.clone(), 0, 1),
            deployment("backup", healthy.clone(), 1, 1),
        ],
        Arc::new(InProcessCircuits::default()),
    );
    let started = tokio::time::Instant::now();
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no back-off before a fallback"
    );
    let route = route_of(&events);
    assert_eq!(route.deployment, "backup");
    let failed = failed_deployments(&route);
    assert_eq!(failed, ["primary"]);
    assert!(route.failed_attempts[0].error.contains("boom"));
    assert_eq!((failing.calls(), healthy.calls()), (1, 1));
    // Each deployment is asked for its own name of the model.
    assert_eq!(*healthy.models.lock().unwrap(), ["backup-model"]);
    assert_eq!(events[1], Ok(ChatEvent::TextDelta("Hello".into())));
    assert_eq!(events.len(), 3, "{events:?}");
}

#[tokio::test(start_paused = true)]
async fn when_every_deployment_failed_they_are_retried_in_a_second_round_after_a_back_off() {
    let failing = Scripted::always(server_error());
    let recovering = Scripted::new(vec![server_error()], answer("Hello"));
    let model = routed(
        vec![
            deployment("primary", failing.clone(), 0, 1),
            deployment("backup", recovering.clone(), 1, 1),
        ],
        Arc::new(InProcessCircuits::default()),
    );
    let started = tokio::time::Instant::now();
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    let route = route_of(&events);
    assert_eq!(route.deployment, "backup");
    let failed = failed_deployments(&route);
    assert_eq!(failed, ["primary", "backup", "primary"]);
    assert_eq!((failing.calls(), recovering.calls()), (2, 2));
    // One jittered back-off of 100–200 ms between the rounds.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(100) && elapsed <= Duration::from_millis(200),
        "{elapsed:?}"
    );
    // Two rounds in all: a lone deployment that never recovers is tried twice, then the
    // completion fails with its error.
    let broken = Scripted::always(server_error());
    let model = routed(
        vec![deployment("only", broken.clone(), 0, 1)],
        Arc::new(InProcessCircuits::default()),
    );
    let error = model.stream(ChatRequest::default()).await.err().unwrap();
    assert!(error.to_string().contains("boom"), "{error}");
    assert_eq!(broken.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_request_at_fault_is_not_retried() {
    let refusing = Scripted::always(Behaviour::Refuse(ProviderError::InvalidRequest(
        "context too long".into(),
    )));
    let healthy = Scripted::always(answer("Hello"));
    let model = routed(
        vec![
            deployment("primary", refusing.clone(), 0, 1),
            deployment("backup", healthy.clone(), 1, 1),
        ],
        Arc::new(InProcessCircuits::default()),
    );
    let error = model.stream(ChatRequest::default()).await.err().unwrap();
    assert_eq!(
        error,
        ProviderError::InvalidRequest("context too long".into())
    );
    assert_eq!((refusing.calls(), healthy.calls()), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_and_a_long_one_falls_back_at_once() {
    let limited = |seconds| {
        Behaviour::Refuse(ProviderError::Unavailable {
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(seconds)),
        })
    };
    // Asked to wait 1 s: the same deployment answers after it.
    let once = Scripted::new(vec![limited(1)], answer("Hi"));
    let model = routed(
        vec![deployment("primary", once.clone(), 0, 1)],
        Arc::new(InProcessCircuits::default()),
    );
    let started = tokio::time::Instant::now();
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    assert_eq!(route_of(&events).deployment, "primary");
    assert_eq!(once.calls(), 2);
    assert!(started.elapsed() >= Duration::from_secs(1));
    // Asked to wait longer than the router's longest delay: the backup answers at once.
    let long = Scripted::always(limited(60));
    let backup = Scripted::always(answer("Hi"));
    let model = routed(
        vec![
            deployment("primary", long.clone(), 0, 1),
            deployment("backup", backup.clone(), 0, 1),
        ],
        Arc::new(InProcessCircuits::default()),
    );
    // Equal priorities: whichever is drawn first, the limited one is asked once at most.
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    assert_eq!(route_of(&events).deployment, "backup");
    assert!(long.calls() <= 1);
}

#[tokio::test(start_paused = true)]
async fn a_deployment_that_hangs_or_ends_early_times_out_before_the_first_token() {
    let hanging = Scripted::always(Behaviour::Hang);
    let silent = Scripted::always(Behaviour::Answer {
        items: vec![Ok(ChatEvent::TextDelta(String::new()))],
        stall: true,
    });
    let empty = Scripted::always(Behaviour::Answer {
        items: Vec::new(),
        stall: false,
    });
    let healthy = Scripted::always(answer("Hello"));
    let model = routed(
        vec![
            deployment("hanging", hanging.clone(), 0, 1),
            deployment("silent", silent.clone(), 1, 1),
            deployment("empty", empty.clone(), 2, 1),
            deployment("healthy", healthy, 3, 1),
        ],
        Arc::new(InProcessCircuits::default()),
    );
    let started = tokio::time::Instant::now();
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    let route = route_of(&events);
    assert_eq!(route.deployment, "healthy");
    let errors: Vec<_> = route
        .failed_attempts
        .iter()
        .map(|a| a.error.as_str())
        .collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].contains("did not answer in time"), "{errors:?}");
    assert!(errors[1].contains("did not answer in time"), "{errors:?}");
    assert!(errors[2].contains("before its first token"), "{errors:?}");
    // One attempt of 2 s on each hanging deployment, no back-off before a fallback.
    assert_eq!(started.elapsed(), Duration::from_secs(4));
    assert_eq!((hanging.calls(), silent.calls(), empty.calls()), (1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn after_the_first_token_a_failure_ends_the_stream_and_nothing_is_retried() {
    let breaking = Scripted::always(Behaviour::Answer {
        items: vec![
            Ok(ChatEvent::TextDelta("Hel".into())),
            Err(ProviderError::Upstream {
                status: None,
                message: "connection closed".into(),
            }),
        ],
        stall: false,
    });
    let stalling = Scripted::always(Behaviour::Answer {
        items: vec![Ok(ChatEvent::TextDelta("Hel".into()))],
        stall: true,
    });
    let backup = Scripted::always(answer("Hello"));
    for (failing, error) in [
        (breaking, "connection closed"),
        (stalling, "did not answer in time"),
    ] {
        let model = routed(
            vec![
                deployment("primary", failing.clone(), 0, 1),
                deployment("backup", backup.clone(), 1, 1),
            ],
            Arc::new(InProcessCircuits::default()),
        );
        let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
        assert_eq!(route_of(&events).deployment, "primary");
        assert_eq!(events[1], Ok(ChatEvent::TextDelta("Hel".into())));
        let last = events[2].as_ref().unwrap_err();
        assert!(last.to_string().contains(error), "{last}");
        assert_eq!(events.len(), 3);
        assert_eq!(failing.calls(), 1);
    }
    assert_eq!(backup.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_open_circuit_is_skipped_until_every_circuit_is_open() {
    let circuits = Arc::new(InProcessCircuits::default());
    let flaky = Scripted::new(vec![server_error(), server_error()], answer("from flaky"));
    let backup = Scripted::always(answer("from backup"));
    let model = routed(
        vec![
            deployment("flaky", flaky.clone(), 0, 1),
            deployment("backup", backup.clone(), 1, 1),
        ],
        circuits.clone(),
    );
    // Two failures (one per completion, each answered by the backup), then a third failure
    // opens the circuit.
    for _ in 0..2 {
        let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
        assert_eq!(route_of(&events).deployment, "backup");
    }
    circuits.failed("acme/chat#flaky", clock().now()).await;
    let health = model.health().await;
    assert!(health[0].1.is_open(clock().now()));
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    assert_eq!(route_of(&events).deployment, "backup");
    assert_eq!(flaky.calls(), 2, "the open circuit was tried");
    // Every circuit open: all are tried by priority rather than none.
    for _ in 0..3 {
        circuits.failed("acme/chat#backup", clock().now()).await;
    }
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    assert_eq!(route_of(&events).deployment, "flaky");
}

#[tokio::test(start_paused = true)]
async fn traffic_follows_priority_then_weight() {
    let heavy = Scripted::always(answer("heavy"));
    let light = Scripted::always(answer("light"));
    let spare = Scripted::always(answer("spare"));
    let model = routed(
        vec![
            deployment("spare", spare.clone(), 1, 100),
            deployment("heavy", heavy.clone(), 0, 3),
            deployment("light", light.clone(), 0, 1),
        ],
        Arc::new(InProcessCircuits::default()),
    );
    for _ in 0..400 {
        collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    }
    assert_eq!(spare.calls(), 0);
    // Expected 300 of 400; the bounds are five standard deviations (about 8.7) wide.
    assert!(
        (256..=344).contains(&heavy.calls()),
        "heavy: {}",
        heavy.calls()
    );
    assert_eq!(heavy.calls() + light.calls(), 400);
}

#[tokio::test(start_paused = true)]
async fn a_half_open_circuit_lets_one_probe_through_while_the_others_fall_back() {
    let circuits = Arc::new(InProcessCircuits::default());
    let clock = clock();
    // The probe hangs until its first-token timeout; afterwards the primary answers.
    let primary = Scripted::new(vec![Behaviour::Hang], answer("from primary"));
    let backup = Scripted::always(answer("from backup"));
    let model = Arc::new(
        RoutedChatModel::new(
            "acme/chat",
            vec![
                deployment("primary", primary.clone(), 0, 1),
                deployment("backup", backup.clone(), 1, 1),
            ],
            RetryPolicy::default(),
            circuits.clone(),
            clock.clone(),
        )
        .unwrap(),
    );
    for _ in 0..3 {
        circuits.failed("acme/chat#primary", clock.now()).await;
    }
    clock.advance(chrono::Duration::seconds(6));
    assert_eq!(model.health().await[0].2, CircuitPhase::HalfOpen);

    let probing = model.clone();
    let probe = tokio::spawn(async move {
        collect(probing.stream(ChatRequest::default()).await.unwrap()).await
    });
    while primary.calls() == 0 {
        tokio::task::yield_now().await;
    }
    // While the probe runs, every other request goes to the backup.
    for _ in 0..3 {
        let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
        assert_eq!(route_of(&events).deployment, "backup");
    }
    assert_eq!(primary.calls(), 1, "one probe, not every request");
    // The probe times out, falls back, and reopens the circuit.
    let events = probe.await.unwrap();
    let route = route_of(&events);
    assert_eq!(route.deployment, "backup");
    assert_eq!(failed_deployments(&route), ["primary"]);
    assert!(model.health().await[0].1.is_open(clock.now()));
    // After the longer cool-down, the next probe answers and closes the circuit.
    clock.advance(chrono::Duration::seconds(11));
    let events = collect(model.stream(ChatRequest::default()).await.unwrap()).await;
    assert_eq!(route_of(&events).deployment, "primary");
    assert_eq!(model.health().await[0].2, CircuitPhase::Closed);
}
