//! Usage for upstreams that stream none. `stream_options.include_usage` is asked for on every
//! request, but some OpenAI-compatible servers ignore it (the llama-cpp-python server sends
//! no usage chunk); their answers would otherwise finish with 0 tokens and be accounted as
//! free. Such a finish gets counts from the adapter's tokenizer instead: the prompt's
//! message texts and the answer's text, reasoning and tool-call arguments (an estimate when
//! the tokenizer is not the model's own).

use std::sync::Arc;

use futures_util::StreamExt;
use tessera_models::{ChatEvent, ChatRequest, ChatStream, Usage};
use tessera_prompts::TokenCounter;

/// Tokens a chat template adds around each message (role markers), as OpenAI counts them.
const TOKENS_PER_MESSAGE: u32 = 3;

/// The prompt's tokens as `tokenizer` counts them.
fn prompt_tokens(request: &ChatRequest, tokenizer: &dyn TokenCounter) -> u32 {
    request
        .messages
        .iter()
        .map(|message| {
            let calls: u32 = message
                .tool_calls
                .iter()
                .map(|call| tokenizer.count(&call.name) + tokenizer.count(&call.arguments))
                .sum();
            TOKENS_PER_MESSAGE + tokenizer.count(&message.content) + calls
        })
        .sum()
}

/// `events`, with a finish that carries no usage given estimated counts. The prompt is
/// counted only then: most upstreams report usage, and counting costs CPU.
pub(crate) fn fill_missing_usage(
    events: ChatStream,
    tokenizer: Arc<dyn TokenCounter>,
    request: ChatRequest,
) -> ChatStream {
    let mut answer = String::new();
    Box::pin(events.map(move |item| match item {
        Ok(ChatEvent::Finish { reason, usage }) if usage == Usage::default() => {
            Ok(ChatEvent::Finish {
                reason,
                usage: Usage {
                    input_tokens: prompt_tokens(&request, tokenizer.as_ref()),
                    output_tokens: tokenizer.count(&answer),
                    reasoning_tokens: 0,
                    cached_input_tokens: 0,
                },
            })
        }
        Ok(event) => {
            match &event {
                ChatEvent::TextDelta(text)
                | ChatEvent::ReasoningDelta(text)
                | ChatEvent::ToolCallArgumentsDelta { delta: text, .. } => answer.push_str(text),
                ChatEvent::ToolCallStart { name, .. } => answer.push_str(name),
                _ => {}
            }
            Ok(event)
        }
        Err(error) => Err(error),
    }))
}

#[cfg(test)]
mod tests {
    use futures_util::stream;
    use tessera_models::{ChatMessage, FinishReason, Role};

    use tessera_models::memory::WordCounter;

    use super::*;

    async fn finish_of(events: Vec<ChatEvent>, request: &ChatRequest) -> Usage {
        let stream: ChatStream = Box::pin(stream::iter(events.into_iter().map(Ok)));
        let out: Vec<_> = fill_missing_usage(stream, Arc::new(WordCounter), request.clone())
            .collect()
            .await;
        match out.last() {
            Some(Ok(ChatEvent::Finish { usage, .. })) => *usage,
            other => panic!("no finish: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_finish_without_usage_gets_counts_and_one_with_usage_keeps_its_own() {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(Role::System, "be brief"),
                ChatMessage::new(Role::User, "what is two plus two"),
            ],
            ..ChatRequest::default()
        };
        let prompt = prompt_tokens(&request, &WordCounter);
        assert_eq!(prompt, 2 * TOKENS_PER_MESSAGE + 2 + 5);

        let answer = |usage| {
            vec![
                ChatEvent::TextDelta("it is ".into()),
                ChatEvent::TextDelta("four".into()),
                ChatEvent::Finish {
                    reason: FinishReason::Stop,
                    usage,
                },
            ]
        };
        let estimated = finish_of(answer(Usage::default()), &request).await;
        assert_eq!(
            (estimated.input_tokens, estimated.output_tokens),
            (prompt, 3)
        );
        let reported = Usage {
            input_tokens: 20,
            output_tokens: 2,
            reasoning_tokens: 0,
            cached_input_tokens: 0,
        };
        assert_eq!(finish_of(answer(reported), &request).await, reported);
    }
}
