//! Checks of plain text answers: the shape of a stream and its usage, the same greedy answer
//! streamed or completed, `max_tokens` ending an answer with `Length`, and a stop string
//! ending it just before the string.

use super::{
    reading::{assert_counts_tokens, complete_within, read},
    requests::{COUNTING, SHORT_ANSWER, ask},
    subject::{ChatModelUnderTest, Verdict, skipped},
};
use crate::{ChatEvent, FinishReason};

/// An answer streams as text, then exactly one `Finish` (the last event) with why it ended
/// and the tokens it used; no tool was offered, so there is no tool call.
pub async fn an_answer_streams_text_then_one_finish_with_usage(
    subject: &ChatModelUnderTest,
) -> Verdict {
    let answer = read(
        subject,
        ask(subject, COUNTING, SHORT_ANSWER),
        "a plain question",
    )
    .await;
    assert!(
        answer
            .events
            .iter()
            .any(|event| matches!(event, ChatEvent::TextDelta(text) if !text.is_empty())),
        "a plain question got no text: {:?}",
        answer.events
    );
    assert!(
        answer.completion.tool_calls.is_empty(),
        "a tool call though no tool was offered: {:?}",
        answer.completion.tool_calls
    );
    assert!(
        matches!(
            answer.finish_reason(),
            FinishReason::Stop | FinishReason::Length
        ),
        "a plain answer finished with {:?}",
        answer.finish_reason()
    );
    assert_counts_tokens(answer.usage(), "a plain answer");
    Verdict::Held
}

/// At temperature 0, the streamed answer is the completed one (`complete` folds the same
/// stream): the same text, finish reason and token counts.
pub async fn a_greedy_answer_is_the_same_streamed_or_completed(
    subject: &ChatModelUnderTest,
) -> Verdict {
    if !subject.backend.repeats_greedy_answers {
        return skipped("the backend is declared not to repeat greedy answers");
    }
    let request = ask(subject, COUNTING, SHORT_ANSWER);
    let completed = complete_within(subject, request.clone(), "the completed answer").await;
    let streamed = read(subject, request, "the streamed answer").await;
    assert_eq!(
        streamed.text(),
        completed.content,
        "the streamed deltas do not add up to the completed answer"
    );
    assert_eq!(
        Some(streamed.finish_reason()),
        completed.finish_reason.as_ref()
    );
    // Cached input tokens may differ: the second request can reuse the first one's prompt.
    let (streamed, completed) = (streamed.usage(), completed.usage);
    assert_eq!(
        (streamed.input_tokens, streamed.output_tokens),
        (completed.input_tokens, completed.output_tokens),
        "the same answer counts other tokens: {streamed:?} and {completed:?}"
    );
    Verdict::Held
}

/// An answer longer than `max_tokens` ends at the limit, finishing with `Length`, having
/// used no more output tokens than allowed.
pub async fn max_tokens_cuts_the_answer_with_reason_length(
    subject: &ChatModelUnderTest,
) -> Verdict {
    if !subject.backend.honours_max_tokens {
        return skipped("the backend is declared not to honour max_tokens");
    }
    let limit = 4;
    let answer = read(
        subject,
        ask(subject, COUNTING, limit),
        "a four-token answer",
    )
    .await;
    assert_eq!(
        *answer.finish_reason(),
        FinishReason::Length,
        "counting to 50 in {limit} tokens ended otherwise: {:?}",
        answer.text()
    );
    assert!(!answer.text().is_empty(), "no text within {limit} tokens");
    assert_counts_tokens(answer.usage(), "a four-token answer");
    assert!(
        answer.usage().output_tokens <= limit,
        "{} output tokens counted where max_tokens is {limit}",
        answer.usage().output_tokens
    );
    Verdict::Held
}

/// A stop string ends the answer just before it: the greedy answer with a word of its second
/// half as stop string is that answer up to the word, finishing with `Stop`.
pub async fn a_stop_sequence_ends_the_answer_just_before_it(
    subject: &ChatModelUnderTest,
) -> Verdict {
    if !subject.backend.honours_stop_sequences {
        return skipped("the backend is declared not to honour stop strings");
    }
    // Where the stop string will be is known only from an identical earlier answer.
    if !subject.backend.repeats_greedy_answers {
        return skipped("the backend is declared not to repeat greedy answers");
    }
    let request = ask(subject, COUNTING, SHORT_ANSWER);
    let full = read(subject, request.clone(), "the answer without a stop string").await;
    let (at, word) = word_first_seen_in_second_half(full.text()).unwrap_or_else(|| {
        panic!(
            "the answer {:?} has no word in its second half seen there first, to stop at",
            full.text()
        )
    });
    let mut stopping = request;
    stopping.stop = vec![word.to_owned()];
    let stopped = read(subject, stopping, "the answer with a stop string").await;
    eprintln!(
        "chat model contract: stop string {word:?} ended {:?} as {:?}",
        full.text(),
        stopped.text()
    );
    assert_eq!(
        stopped.text(),
        &full.text()[..at],
        "stop string {word:?}: not the answer up to it"
    );
    assert_eq!(
        *stopped.finish_reason(),
        FinishReason::Stop,
        "stop string {word:?}"
    );
    Verdict::Held
}

/// The byte offset and text of the first word (after whitespace) in the second half of
/// `text` whose first occurrence in `text` is there.
fn word_first_seen_in_second_half(text: &str) -> Option<(usize, &str)> {
    let half = text.len() / 2;
    text.char_indices()
        .filter(|&(at, c)| at >= half && !c.is_whitespace())
        .filter(|&(at, _)| text[..at].ends_with(char::is_whitespace))
        .map(|(at, _)| {
            let end = text[at..]
                .find(char::is_whitespace)
                .map_or(text.len(), |length| at + length);
            (at, &text[at..end])
        })
        .find(|&(at, word)| text.find(word) == Some(at))
}

#[cfg(test)]
mod tests {
    use super::word_first_seen_in_second_half;

    #[test]
    fn the_stop_word_is_first_seen_in_the_second_half() {
        assert_eq!(
            word_first_seen_in_second_half("1, 2, 3, 4, 5, 6, 7, 8,"),
            Some((12, "5,"))
        );
        // "is" is seen first inside "This": the next word is taken.
        assert_eq!(
            word_first_seen_in_second_half("This one is it"),
            Some((12, "it"))
        );
        assert_eq!(word_first_seen_in_second_half("Paris"), None);
        assert_eq!(word_first_seen_in_second_half("a a a a"), None);
    }
}
