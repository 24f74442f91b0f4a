//! The `ChatModel` contract, for anyone implementing the port: checks of what the port's
//! docs promise, run against a real adapter and its real backend (a [`ChatModelUnderTest`]).
//!
//! Every answer streams text, then exactly one `Finish` (the last event) with its token
//! usage; at temperature 0 the streamed answer is the completed one; `max_tokens` ends an
//! answer with `Length` and a stop string ends it just before the string; dropping a stream
//! cancels it without hanging and the model answers the next request; concurrent requests
//! each get their own answer; a model the backend does not serve and a prompt beyond the
//! context window are refused by `stream` as `InvalidRequest`; the tokenizer counts text.
//! Where the model's capabilities include them, a forced tool call streams as tool-call
//! events finishing with `ToolCalls`, a tool result is answered in text when no call is
//! allowed, and a JSON-schema answer conforms to its schema. Answers are greedy and short
//! for CPU backends (16 tokens at most, 24 for a JSON document, 48 for a tool call); the one
//! long request is dropped after its first event.
//!
//! A check the model's capabilities or its declared [`Backend`] rule out returns
//! [`Verdict::Skipped`] with the reason. [`check_chat_model`] runs them all in one test and
//! fails unless the checks skipped are exactly those the caller names, so a skip is a
//! declared limit, never a silent pass:
//!
//! ```text
//! let subject = ChatModelUnderTest::new(Arc::new(adapter), "model-name", Backend::real_model());
//! check_chat_model(&subject, &["a_model_the_backend_does_not_serve_is_an_invalid_request"]).await;
//! ```
//!
//! One test rather than one per check (as the store contracts' macros make): nextest runs
//! each test in a process of its own, which would start the backend (a model, a proxy) once
//! per check. The checks are public too, for a test of one of them.

mod answers;
mod reading;
mod refusals;
mod requests;
mod serving;
mod structured;
mod subject;
mod suite;
#[cfg(test)]
mod tests;
mod tokenizer;
mod tools;

pub use self::{
    answers::{
        a_greedy_answer_is_the_same_streamed_or_completed,
        a_stop_sequence_ends_the_answer_just_before_it,
        an_answer_streams_text_then_one_finish_with_usage,
        max_tokens_cuts_the_answer_with_reason_length,
    },
    reading::{Answer, read, read_stream},
    refusals::{
        a_model_the_backend_does_not_serve_is_an_invalid_request,
        a_prompt_beyond_the_context_window_is_an_invalid_request,
    },
    serving::{
        concurrent_requests_each_get_their_own_answer,
        dropping_a_stream_cancels_it_and_the_next_request_is_answered,
    },
    structured::a_json_schema_answer_is_a_conforming_document,
    subject::{Backend, ChatModelUnderTest, Verdict},
    suite::{CHECKS, Check, CheckRun, check_chat_model},
    tokenizer::the_tokenizer_counts_text_in_tokens,
    tools::{
        a_forced_tool_call_streams_as_tool_call_events,
        a_tool_result_is_answered_in_text_when_no_call_is_allowed,
    },
};
