//! A chat model whose upstream calls are spans (OpenTelemetry GenAI client spans): the
//! call's model and provider, then its token usage and finish reason, and, with
//! [`crate::capture_content`], the messages sent and the answer. The provider's HTTP request
//! is made inside the span, so the `traceparent` it sends names this span.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use async_trait::async_trait;
use futures_util::Stream;
use serde_json::json;
use tessera_models::{Capabilities, ChatEvent, ChatModel, ChatRequest, ChatStream, ProviderError};
use tessera_prompts::TokenCounter;
use tracing::{Instrument, Span, field::Empty};

pub struct TracedChatModel {
    inner: Arc<dyn ChatModel>,
    provider: String,
}

impl TracedChatModel {
    /// `provider` is the catalog provider's name (`gen_ai.provider.name`).
    pub fn new(inner: Arc<dyn ChatModel>, provider: &str) -> Self {
        Self {
            inner,
            provider: provider.to_owned(),
        }
    }
}

#[async_trait]
impl ChatModel for TracedChatModel {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        self.inner.tokenizer()
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let span = tracing::info_span!(
            "upstream",
            "otel.name" = format!("chat {}", request.model).as_str(),
            "otel.kind" = "client",
            "otel.status_code" = Empty,
            "gen_ai.operation.name" = "chat",
            "gen_ai.provider.name" = self.provider.as_str(),
            "gen_ai.request.model" = request.model.as_str(),
            "gen_ai.request.max_tokens" = request.max_tokens.map(i64::from),
            "gen_ai.request.temperature" = request.temperature.map(f64::from),
            "gen_ai.usage.input_tokens" = Empty,
            "gen_ai.usage.output_tokens" = Empty,
            "gen_ai.usage.cache_read.input_tokens" = Empty,
            "gen_ai.response.finish_reasons" = Empty,
            "gen_ai.input.messages" = Empty,
            "gen_ai.output.messages" = Empty,
            "error.type" = Empty,
        );
        let capture = crate::capture_content();
        if capture {
            let messages: Vec<_> = request
                .messages
                .iter()
                .map(|message| json!({"role": message.role.as_str(), "content": message.content}))
                .collect();
            span.record(
                "gen_ai.input.messages",
                serde_json::Value::from(messages).to_string().as_str(),
            );
        }
        match self.inner.stream(request).instrument(span.clone()).await {
            Ok(inner) => Ok(Box::pin(TracedStream {
                inner,
                span,
                answer: capture.then(String::new),
            })),
            Err(error) => {
                failed(&span, &error);
                Err(error)
            }
        }
    }
}

fn failed(span: &Span, error: &ProviderError) {
    span.record("otel.status_code", "ERROR");
    span.record(
        "error.type",
        match error {
            ProviderError::Unavailable { .. } => "unavailable",
            ProviderError::Timeout => "timeout",
            ProviderError::Upstream { .. } => "upstream",
            ProviderError::InvalidRequest(_) => "invalid_request",
        },
    );
}

/// The answer's stream, whose upstream span ends when it is dropped (it holds the span's
/// last handle). The span is not entered on each poll: entering costs registry bookkeeping
/// once per chunk of every answer (issue 32), and what the provider logs while streaming is
/// inside the completion's span anyway.
struct TracedStream {
    inner: ChatStream,
    span: Span,
    /// The answer's text, kept when content is captured.
    answer: Option<String>,
}

impl Stream for TracedStream {
    type Item = Result<ChatEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let polled = this.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(ChatEvent::TextDelta(text)))) => {
                if let Some(answer) = &mut this.answer {
                    answer.push_str(text);
                }
            }
            Poll::Ready(Some(Ok(ChatEvent::Finish { reason, usage }))) => {
                let span = &this.span;
                span.record("gen_ai.usage.input_tokens", i64::from(usage.input_tokens));
                span.record("gen_ai.usage.output_tokens", i64::from(usage.output_tokens));
                // Part of the input tokens, as the conventions count it.
                span.record(
                    "gen_ai.usage.cache_read.input_tokens",
                    i64::from(usage.cached_input_tokens),
                );
                // Exported as a string array (`span::STRING_ARRAYS`).
                span.record("gen_ai.response.finish_reasons", reason.as_str());
                if let Some(answer) = &this.answer {
                    let output = json!([{"role": "assistant", "content": answer}]);
                    span.record("gen_ai.output.messages", output.to_string().as_str());
                }
            }
            Poll::Ready(Some(Err(error))) => failed(&this.span, error),
            _ => {}
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use std::{
        future::Future,
        pin::pin,
        sync::Arc,
        task::{Context, Poll, Waker},
    };

    use futures_util::StreamExt as _;
    use tessera_models::{
        ChatEvent, ChatModel, ChatRequest, FinishReason, ProviderError, Usage,
        memory::ScriptedChatModel,
    };
    use tracing_subscriber::fmt::format::FmtSpan;

    use super::TracedChatModel;
    use crate::test_support::Written;

    /// Polls a future that needs no waking (the fakes here are ready at once).
    fn ready<F: Future>(future: F) -> F::Output {
        match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("the future was not ready"),
        }
    }

    /// Runs `call` under a subscriber that logs each span, with its fields, as it closes.
    fn closed_spans(call: impl FnOnce()) -> String {
        let written = Written::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(written.clone())
            .with_ansi(false)
            .with_span_events(FmtSpan::CLOSE)
            .finish();
        tracing::subscriber::with_default(subscriber, call);
        written.text()
    }

    fn request() -> ChatRequest {
        ChatRequest {
            model: "stub-model".into(),
            max_tokens: Some(64),
            ..ChatRequest::default()
        }
    }

    #[test]
    fn a_finished_call_is_a_client_span_with_its_usage() {
        let inner = ScriptedChatModel::answering(vec![
            Ok(ChatEvent::TextDelta("hello".into())),
            Ok(ChatEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 12,
                    output_tokens: 7,
                    reasoning_tokens: 0,
                    cached_input_tokens: 5,
                },
            }),
        ]);
        let model = TracedChatModel::new(Arc::new(inner), "acme");
        let logged = closed_spans(|| {
            let answer = ready(model.stream(request())).unwrap();
            assert_eq!(ready(answer.collect::<Vec<_>>()).len(), 2);
        });
        for field in [
            r#"otel.name="chat stub-model""#,
            r#"otel.kind="client""#,
            r#"gen_ai.operation.name="chat""#,
            r#"gen_ai.provider.name="acme""#,
            r#"gen_ai.request.model="stub-model""#,
            "gen_ai.request.max_tokens=64",
            "gen_ai.usage.input_tokens=12",
            "gen_ai.usage.output_tokens=7",
            "gen_ai.usage.cache_read.input_tokens=5",
            r#"gen_ai.response.finish_reasons="stop""#,
        ] {
            assert!(logged.contains(field), "no {field} in:\n{logged}");
        }
        // Content is captured only when the exporter was set up to.
        assert!(!logged.contains("gen_ai.input.messages"), "{logged}");
        assert!(!logged.contains("gen_ai.output.messages"), "{logged}");
        assert!(!logged.contains("otel.status_code"), "{logged}");
    }

    #[test]
    fn a_refused_call_is_an_error_of_its_type() {
        let inner = ScriptedChatModel::refusing(ProviderError::Timeout);
        let model = TracedChatModel::new(Arc::new(inner), "acme");
        let logged = closed_spans(|| {
            assert!(ready(model.stream(request())).is_err());
        });
        for field in [r#"otel.status_code="ERROR""#, r#"error.type="timeout""#] {
            assert!(logged.contains(field), "no {field} in:\n{logged}");
        }
    }
}
