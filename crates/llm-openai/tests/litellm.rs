//! The adapter against a real LiteLLM proxy (Python), whose models answer from
//! `mock_response` (`tests/litellm/config.yaml`), so no provider is called.
//!
//! The proxy comes from `tessera_llm_openai::testing` (installed when missing, started on a
//! free port, killed at the end); when it cannot be installed or started, the test FAILS
//! with the reason: it never passes without having talked to the proxy.
//!
//! Everything lives in one test so that one proxy (about 10 s to start) serves every check,
//! the `ChatModel` contract's (`tessera_models::contract::chat_model`) included.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{path::Path, sync::Arc, time::Duration};

use futures_util::StreamExt;
use tessera_knowledge::{EmbedError, Embedder};
use tessera_llm_openai::{
    OpenAiChatModel, OpenAiConfig, OpenAiEmbedder, RetryPolicy, testing::LiteLlm,
};
use tessera_models::{
    ChatEvent, ChatMessage, ChatModel, ChatRequest, FinishReason, ProviderError, Role, complete,
    contract::chat_model::{Backend, ChatModelUnderTest, check_chat_model},
};

/// The `mock_response` of `mock-gpt` in `tests/litellm/config.yaml`.
const MOCK_TEXT: &str = "Hello from the LiteLLM mock, café ☕.";

fn model(proxy: &LiteLlm, key: &str, retry: RetryPolicy) -> OpenAiChatModel {
    OpenAiChatModel::new(
        OpenAiConfig::new(format!("{}/v1", proxy.base_url))
            .with_api_key(key)
            .with_timeouts(Duration::from_secs(30), Duration::from_secs(30))
            .with_retry(retry),
    )
    .expect("the adapter")
}

fn request(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages: vec![
            ChatMessage::new(Role::System, "Answer briefly."),
            ChatMessage::new(Role::User, "Say hello."),
        ],
        max_tokens: Some(64),
        temperature: Some(0.2),
        ..ChatRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_proxy_plain_streamed_and_error_answers() {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/litellm/config.yaml");
    let proxy = LiteLlm::start(&config).await;
    let retry = RetryPolicy {
        max_attempts: 2,
        backoff_base: Duration::from_millis(50),
        max_delay: Duration::from_millis(200),
    };
    let model = model(&proxy, &proxy.master_key, retry);

    eprintln!("litellm: a plain (folded) answer");
    let completion = complete(&model, request("mock-gpt"))
        .await
        .expect("a plain answer");
    assert_eq!(completion.content, MOCK_TEXT);
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert!(completion.usage.input_tokens > 0, "{:?}", completion.usage);
    assert!(completion.usage.output_tokens > 0, "{:?}", completion.usage);
    assert!(completion.tool_calls.is_empty());

    eprintln!("litellm: a streamed answer");
    let stream = model
        .stream(request("mock-gpt"))
        .await
        .expect("a streamed answer");
    let items: Vec<_> = tokio::time::timeout(Duration::from_secs(60), stream.collect())
        .await
        .expect("the stream ended");
    let events: Vec<ChatEvent> = items
        .into_iter()
        .map(|item| item.expect("no error in the stream"))
        .collect();
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ChatEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() > 1, "streamed in several pieces: {deltas:?}");
    assert_eq!(deltas.concat(), MOCK_TEXT);
    let finishes: Vec<_> = events
        .iter()
        .filter(|event| matches!(event, ChatEvent::Finish { .. }))
        .collect();
    assert_eq!(finishes.len(), 1, "{events:?}");
    match events.last() {
        Some(ChatEvent::Finish { reason, usage }) => {
            assert_eq!(*reason, FinishReason::Stop);
            assert!(
                usage.input_tokens > 0 && usage.output_tokens > 0,
                "{usage:?}"
            );
        }
        other => panic!("the last event is not Finish: {other:?}"),
    }

    eprintln!("litellm: an unknown model");
    match model.stream(request("no-such-model")).await.err() {
        Some(ProviderError::InvalidRequest(message)) => {
            assert!(message.contains("Invalid model name"), "{message}");
            assert!(message.contains("no-such-model"), "{message}");
        }
        other => panic!("expected InvalidRequest with LiteLLM's message, got {other:?}"),
    }

    eprintln!("litellm: a rate-limited model (429, retried, then Unavailable)");
    match model.stream(request("mock-rate-limited")).await.err() {
        Some(ProviderError::Unavailable { message, .. }) => {
            assert!(message.contains("rate limit"), "{message}");
        }
        other => panic!("expected Unavailable with LiteLLM's message, got {other:?}"),
    }

    eprintln!("litellm: the ChatModel contract");
    // The mock answers its text whatever the limit or stop strings, and the endpoint
    // declares no tools or JSON schema (the mock has neither).
    let backend = Backend {
        unknown_model: Some("no-such-model".into()),
        ..Backend::scripted()
    };
    let contracted = self::model(&proxy, &proxy.master_key, RetryPolicy::none());
    let subject = ChatModelUnderTest::new(Arc::new(contracted), "mock-gpt", backend);
    check_chat_model(
        &subject,
        &[
            "a_prompt_beyond_the_context_window_is_an_invalid_request",
            "max_tokens_cuts_the_answer_with_reason_length",
            "a_stop_sequence_ends_the_answer_just_before_it",
            "a_forced_tool_call_streams_as_tool_call_events",
            "a_tool_result_is_answered_in_text_when_no_call_is_allowed",
            "a_json_schema_answer_is_a_conforming_document",
        ],
    )
    .await;

    eprintln!("litellm: embeddings, one text per request (the mock answers one vector)");
    let endpoint = OpenAiConfig::new(format!("{}/v1", proxy.base_url))
        .with_api_key(proxy.master_key.as_str())
        .with_retry(retry);
    let embedder = OpenAiEmbedder::new(&endpoint, "mock-embed", 3, 1).expect("the embedder");
    let texts = vec![
        "first".to_owned(),
        "second, café ☕".to_owned(),
        "third".to_owned(),
    ];
    let vectors = embedder.embed(texts.clone()).await.expect("three vectors");
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        // [3, 4, 0] normalized.
        assert!(
            vector
                .iter()
                .zip([0.6_f32, 0.8, 0.0])
                .all(|(x, y)| (x - y).abs() < 1e-6),
            "{vector:?}"
        );
    }
    assert_eq!(
        embedder.embed(Vec::new()).await.expect("nothing to embed"),
        Vec::<Vec<f32>>::new()
    );

    eprintln!("litellm: embeddings refused for a wrong count, length or model");
    let batched = OpenAiEmbedder::new(&endpoint, "mock-embed", 3, 8).expect("the embedder");
    match batched.embed(texts.clone()).await {
        Err(EmbedError::Unavailable(message)) => {
            assert!(
                message.contains("returned 1 embeddings for 3 texts"),
                "{message}"
            );
        }
        other => panic!("expected a count mismatch, got {other:?}"),
    }
    let longer = OpenAiEmbedder::new(&endpoint, "mock-embed", 384, 1).expect("the embedder");
    match longer.embed(texts.clone()).await {
        Err(EmbedError::Unavailable(message)) => {
            assert!(message.contains("3 dimensions where 384"), "{message}");
        }
        other => panic!("expected a length mismatch, got {other:?}"),
    }
    let unknown = OpenAiEmbedder::new(&endpoint, "no-such-embedder", 3, 1).expect("the embedder");
    match unknown.embed(texts).await {
        Err(EmbedError::Unavailable(message)) => {
            assert!(message.contains("no-such-embedder"), "{message}");
        }
        other => panic!("expected LiteLLM's refusal, got {other:?}"),
    }
}
