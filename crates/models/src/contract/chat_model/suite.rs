//! The whole suite in one call: [`check_chat_model`] runs every check of [`CHECKS`] in turn
//! against one adapter (so a backend started once serves them all), goes on past a failed
//! one, says on stderr how each ended, and then fails with every broken check, or when the
//! checks skipped are not exactly those the caller expects.

use std::{future::Future, panic::AssertUnwindSafe, pin::Pin, time::Instant};

use futures_util::FutureExt;

use super::{
    answers::{
        a_greedy_answer_is_the_same_streamed_or_completed,
        a_stop_sequence_ends_the_answer_just_before_it,
        an_answer_streams_text_then_one_finish_with_usage,
        max_tokens_cuts_the_answer_with_reason_length,
    },
    refusals::{
        a_model_the_backend_does_not_serve_is_an_invalid_request,
        a_prompt_beyond_the_context_window_is_an_invalid_request,
    },
    serving::{
        concurrent_requests_each_get_their_own_answer,
        dropping_a_stream_cancels_it_and_the_next_request_is_answered,
    },
    structured::a_json_schema_answer_is_a_conforming_document,
    subject::{ChatModelUnderTest, Verdict},
    tokenizer::the_tokenizer_counts_text_in_tokens,
    tools::{
        a_forced_tool_call_streams_as_tool_call_events,
        a_tool_result_is_answered_in_text_when_no_call_is_allowed,
    },
};

/// A check's run, borrowing the subject.
pub type CheckRun<'a> = Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;

/// One check of the suite, by its function's name.
#[derive(Clone, Copy)]
pub struct Check {
    pub name: &'static str,
    pub run: for<'a> fn(&'a ChatModelUnderTest) -> CheckRun<'a>,
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

macro_rules! checks {
    ($($check:ident),* $(,)?) => {
        &[$(Check { name: stringify!($check), run: |subject| Box::pin($check(subject)) }),*]
    };
}

/// Every check, cheapest first.
pub const CHECKS: &[Check] = checks![
    the_tokenizer_counts_text_in_tokens,
    a_model_the_backend_does_not_serve_is_an_invalid_request,
    a_prompt_beyond_the_context_window_is_an_invalid_request,
    an_answer_streams_text_then_one_finish_with_usage,
    a_greedy_answer_is_the_same_streamed_or_completed,
    max_tokens_cuts_the_answer_with_reason_length,
    a_stop_sequence_ends_the_answer_just_before_it,
    dropping_a_stream_cancels_it_and_the_next_request_is_answered,
    concurrent_requests_each_get_their_own_answer,
    a_forced_tool_call_streams_as_tool_call_events,
    a_tool_result_is_answered_in_text_when_no_call_is_allowed,
    a_json_schema_answer_is_a_conforming_document,
];

/// Runs every check against `subject`. Panics, after all have run, with the checks that
/// failed, or unless the checks skipped are exactly `expected_skips` (names of [`CHECKS`], in
/// any order): a skip is a declared limit of the adapter, never a silent pass.
pub async fn check_chat_model(subject: &ChatModelUnderTest, expected_skips: &[&str]) {
    for name in expected_skips {
        assert!(
            CHECKS.iter().any(|check| check.name == *name),
            "no check of the ChatModel contract is named {name:?}"
        );
    }
    let mut failed = Vec::new();
    let mut skipped = Vec::new();
    for check in CHECKS {
        let started = Instant::now();
        let outcome = AssertUnwindSafe((check.run)(subject)).catch_unwind().await;
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok(Verdict::Held) => {
                eprintln!("chat model contract: {} held ({seconds:.1} s)", check.name);
            }
            Ok(Verdict::Skipped(reason)) => {
                eprintln!("chat model contract: {} SKIPPED: {reason}", check.name);
                skipped.push(check.name);
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic without a message");
                eprintln!("chat model contract: {} FAILED: {message}", check.name);
                failed.push(format!("{}: {message}", check.name));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "the ChatModel contract is broken ({subject:?}):\n{}",
        failed.join("\n")
    );
    let mut expected = expected_skips.to_vec();
    expected.sort_unstable();
    skipped.sort_unstable();
    assert_eq!(
        skipped, expected,
        "other checks of the ChatModel contract were skipped than expected ({subject:?})"
    );
}
