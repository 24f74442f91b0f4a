//! The engine against the real SmolLM2 GGUF: streaming, usage, limits, cancellation, queueing.

#![allow(clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tessera_llm_local::{LocalEngine, LocalEngineOptions, testing};
use tessera_models::{
    ChatEvent, ChatMessage, ChatModel, ChatRequest, FinishReason, ProviderError, Role, Usage,
    complete,
};

const QUESTION: &str = "What is the capital of France?";

fn ask(question: &str, max_tokens: Option<u32>) -> ChatRequest {
    ChatRequest {
        model: "smollm2".into(),
        messages: vec![ChatMessage::new(Role::User, question)],
        max_tokens,
        temperature: Some(0.0),
        ..ChatRequest::default()
    }
}

/// The deltas' text, how many there were, and the finish event.
async fn run(engine: &LocalEngine, request: ChatRequest) -> (String, usize, FinishReason, Usage) {
    let mut stream = engine.stream(request).await.expect("the generation starts");
    let (mut text, mut deltas, mut finish) = (String::new(), 0, None);
    while let Some(event) = stream.next().await {
        match event.expect("no error mid-stream") {
            ChatEvent::TextDelta(delta) => {
                assert!(finish.is_none(), "text after the finish event");
                assert!(!delta.is_empty());
                text.push_str(&delta);
                deltas += 1;
            }
            ChatEvent::Finish { reason, usage } => {
                assert!(finish.is_none(), "two finish events");
                finish = Some((reason, usage));
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    let (reason, usage) = finish.expect("the stream ends with a finish event");
    (text, deltas, reason, usage)
}

#[tokio::test]
async fn greedy_answer_streams_then_finishes_with_exact_usage() {
    let engine = testing::engine(LocalEngineOptions::default());
    let started = Instant::now();
    let (text, deltas, reason, usage) = run(&engine, ask(QUESTION, None)).await;
    let elapsed = started.elapsed();
    eprintln!(
        "greedy answer {text:?}: {} tokens in {elapsed:?} ({:.1} tokens/s incl. prompt)",
        usage.output_tokens,
        f64::from(usage.output_tokens) / elapsed.as_secs_f64()
    );
    assert!(text.contains("Paris"), "{text:?}");
    assert!(deltas >= 3, "{deltas} deltas");
    assert_eq!(reason, FinishReason::Stop);

    // Input: the ChatML prompt with the template's default system prompt.
    let prompt = format!(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(usage.input_tokens, engine.tokenizer().count(&prompt));
    // Output: the answer's tokens plus the end-of-turn token that stopped it.
    let n = usage.output_tokens;
    assert!(n >= 2);
    assert!(n <= engine.tokenizer().count(&text) + 2, "{n} for {text:?}");

    // Cut one token short, the same greedy answer ends on the length limit.
    let (short, _, reason, usage) = run(&engine, ask(QUESTION, Some(n - 1))).await;
    assert_eq!(reason, FinishReason::Length);
    assert_eq!(usage.output_tokens, n - 1);
    assert!(text.starts_with(&short), "{short:?} vs {text:?}");
    // With exactly its tokens, it stops by itself.
    let (same, _, reason, usage) = run(&engine, ask(QUESTION, Some(n))).await;
    assert_eq!(
        (same.as_str(), reason, usage.output_tokens),
        (text.as_str(), FinishReason::Stop, n)
    );

    // The non-streaming answer folds the same stream.
    let completion = complete(&engine, ask(QUESTION, None))
        .await
        .expect("complete");
    assert_eq!(completion.content, text);
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert_eq!(completion.usage.output_tokens, n);
}

#[tokio::test]
async fn max_tokens_and_stop_strings_end_the_answer() {
    let engine = testing::engine(LocalEngineOptions::default());
    let (_, _, reason, usage) = run(&engine, ask(QUESTION, Some(3))).await;
    assert_eq!(reason, FinishReason::Length);
    assert_eq!(usage.output_tokens, 3);

    let mut request = ask(QUESTION, None);
    request.stop = vec!["Paris".into()];
    let (text, _, reason, _) = run(&engine, request).await;
    assert_eq!(reason, FinishReason::Stop);
    assert!(!text.contains("Paris"), "{text:?}");
    assert!(!text.is_empty());

    // Sampling with a seed is reproducible.
    let mut sampled = ask("Tell me a short joke.", Some(20));
    sampled.temperature = Some(0.8);
    sampled.top_p = Some(0.9);
    sampled.seed = Some(7);
    let first = run(&engine, sampled.clone()).await;
    let second = run(&engine, sampled).await;
    assert_eq!(first.0, second.0);
    // The same counts; the second run reuses the first prompt's whole groups.
    assert_eq!(
        (first.3.input_tokens, first.3.output_tokens),
        (second.3.input_tokens, second.3.output_tokens)
    );
    assert_eq!(
        second.3.cached_input_tokens,
        (first.3.input_tokens - 2) / 32 * 32
    );

    // Tools and structured output: tests/structured.rs.
    assert!(engine.capabilities().tools);
    assert!(engine.capabilities().json_schema);
    assert!(engine.capabilities().streaming);
}

fn long_story() -> ChatRequest {
    let mut request = ask(
        "Write a very long story about a dragon and a knight.",
        Some(2000),
    );
    request.temperature = Some(0.7);
    request.seed = Some(1);
    request
}

#[tokio::test]
async fn dropping_the_stream_stops_the_generation() {
    let engine = testing::engine(LocalEngineOptions::default());
    let mut stream = engine.stream(long_story()).await.expect("starts");
    let first = stream.next().await.expect("an event").expect("no error");
    assert!(matches!(first, ChatEvent::TextDelta(_)));
    drop(stream);

    // Had the story gone on, this would wait for up to 2000 tokens.
    let started = Instant::now();
    let (_, _, reason, usage) = tokio::time::timeout(
        Duration::from_secs(20),
        run(&engine, ask(QUESTION, Some(3))),
    )
    .await
    .expect("the next request is served promptly");
    assert_eq!((reason, usage.output_tokens), (FinishReason::Length, 3));
    eprintln!("served after cancellation in {:?}", started.elapsed());
}

#[tokio::test]
async fn a_full_queue_answers_unavailable_with_a_retry_delay() {
    let engine = testing::engine(LocalEngineOptions {
        queue_capacity: 1,
        ..LocalEngineOptions::default()
    });
    let mut running = engine.stream(long_story()).await.expect("starts");
    // Once the first delta arrives the worker has taken the request off the queue.
    running.next().await.expect("an event").expect("no error");
    let _queued = engine.stream(ask(QUESTION, Some(3))).await.expect("queued");
    match engine.stream(ask(QUESTION, Some(3))).await {
        Err(ProviderError::Unavailable { retry_after, .. }) => assert!(retry_after.is_some()),
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("a third request was accepted"),
    }
}

#[tokio::test]
async fn a_prompt_beyond_the_context_window_is_refused() {
    let engine = testing::engine(LocalEngineOptions {
        // The question's prompt is 37 tokens and its greedy answer 8.
        context_length: Some(40),
        ..LocalEngineOptions::default()
    });
    let long = "word ".repeat(100);
    assert!(matches!(
        engine.stream(ask(&long, None)).await,
        Err(ProviderError::InvalidRequest(_))
    ));
    // A prompt that fits is cut at the window's end.
    let (_, _, reason, usage) = run(&engine, ask(QUESTION, Some(500))).await;
    assert_eq!(reason, FinishReason::Length);
    assert_eq!(usage.input_tokens, 37);
    assert_eq!(usage.input_tokens + usage.output_tokens, 40);
}
