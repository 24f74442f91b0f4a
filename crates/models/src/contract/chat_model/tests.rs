//! The suite checked against itself: a word-by-word reference model that keeps every
//! promise passes it (with the skips its backend declares), and each flaw put into that
//! model fails the check that states the promise it breaks.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use futures_util::{StreamExt, stream};
use tessera_prompts::TokenCounter;

use super::{requests::COUNTING, *};
use crate::{
    Capabilities, ChatEvent, ChatModel, ChatRequest, ChatStream, FinishReason, ProviderError, Role,
    ToolChoice, Usage, memory::WordCounter,
};

/// One broken promise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flaw {
    None,
    SecondFinish,
    NoFinish,
    NoUsage,
    IgnoresMaxTokens,
    KeepsTheStopString,
    RefusesInTheStream,
    RefusesAsUpstream,
    FirstToolCallIsIndexOne,
    /// Counting on every third request, whatever was asked.
    AnswersByTurn,
    NeverEnds,
    TextForJson,
}

/// Answers word by word (a word is a token, as `WordCounter` counts): counting to 50, a
/// sentence about Paris, a call of the offered tool, or `{"answer": true}`.
struct ReferenceModel {
    flaw: Flaw,
    requests: AtomicUsize,
}

const UNKNOWN_MODEL: &str = "no-such-model";
const WINDOW: u32 = 100;

impl ReferenceModel {
    fn with(flaw: Flaw) -> Arc<Self> {
        Arc::new(Self {
            flaw,
            requests: AtomicUsize::new(0),
        })
    }

    fn text_answer(&self, request: &ChatRequest) -> String {
        let question = request.messages.first().map_or("", |m| m.content.as_str());
        let turn = self.requests.fetch_add(1, Ordering::SeqCst);
        let counting = if self.flaw == Flaw::AnswersByTurn {
            turn.is_multiple_of(3)
        } else {
            question == COUNTING
        };
        if request
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool)
        {
            "It is sunny in Paris.".into()
        } else if counting {
            (1..=50)
                .map(|n| format!("{n},"))
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            "The capital of France is Paris.".into()
        }
    }

    /// The words of `full` up to `max_tokens` and the first stop string.
    fn generate(&self, full: &str, request: &ChatRequest) -> (Vec<ChatEvent>, FinishReason, u32) {
        let limit = match (request.max_tokens, self.flaw) {
            (Some(limit), flaw) if flaw != Flaw::IgnoresMaxTokens => limit,
            _ => u32::MAX,
        };
        let (mut text, mut words, mut reason) = (String::new(), 0, FinishReason::Stop);
        for word in full.split_inclusive(' ') {
            if words == limit {
                reason = FinishReason::Length;
                break;
            }
            text.push_str(word);
            words += 1;
            let stop = request
                .stop
                .iter()
                .filter_map(|stop| text.find(stop.as_str()))
                .min();
            if let Some(at) = stop {
                if self.flaw != Flaw::KeepsTheStopString {
                    text.truncate(at);
                }
                break;
            }
        }
        (vec![ChatEvent::TextDelta(text)], reason, words)
    }

    fn events(
        &self,
        request: &ChatRequest,
    ) -> Result<Vec<Result<ChatEvent, ProviderError>>, ProviderError> {
        if request.model == UNKNOWN_MODEL {
            let refusal = ProviderError::InvalidRequest(format!("no model named {UNKNOWN_MODEL}"));
            return match self.flaw {
                Flaw::RefusesInTheStream => Ok(vec![Err(refusal)]),
                Flaw::RefusesAsUpstream => Err(ProviderError::Upstream {
                    status: Some(500),
                    message: "no such model".into(),
                }),
                _ => Err(refusal),
            };
        }
        let input = request
            .messages
            .iter()
            .map(|m| WordCounter.count(&m.content))
            .sum::<u32>();
        if input >= WINDOW {
            return Err(ProviderError::InvalidRequest(
                "the prompt is too long".into(),
            ));
        }
        let calls_tool = !request.tools.is_empty()
            && matches!(
                request.tool_choice,
                ToolChoice::Function(_) | ToolChoice::Required
            );
        let (mut events, reason, output) = if calls_tool {
            let index = u32::from(self.flaw == Flaw::FirstToolCallIsIndexOne);
            let call = vec![
                ChatEvent::ToolCallStart {
                    index,
                    id: "call_7".into(),
                    name: request.tools[0].name.clone(),
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index,
                    delta: "{\"city\": ".into(),
                },
                ChatEvent::ToolCallArgumentsDelta {
                    index,
                    delta: "\"Paris\"}".into(),
                },
                ChatEvent::ToolCallEnd { index },
            ];
            (call, FinishReason::ToolCalls, 4)
        } else if request.response_format.is_some() {
            let document = if self.flaw == Flaw::TextForJson {
                "Yes, it is."
            } else {
                "{\"answer\": true}"
            };
            (
                vec![ChatEvent::TextDelta(document.into())],
                FinishReason::Stop,
                2,
            )
        } else {
            self.generate(&self.text_answer(request), request)
        };
        let usage = match self.flaw {
            Flaw::NoUsage => Usage::default(),
            _ => Usage {
                input_tokens: input,
                output_tokens: output,
                ..Usage::default()
            },
        };
        let finish = ChatEvent::Finish { reason, usage };
        match self.flaw {
            Flaw::NoFinish => {}
            Flaw::SecondFinish => events.extend([finish.clone(), finish]),
            _ => events.push(finish),
        }
        Ok(events.into_iter().map(Ok).collect())
    }
}

#[async_trait]
impl ChatModel for ReferenceModel {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            streaming: true,
            tools: true,
            json_schema: true,
            ..Capabilities::default()
        }
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        Arc::new(WordCounter)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let events = stream::iter(self.events(&request)?);
        if self.flaw == Flaw::NeverEnds {
            return Ok(Box::pin(events.chain(stream::pending())));
        }
        Ok(Box::pin(events))
    }
}

fn declared_fully() -> Backend {
    Backend {
        unknown_model: Some(UNKNOWN_MODEL.into()),
        context_window: Some(WINDOW),
        ..Backend::real_model()
    }
}

fn subject(flaw: Flaw) -> ChatModelUnderTest {
    let mut subject =
        ChatModelUnderTest::new(ReferenceModel::with(flaw), "reference", declared_fully());
    subject.answer_within = Duration::from_secs(1);
    subject
}

#[tokio::test]
async fn a_model_keeping_every_promise_passes_every_check() {
    check_chat_model(&subject(Flaw::None), &[]).await;
}

#[tokio::test]
async fn what_the_backend_does_not_do_is_skipped_and_must_be_expected() {
    let mut subject = subject(Flaw::None);
    subject.backend = Backend::scripted();
    let skips = [
        "a_model_the_backend_does_not_serve_is_an_invalid_request",
        "a_prompt_beyond_the_context_window_is_an_invalid_request",
        "max_tokens_cuts_the_answer_with_reason_length",
        "a_stop_sequence_ends_the_answer_just_before_it",
    ];
    check_chat_model(&subject, &skips).await;
    let unexpected = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
        check_chat_model(&subject, &skips[1..]),
    ))
    .await;
    assert!(unexpected.is_err(), "an unexpected skip passed");
}

#[tokio::test]
async fn capabilities_a_model_lacks_skip_their_checks() {
    struct TextOnly(Arc<ReferenceModel>);
    #[async_trait]
    impl ChatModel for TextOnly {
        fn capabilities(&self) -> Capabilities {
            Capabilities {
                streaming: true,
                ..Capabilities::default()
            }
        }
        fn tokenizer(&self) -> Arc<dyn TokenCounter> {
            self.0.tokenizer()
        }
        async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
            self.0.stream(request).await
        }
    }
    let subject = ChatModelUnderTest::new(
        Arc::new(TextOnly(ReferenceModel::with(Flaw::None))),
        "reference",
        declared_fully(),
    );
    for verdict in [
        a_forced_tool_call_streams_as_tool_call_events(&subject).await,
        a_tool_result_is_answered_in_text_when_no_call_is_allowed(&subject).await,
    ] {
        assert!(matches!(verdict, Verdict::Skipped(reason) if reason.contains("tools")));
    }
    assert!(matches!(
        a_json_schema_answer_is_a_conforming_document(&subject).await,
        Verdict::Skipped(reason) if reason.contains("json_schema")
    ));
}

#[tokio::test]
#[should_panic(expected = "the ChatModel contract is broken")]
async fn the_suite_fails_when_any_check_does() {
    check_chat_model(&subject(Flaw::IgnoresMaxTokens), &[]).await;
}

#[tokio::test]
#[should_panic(expected = "no check of the ChatModel contract is named")]
async fn an_expected_skip_must_name_a_check() {
    check_chat_model(&subject(Flaw::None), &["no_such_check"]).await;
}

#[tokio::test]
#[should_panic(expected = "after the finish event")]
async fn a_second_finish_is_a_failure() {
    an_answer_streams_text_then_one_finish_with_usage(&subject(Flaw::SecondFinish)).await;
}

#[tokio::test]
#[should_panic(expected = "without a finish event")]
async fn a_stream_without_finish_is_a_failure() {
    an_answer_streams_text_then_one_finish_with_usage(&subject(Flaw::NoFinish)).await;
}

#[tokio::test]
#[should_panic(expected = "counts no input or no output tokens")]
async fn a_finish_without_usage_is_a_failure() {
    an_answer_streams_text_then_one_finish_with_usage(&subject(Flaw::NoUsage)).await;
}

#[tokio::test]
#[should_panic(expected = "ended otherwise")]
async fn an_ignored_max_tokens_is_a_failure() {
    max_tokens_cuts_the_answer_with_reason_length(&subject(Flaw::IgnoresMaxTokens)).await;
}

#[tokio::test]
#[should_panic(expected = "not the answer up to it")]
async fn a_kept_stop_string_is_a_failure() {
    a_stop_sequence_ends_the_answer_just_before_it(&subject(Flaw::KeepsTheStopString)).await;
}

#[tokio::test]
#[should_panic(expected = "`stream` started an answer")]
async fn a_refusal_after_the_stream_started_is_a_failure() {
    a_model_the_backend_does_not_serve_is_an_invalid_request(&subject(Flaw::RefusesInTheStream))
        .await;
}

#[tokio::test]
#[should_panic(expected = "not as an invalid request")]
async fn a_refusal_of_another_kind_is_a_failure() {
    a_model_the_backend_does_not_serve_is_an_invalid_request(&subject(Flaw::RefusesAsUpstream))
        .await;
}

#[tokio::test]
#[should_panic(expected = "started as index 1")]
async fn tool_calls_numbered_from_one_are_a_failure() {
    a_forced_tool_call_streams_as_tool_call_events(&subject(Flaw::FirstToolCallIsIndexOne)).await;
}

#[tokio::test]
#[should_panic(expected = "another answer when asked concurrently")]
async fn answers_by_turn_not_by_question_are_a_failure() {
    concurrent_requests_each_get_their_own_answer(&subject(Flaw::AnswersByTurn)).await;
}

#[tokio::test]
#[should_panic(expected = "did not end within")]
async fn a_stream_that_never_ends_is_a_failure() {
    an_answer_streams_text_then_one_finish_with_usage(&subject(Flaw::NeverEnds)).await;
}

#[tokio::test]
#[should_panic(expected = "not JSON")]
async fn text_for_a_json_schema_is_a_failure() {
    a_json_schema_answer_is_a_conforming_document(&subject(Flaw::TextForJson)).await;
}
