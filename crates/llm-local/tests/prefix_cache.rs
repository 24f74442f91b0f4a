//! Prefix reuse against the real SmolLM2 GGUF: a chat's next turn and chats sharing a system
//! prompt reuse earlier keys and values, answers are identical to those computed without
//! reuse, the memory bound evicts the least recently used conversation, and one scope
//! (organization) never reuses another's prompts.

#![allow(clippy::expect_used, clippy::panic)]

use futures_util::StreamExt;
use tessera_llm_local::{LocalEngine, LocalEngineOptions, testing};
use tessera_models::{ChatEvent, ChatMessage, ChatModel, ChatRequest, Role, Usage};

/// Long enough (over 32 tokens) that its whole groups can be reused by another chat.
const SYSTEM: &str = "You are Tessera's test assistant. Answer in one short sentence, plainly, \
                      without lists, and never ask a question back. Prefer facts about \
                      geography, rivers, mountains and capitals when they are asked for.";

/// Bytes of one cached position of SmolLM2-135M: 30 layers × (keys + values) × 3 key/value
/// heads × 64 dimensions × 4 bytes.
const POSITION_BYTES: usize = 30 * 2 * 3 * 64 * 4;

fn request(messages: &[(Role, &str)]) -> ChatRequest {
    ChatRequest {
        model: "smollm2".into(),
        messages: messages
            .iter()
            .map(|(role, text)| ChatMessage::new(*role, *text))
            .collect(),
        max_tokens: Some(24),
        temperature: Some(0.0),
        ..ChatRequest::default()
    }
}

/// The answer's text and usage.
async fn answer(engine: &LocalEngine, messages: &[(Role, &str)]) -> (String, Usage) {
    answer_request(engine, request(messages)).await
}

async fn answer_request(engine: &LocalEngine, request: ChatRequest) -> (String, Usage) {
    let mut stream = engine.stream(request).await.expect("the generation starts");
    let (mut text, mut usage) = (String::new(), None);
    while let Some(event) = stream.next().await {
        match event.expect("no error mid-stream") {
            ChatEvent::TextDelta(delta) => text.push_str(&delta),
            ChatEvent::Finish { usage: u, .. } => usage = Some(u),
            other => panic!("unexpected event {other:?}"),
        }
    }
    (text, usage.expect("a finish event"))
}

/// Two chats interleaved, three turns each: the answers and their usage.
async fn conversation(engine: &LocalEngine) -> Vec<(String, Usage)> {
    use Role::{Assistant, System, User};
    let mut results = Vec::new();
    let first = [(System, SYSTEM), (User, "What is the capital of France?")];
    let (a1, usage) = answer(engine, &first).await;
    results.push((a1.clone(), usage));
    let other = [(System, SYSTEM), (User, "Name a long river in Africa.")];
    let (b1, usage) = answer(engine, &other).await;
    results.push((b1.clone(), usage));
    let second = [
        (System, SYSTEM),
        (User, "What is the capital of France?"),
        (Assistant, a1.as_str()),
        (User, "And of Italy?"),
    ];
    let (a2, usage) = answer(engine, &second).await;
    results.push((a2.clone(), usage));
    let other_second = [
        (System, SYSTEM),
        (User, "Name a long river in Africa."),
        (Assistant, b1.as_str()),
        (User, "Which countries does it cross?"),
    ];
    results.push(answer(engine, &other_second).await);
    let third = [
        (System, SYSTEM),
        (User, "What is the capital of France?"),
        (Assistant, a1.as_str()),
        (User, "And of Italy?"),
        (Assistant, a2.as_str()),
        (User, "And of Spain?"),
    ];
    results.push(answer(engine, &third).await);
    results
}

#[tokio::test]
async fn reuse_changes_no_answer_and_skips_the_shared_prefix() {
    let reused = conversation(&testing::engine(LocalEngineOptions::default())).await;
    let off = testing::engine(LocalEngineOptions {
        prefix_cache_bytes: 0,
        ..LocalEngineOptions::default()
    });
    let recomputed = conversation(&off).await;

    for (i, ((text, usage), (plain_text, plain))) in reused.iter().zip(&recomputed).enumerate() {
        eprintln!(
            "turn {i}: {} input tokens, {} reused; {text:?}",
            usage.input_tokens, usage.cached_input_tokens
        );
        // Bit-for-bit the same computation: the same greedy answer and token counts.
        assert_eq!(text, plain_text, "turn {i}");
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (plain.input_tokens, plain.output_tokens),
            "turn {i}"
        );
        assert_eq!(plain.cached_input_tokens, 0, "reuse off, turn {i}");
        // Whole groups of 32 positions, and at least two tokens still run.
        assert_eq!(usage.cached_input_tokens % 32, 0, "turn {i}");
        assert!(
            usage.cached_input_tokens + 2 <= usage.input_tokens,
            "turn {i}"
        );
    }
    let cached = |i: usize| reused[i].1.cached_input_tokens;
    let input = |i: usize| reused[i].1.input_tokens;
    // The first prompt had nothing to reuse; the other chat shares the system prompt.
    assert_eq!(cached(0), 0);
    assert!(cached(1) >= 32, "the shared system prompt is reused");
    assert!(cached(1) < input(0));
    // Each next turn reuses its chat's previous prompt (all but its last partial group),
    // though the other chat ran in between.
    for (turn, previous) in [(2, 0), (3, 1), (4, 2)] {
        assert!(
            cached(turn) + 32 > input(previous),
            "turn {turn} reused {} of the previous prompt's {}",
            cached(turn),
            input(previous)
        );
    }
}

/// Four chats, then the first one's next turn: the first prompt's usage and the next turn's.
async fn fourth_chat_returns(engine: &LocalEngine) -> (Usage, Usage) {
    use Role::{Assistant, System, User};
    // Long enough that the first prompt has whole groups beyond the shared system prompt.
    const FIRST: &str = "What is the capital of France? I am asking because my family plans \
                         a trip there next spring and we want to know which city to stay in.";
    let ask = |question: &'static str| [(System, SYSTEM), (User, question)];
    let (a1, first) = answer(engine, &ask(FIRST)).await;
    answer(engine, &ask("Name a long river in Africa.")).await;
    answer(engine, &ask("How high is Mont Blanc?")).await;
    let next = [
        (System, SYSTEM),
        (User, FIRST),
        (Assistant, a1.as_str()),
        (User, "And of Italy?"),
    ];
    let (_, next) = answer(engine, &next).await;
    (first, next)
}

#[tokio::test]
async fn the_memory_bound_evicts_the_least_recently_used_chat() {
    // Room for one saved prompt of up to 120 positions, not two: the first chat's prompt is
    // saved when the second starts, then evicted when the third saves the second's.
    let bounded = testing::engine(LocalEngineOptions {
        prefix_cache_bytes: 120 * POSITION_BYTES,
        ..LocalEngineOptions::default()
    });
    let (first, evicted) = fourth_chat_returns(&bounded).await;
    assert!(first.input_tokens < 120, "{} tokens", first.input_tokens);
    let (_, kept) = fourth_chat_returns(&testing::engine(LocalEngineOptions::default())).await;
    eprintln!(
        "first prompt {} tokens; its next turn reused {} when evicted, {} when kept",
        first.input_tokens, evicted.cached_input_tokens, kept.cached_input_tokens
    );
    // Kept: all of the first prompt's whole groups. Evicted: only what the chats still
    // cached share with it, the system prompt's whole groups.
    assert!(kept.cached_input_tokens + 32 > first.input_tokens);
    assert!(evicted.cached_input_tokens >= 32);
    assert!(evicted.cached_input_tokens < kept.cached_input_tokens);
}

#[tokio::test]
async fn one_scope_never_reuses_another_scopes_prompt() {
    let engine = testing::engine(LocalEngineOptions::default());
    let scoped = |scope: &str| ChatRequest {
        cache_scope: Some(scope.into()),
        ..request(&[
            (Role::System, SYSTEM),
            (Role::User, "What is the capital of France?"),
        ])
    };
    let (text, first) = answer_request(&engine, scoped("org_a")).await;
    assert_eq!(first.cached_input_tokens, 0);
    // Another organization sends the same prompt: it runs whole, and answers the same.
    let (other_text, other) = answer_request(&engine, scoped("org_b")).await;
    assert_eq!(other.cached_input_tokens, 0);
    assert_eq!(other_text, text);
    // The first organization's prompt is still saved for it.
    let (again, same) = answer_request(&engine, scoped("org_a")).await;
    assert!(same.cached_input_tokens >= 32, "{same:?}");
    assert_eq!(again, text);
}
