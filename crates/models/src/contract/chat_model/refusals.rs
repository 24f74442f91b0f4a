//! Checks of requests the backend must refuse: a model it does not serve, and a prompt
//! longer than its context window, each refused as `ProviderError::InvalidRequest` by
//! `stream` itself (the port: errors before the first event come back there), with a reason.

use futures_util::StreamExt;

use super::{
    reading::start,
    requests::ask,
    subject::{ChatModelUnderTest, Verdict, skipped},
};
use crate::{ChatRequest, ProviderError};

/// A model name the backend serves no model under is an invalid request.
pub async fn a_model_the_backend_does_not_serve_is_an_invalid_request(
    subject: &ChatModelUnderTest,
) -> Verdict {
    let Some(unknown) = &subject.backend.unknown_model else {
        return skipped("the backend declares no model name it refuses (backend.unknown_model)");
    };
    let mut request = ask(subject, "Say hello.", 4);
    request.model = unknown.clone();
    assert_refused_as_invalid(subject, request, &format!("model {unknown:?}")).await;
    Verdict::Held
}

/// A prompt longer than the context window is an invalid request. The prompt is twice the
/// window as the adapter's tokenizer counts, so an adapter that estimates with another
/// tokenizer than its model's still sends too long a prompt.
pub async fn a_prompt_beyond_the_context_window_is_an_invalid_request(
    subject: &ChatModelUnderTest,
) -> Verdict {
    let Some(window) = subject.backend.context_window else {
        return skipped("the backend declares no context window (backend.context_window)");
    };
    let tokenizer = subject.model.tokenizer();
    let mut words = window as usize;
    let prompt = loop {
        let prompt = "word ".repeat(words);
        if tokenizer.count(&prompt) >= window.saturating_mul(2) {
            break prompt;
        }
        assert!(
            words < 64 * window as usize,
            "the tokenizer counts {} tokens in {words} words",
            tokenizer.count(&prompt)
        );
        words *= 2;
    };
    let request = ask(subject, &prompt, 4);
    assert_refused_as_invalid(subject, request, "a prompt twice the context window").await;
    Verdict::Held
}

/// Panics unless `stream(request)` is refused as invalid, with a reason.
async fn assert_refused_as_invalid(subject: &ChatModelUnderTest, request: ChatRequest, what: &str) {
    match start(subject, request, what).await {
        Err(ProviderError::InvalidRequest(reason)) => {
            assert!(
                !reason.trim().is_empty(),
                "{what}: refused without a reason"
            );
        }
        Err(other) => panic!("{what}: refused, but not as an invalid request: {other:?}"),
        Ok(mut stream) => {
            let first = tokio::time::timeout(subject.answer_within, stream.next()).await;
            panic!(
                "{what}: `stream` started an answer (first item: {first:?}); a refusal before \
                 the first event must be its error"
            )
        }
    }
}
