//! A chat model that measures its upstream calls: completions by outcome, tokens, time to
//! the first event, the call's duration and the calls in flight. It wraps each provider
//! where the app builds them, so the chats domain does not know metrics exist.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

use async_trait::async_trait;
use futures_util::Stream;
use tessera_models::{
    Capabilities, ChatEvent, ChatModel, ChatRequest, ChatStream, ProviderError, Usage,
};
use tessera_prompts::TokenCounter;

use super::names;

/// Measures every generation of `inner`, labelled with the catalog model and provider.
pub struct MeteredChatModel {
    inner: Arc<dyn ChatModel>,
    labels: Labels,
}

impl MeteredChatModel {
    /// `model` is the catalog (base) model's id and `provider` its provider's name, both
    /// from the operator's catalog: bounded label values.
    pub fn new(inner: Arc<dyn ChatModel>, model: &str, provider: &str) -> Self {
        Self {
            inner,
            labels: Labels {
                model: model.to_owned(),
                provider: provider.to_owned(),
            },
        }
    }
}

#[derive(Clone)]
struct Labels {
    model: String,
    provider: String,
}

impl Labels {
    fn pairs(&self) -> [(&'static str, String); 2] {
        [
            ("gen_ai_request_model", self.model.clone()),
            ("gen_ai_provider_name", self.provider.clone()),
        ]
    }
}

fn error_type(error: &ProviderError) -> &'static str {
    match error {
        ProviderError::Unavailable { .. } => "unavailable",
        ProviderError::Timeout => "timeout",
        ProviderError::Upstream { .. } => "upstream",
        ProviderError::InvalidRequest(_) => "invalid_request",
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
        let mut call = Call::start(self.labels.clone());
        match self.inner.stream(request).await {
            Ok(inner) => Ok(Box::pin(MeteredStream { inner, call })),
            Err(error) => {
                call.end(Some(error_type(&error)), None);
                Err(error)
            }
        }
    }
}

/// One upstream call, from its start to its end (a finish, an error, or the stream
/// dropped unfinished, which counts as `cancelled`).
struct Call {
    labels: Labels,
    started: Instant,
    first_event_seen: bool,
    ended: bool,
}

impl Call {
    fn start(labels: Labels) -> Self {
        metrics::gauge!(names::GENERATIONS_IN_FLIGHT).increment(1.0);
        Self {
            labels,
            started: Instant::now(),
            first_event_seen: false,
            ended: false,
        }
    }

    fn event(&mut self) {
        if !self.first_event_seen {
            self.first_event_seen = true;
            metrics::histogram!(names::TIME_TO_FIRST_TOKEN, &self.labels.pairs())
                .record(self.started.elapsed().as_secs_f64());
        }
    }

    /// `error` is `None` for a finished answer, whose usage is then given.
    fn end(&mut self, error: Option<&'static str>, usage: Option<Usage>) {
        if self.ended {
            return;
        }
        self.ended = true;
        metrics::gauge!(names::GENERATIONS_IN_FLIGHT).decrement(1.0);
        let labels = self.labels.pairs();
        let outcome = match error {
            None => "finished",
            Some("cancelled") => "cancelled",
            Some(_) => "error",
        };
        let mut counted = labels.to_vec();
        counted.push(("outcome", outcome.to_owned()));
        metrics::counter!(names::CHAT_COMPLETIONS, &counted).increment(1);
        let mut timed = labels.to_vec();
        timed.push(("gen_ai_operation_name", "chat".to_owned()));
        if let Some(error) = error {
            timed.push(("error_type", error.to_owned()));
        }
        metrics::histogram!(names::OPERATION_DURATION, &timed)
            .record(self.started.elapsed().as_secs_f64());
        if let Some(usage) = usage {
            for (kind, tokens) in [
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ] {
                let mut typed = labels.to_vec();
                typed.push(("gen_ai_token_type", kind.to_owned()));
                metrics::histogram!(names::TOKEN_USAGE, &typed).record(f64::from(tokens));
            }
            metrics::counter!(names::REASONING_TOKENS, &labels)
                .increment(u64::from(usage.reasoning_tokens));
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.end(Some("cancelled"), None);
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
                self.call.event();
                if let ChatEvent::Finish { usage, .. } = event {
                    self.call.end(None, Some(*usage));
                }
            }
            Poll::Ready(Some(Err(error))) => self.call.end(Some(error_type(error)), None),
            // A stream that ends without a finish event is an upstream failure.
            Poll::Ready(None) => self.call.end(Some("upstream"), None),
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
