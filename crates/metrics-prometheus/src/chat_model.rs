//! A chat model that measures its upstream calls: completions by outcome, tokens, time to
//! the first event, the call's duration and the calls in flight. It wraps each provider
//! where the app builds them, so the chats domain does not know metrics exist. A routed
//! model's call is credited to the provider of the deployment that answered, which its
//! stream names first (`ChatEvent::Routed`).

use std::{
    pin::Pin,
    sync::{Arc, OnceLock},
    task::{Context, Poll},
    time::Instant,
};

use async_trait::async_trait;
use futures_util::Stream;
use metrics::{Counter, Gauge, Histogram};
use tessera_models::{
    Capabilities, ChatEvent, ChatModel, ChatRequest, ChatStream, ProviderError, Usage,
};
use tessera_prompts::TokenCounter;

use super::names;

/// Measures every generation of `inner`, labelled with the catalog model and provider.
pub struct MeteredChatModel {
    inner: Arc<dyn ChatModel>,
    /// One series per provider that may answer; the first is credited with a call until
    /// (and unless) its stream names another.
    series: Arc<[Arc<Series>]>,
}

impl MeteredChatModel {
    /// `model` is the catalog (base) model's id and `provider` its provider's name, both
    /// from the operator's catalog: bounded label values.
    pub fn new(inner: Arc<dyn ChatModel>, model: &str, provider: &str) -> Self {
        Self::routed(inner, model, provider, [])
    }

    /// A model routed over deployments of the `answering` providers: each call is
    /// credited to the provider whose deployment answered; a call no deployment answered,
    /// to `provider` (the catalog model's own).
    pub fn routed<'a>(
        inner: Arc<dyn ChatModel>,
        model: &str,
        provider: &str,
        answering: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut providers = vec![provider];
        for name in answering {
            if !providers.contains(&name) {
                providers.push(name);
            }
        }
        let series = providers
            .into_iter()
            .map(|provider| {
                Arc::new(Series {
                    model: model.to_owned(),
                    provider: provider.to_owned(),
                    ..Series::default()
                })
            })
            .collect();
        Self { inner, series }
    }
}

/// How a call ended, as its completion is counted and its duration labelled.
#[derive(Clone, Copy)]
enum Ending {
    Finished,
    Cancelled,
    Failed(ErrorType),
}

/// Why a call failed (its duration's `error_type`).
#[derive(Clone, Copy)]
enum ErrorType {
    Unavailable,
    Timeout,
    Upstream,
    InvalidRequest,
}

impl ErrorType {
    const COUNT: usize = 4;

    fn of(error: &ProviderError) -> Self {
        match error {
            ProviderError::Unavailable { .. } => Self::Unavailable,
            ProviderError::Timeout => Self::Timeout,
            ProviderError::Upstream { .. } => Self::Upstream,
            ProviderError::InvalidRequest(_) => Self::InvalidRequest,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Unavailable => "unavailable",
            Self::Timeout => "timeout",
            Self::Upstream => "upstream",
            Self::InvalidRequest => "invalid_request",
        }
    }
}

/// This model's series, each registered with the recorder on its first use and kept: a
/// completion records eight of them, and looking each up by its labels (building the key,
/// hashing it, copying the label values) cost more than recording (issue 32).
#[derive(Default)]
struct Series {
    model: String,
    provider: String,
    in_flight: OnceLock<Gauge>,
    time_to_first_token: OnceLock<Histogram>,
    /// Finished, cancelled, error.
    completions: [OnceLock<Counter>; 3],
    /// Finished, cancelled, then each [`ErrorType`] in order.
    durations: [OnceLock<Histogram>; 2 + ErrorType::COUNT],
    /// Input, output.
    tokens: [OnceLock<Histogram>; 2],
    reasoning_tokens: OnceLock<Counter>,
    cached_input_tokens: OnceLock<Counter>,
}

impl Series {
    fn labels(&self) -> Vec<(&'static str, String)> {
        vec![
            ("gen_ai_request_model", self.model.clone()),
            ("gen_ai_provider_name", self.provider.clone()),
        ]
    }

    fn with(&self, name: &'static str, value: &str) -> Vec<(&'static str, String)> {
        let mut labels = self.labels();
        labels.push((name, value.to_owned()));
        labels
    }

    fn in_flight(&self) -> &Gauge {
        self.in_flight
            .get_or_init(|| metrics::gauge!(names::GENERATIONS_IN_FLIGHT))
    }

    fn time_to_first_token(&self) -> &Histogram {
        self.time_to_first_token
            .get_or_init(|| metrics::histogram!(names::TIME_TO_FIRST_TOKEN, &self.labels()))
    }

    fn completions(&self, ending: Ending) -> &Counter {
        let (slot, outcome) = match ending {
            Ending::Finished => (0, "finished"),
            Ending::Cancelled => (1, "cancelled"),
            Ending::Failed(_) => (2, "error"),
        };
        self.completions[slot].get_or_init(|| {
            metrics::counter!(names::CHAT_COMPLETIONS, &self.with("outcome", outcome))
        })
    }

    fn duration(&self, ending: Ending) -> &Histogram {
        let (slot, error) = match ending {
            Ending::Finished => (0, None),
            Ending::Cancelled => (1, Some("cancelled")),
            Ending::Failed(error) => (2 + error as usize, Some(error.label())),
        };
        self.durations[slot].get_or_init(|| {
            let mut labels = self.with("gen_ai_operation_name", "chat");
            if let Some(error) = error {
                labels.push(("error_type", error.to_owned()));
            }
            metrics::histogram!(names::OPERATION_DURATION, &labels)
        })
    }

    fn tokens(&self, output: bool) -> &Histogram {
        let (slot, kind) = if output { (1, "output") } else { (0, "input") };
        self.tokens[slot].get_or_init(|| {
            metrics::histogram!(names::TOKEN_USAGE, &self.with("gen_ai_token_type", kind))
        })
    }

    fn reasoning_tokens(&self) -> &Counter {
        self.reasoning_tokens
            .get_or_init(|| metrics::counter!(names::REASONING_TOKENS, &self.labels()))
    }

    fn cached_input_tokens(&self) -> &Counter {
        self.cached_input_tokens
            .get_or_init(|| metrics::counter!(names::CACHED_INPUT_TOKENS, &self.labels()))
    }
}

#[async_trait]
impl ChatModel for MeteredChatModel {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        self.inner.tokenizer()
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let mut call = Call::start(self.series.clone());
        match self.inner.stream(request).await {
            Ok(inner) => Ok(Box::pin(MeteredStream { inner, call })),
            Err(error) => {
                call.end(Ending::Failed(ErrorType::of(&error)), None);
                Err(error)
            }
        }
    }
}

/// One upstream call, from its start to its end (a finish, an error, or the stream
/// dropped unfinished, which counts as `cancelled`).
struct Call {
    /// The series of the provider credited with the call.
    series: Arc<Series>,
    /// Every provider's series, to switch to the one whose deployment answers.
    table: Arc<[Arc<Series>]>,
    started: Instant,
    first_event_seen: bool,
    ended: bool,
}

impl Call {
    fn start(table: Arc<[Arc<Series>]>) -> Self {
        // `routed` always makes the default provider's series.
        let series = table[0].clone();
        series.in_flight().increment(1.0);
        Self {
            series,
            table,
            started: Instant::now(),
            first_event_seen: false,
            ended: false,
        }
    }

    /// The deployment of `provider` answers: the call is its provider's.
    fn routed(&mut self, provider: &str) {
        if let Some(series) = self.table.iter().find(|s| s.provider == provider) {
            self.series = series.clone();
        }
    }

    fn event(&mut self) {
        if !self.first_event_seen {
            self.first_event_seen = true;
            self.series
                .time_to_first_token()
                .record(self.started.elapsed().as_secs_f64());
        }
    }

    /// A finished answer gives its usage.
    fn end(&mut self, ending: Ending, usage: Option<Usage>) {
        if self.ended {
            return;
        }
        self.ended = true;
        let series = &self.series;
        series.in_flight().decrement(1.0);
        series.completions(ending).increment(1);
        series
            .duration(ending)
            .record(self.started.elapsed().as_secs_f64());
        if let Some(usage) = usage {
            series.tokens(false).record(f64::from(usage.input_tokens));
            series.tokens(true).record(f64::from(usage.output_tokens));
            series
                .reasoning_tokens()
                .increment(u64::from(usage.reasoning_tokens));
            series
                .cached_input_tokens()
                .increment(u64::from(usage.cached_input_tokens));
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.end(Ending::Cancelled, None);
    }
}

struct MeteredStream {
    inner: ChatStream,
    call: Call,
}

impl Stream for MeteredStream {
    type Item = Result<ChatEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(event))) => {
                if let ChatEvent::Routed(route) = event {
                    self.call.routed(&route.provider);
                }
                self.call.event();
                if let ChatEvent::Finish { usage, .. } = event {
                    self.call.end(Ending::Finished, Some(*usage));
                }
            }
            Poll::Ready(Some(Err(error))) => {
                self.call.end(Ending::Failed(ErrorType::of(error)), None);
            }
            // A stream that ends without a finish event is an upstream failure.
            Poll::Ready(None) => self.call.end(Ending::Failed(ErrorType::Upstream), None),
            Poll::Pending => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_util::StreamExt as _;
    use tessera_models::{
        ChatEvent, ChatModel, ChatRequest, FinishReason, ProviderError, Usage,
        memory::ScriptedChatModel,
    };

    use super::MeteredChatModel;
    use crate::tests::{ready, recorder, recording};

    fn metered(events: Vec<Result<ChatEvent, ProviderError>>) -> MeteredChatModel {
        let inner = ScriptedChatModel::answering(events);
        MeteredChatModel::new(Arc::new(inner), "base/model", "acme")
    }

    const LABELS: &str = r#"gen_ai_request_model="base/model",gen_ai_provider_name="acme""#;

    #[test]
    fn a_finished_answer_counts_its_completion_and_tokens() {
        let model = metered(vec![
            Ok(ChatEvent::TextDelta("hello".into())),
            Ok(ChatEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 12,
                    output_tokens: 7,
                    reasoning_tokens: 3,
                    cached_input_tokens: 8,
                },
            }),
        ]);
        let recorder = recorder();
        let text = recording(&recorder, || {
            let answer = ready(model.stream(ChatRequest::default())).unwrap();
            assert_eq!(ready(answer.collect::<Vec<_>>()).len(), 2);
        });
        for line in [
            format!(r#"tessera_chat_completions_total{{{LABELS},outcome="finished"}} 1"#),
            format!(r#"tessera_chat_reasoning_tokens_total{{{LABELS}}} 3"#),
            format!(r#"tessera_chat_cached_input_tokens_total{{{LABELS}}} 8"#),
            format!(r#"gen_ai_client_token_usage_sum{{{LABELS},gen_ai_token_type="input"}} 12"#),
            format!(r#"gen_ai_client_token_usage_sum{{{LABELS},gen_ai_token_type="output"}} 7"#),
            format!(
                r#"gen_ai_client_operation_duration_seconds_count{{{LABELS},gen_ai_operation_name="chat"}} 1"#
            ),
            format!(r#"gen_ai_server_time_to_first_token_seconds_count{{{LABELS}}} 1"#),
            "tessera_generations_in_flight 0".to_owned(),
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
    }

    #[test]
    fn a_routed_answer_is_credited_to_the_provider_that_answered() {
        let route = tessera_models::Route {
            deployment: "backup".into(),
            provider: "backup-provider".into(),
            failed_attempts: Vec::new(),
        };
        let inner = ScriptedChatModel::answering(vec![
            Ok(ChatEvent::Routed(route)),
            Ok(ChatEvent::TextDelta("hello".into())),
            Ok(ChatEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 5,
                    output_tokens: 2,
                    reasoning_tokens: 0,
                    cached_input_tokens: 0,
                },
            }),
        ]);
        let model = MeteredChatModel::routed(
            Arc::new(inner),
            "base/model",
            "acme",
            ["acme", "backup-provider"],
        );
        let recorder = recorder();
        let text = recording(&recorder, || {
            let answer = ready(model.stream(ChatRequest::default())).unwrap();
            assert_eq!(ready(answer.collect::<Vec<_>>()).len(), 3);
        });
        let answered =
            r#"gen_ai_request_model="base/model",gen_ai_provider_name="backup-provider""#;
        for line in [
            format!(r#"tessera_chat_completions_total{{{answered},outcome="finished"}} 1"#),
            format!(r#"gen_ai_client_token_usage_sum{{{answered},gen_ai_token_type="input"}} 5"#),
            format!(r#"gen_ai_server_time_to_first_token_seconds_count{{{answered}}} 1"#),
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
        assert!(
            !text.contains(LABELS),
            "nothing credited to the first provider:\n{text}"
        );
    }

    #[test]
    fn a_refused_call_is_an_error_of_its_type() {
        let inner = ScriptedChatModel::refusing(ProviderError::Timeout);
        let model = MeteredChatModel::new(Arc::new(inner), "base/model", "acme");
        let recorder = recorder();
        let text = recording(&recorder, || {
            assert!(ready(model.stream(ChatRequest::default())).is_err());
        });
        for line in [
            format!(r#"tessera_chat_completions_total{{{LABELS},outcome="error"}} 1"#),
            format!(
                r#"gen_ai_client_operation_duration_seconds_count{{{LABELS},gen_ai_operation_name="chat",error_type="timeout"}} 1"#
            ),
            "tessera_generations_in_flight 0".to_owned(),
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
        assert!(!text.contains("gen_ai_client_token_usage"), "{text}");
    }

    #[test]
    fn an_answer_dropped_unfinished_is_cancelled() {
        let model = metered(vec![
            Ok(ChatEvent::TextDelta("hel".into())),
            Ok(ChatEvent::TextDelta("lo".into())),
        ]);
        let recorder = recorder();
        let text = recording(&recorder, || {
            let mut answer = ready(model.stream(ChatRequest::default())).unwrap();
            assert!(ready(answer.next()).is_some());
        });
        for line in [
            format!(r#"tessera_chat_completions_total{{{LABELS},outcome="cancelled"}} 1"#),
            format!(
                r#"gen_ai_client_operation_duration_seconds_count{{{LABELS},gen_ai_operation_name="chat",error_type="cancelled"}} 1"#
            ),
            "tessera_generations_in_flight 0".to_owned(),
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
        }
    }

    #[test]
    fn a_stream_that_ends_without_a_finish_is_an_upstream_error() {
        let model = metered(vec![Ok(ChatEvent::TextDelta("hel".into()))]);
        let recorder = recorder();
        let text = recording(&recorder, || {
            let answer = ready(model.stream(ChatRequest::default())).unwrap();
            ready(answer.collect::<Vec<_>>());
        });
        let line = format!(
            r#"gen_ai_client_operation_duration_seconds_count{{{LABELS},gen_ai_operation_name="chat",error_type="upstream"}} 1"#
        );
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
}
