//! Checks of how the model serves several requests: dropping a stream (before or during its
//! answer) cancels it without hanging and leaves the model answering the next request, and
//! concurrent requests each get their own answer.

use std::time::Instant;

use futures_util::future::join;

use super::{
    reading::{read, read_stream, start},
    requests::{CAPITAL, COUNTING, SHORT_ANSWER, STORY, ask},
    subject::{ChatModelUnderTest, Verdict, skipped},
};
use crate::FinishReason;

/// Dropping a stream cancels the generation: a long answer dropped unread, and another
/// dropped after its first event, hold up neither the drop nor the next short answer, which
/// comes within `answer_within` (a model serving one request at a time that went on
/// generating the dropped stories would miss that).
pub async fn dropping_a_stream_cancels_it_and_the_next_request_is_answered(
    subject: &ChatModelUnderTest,
) -> Verdict {
    // The story's length is what a generation left running would cost; cancelled, nothing.
    let story = ask(subject, STORY, 2000);
    let unread = start(subject, story.clone(), "a story dropped unread")
        .await
        .unwrap_or_else(|error| panic!("a story dropped unread: refused: {error}"));
    drop(unread);

    let mut begun = start(subject, story, "a story dropped after its first event")
        .await
        .unwrap_or_else(|error| panic!("a story dropped after its first event: {error}"));
    let first = tokio::time::timeout(
        subject.answer_within,
        futures_util::StreamExt::next(&mut begun),
    )
    .await
    .unwrap_or_else(|_| panic!("a story: no first event within {:?}", subject.answer_within));
    assert!(
        matches!(first, Some(Ok(_))),
        "a story: its first item is {first:?}"
    );
    drop(begun);

    let started = Instant::now();
    let next = read(
        subject,
        ask(subject, COUNTING, 3),
        "the answer after two dropped stories",
    )
    .await;
    assert!(
        matches!(
            next.finish_reason(),
            FinishReason::Stop | FinishReason::Length
        ),
        "the answer after the dropped stories finished with {:?}",
        next.finish_reason()
    );
    eprintln!(
        "chat model contract: answered {:.1} s after dropping two streams",
        started.elapsed().as_secs_f64()
    );
    Verdict::Held
}

/// Two different requests at once each get the answer they get alone: no text, finish or
/// usage crosses between concurrent streams.
pub async fn concurrent_requests_each_get_their_own_answer(
    subject: &ChatModelUnderTest,
) -> Verdict {
    // Each request's own answer is known only from an identical earlier one.
    if !subject.backend.repeats_greedy_answers {
        return skipped("the backend is declared not to repeat greedy answers");
    }
    let (counting, capital) = (
        ask(subject, COUNTING, SHORT_ANSWER),
        ask(subject, CAPITAL, SHORT_ANSWER),
    );
    let counting_alone = read(subject, counting.clone(), "counting, alone").await;
    let capital_alone = read(subject, capital.clone(), "the capital, alone").await;
    // Both started before either is read, then read interleaved.
    let (counting_stream, capital_stream) = join(
        start(subject, counting, "counting, concurrently"),
        start(subject, capital, "the capital, concurrently"),
    )
    .await;
    let (counting_together, capital_together) = join(
        read_stream(
            subject,
            counting_stream.unwrap_or_else(|error| panic!("counting, concurrently: {error}")),
            "counting, concurrently",
        ),
        read_stream(
            subject,
            capital_stream.unwrap_or_else(|error| panic!("the capital, concurrently: {error}")),
            "the capital, concurrently",
        ),
    )
    .await;
    for (what, alone, together) in [
        ("counting", &counting_alone, &counting_together),
        ("the capital", &capital_alone, &capital_together),
    ] {
        assert_eq!(
            (together.text(), together.finish_reason()),
            (alone.text(), alone.finish_reason()),
            "{what}: another answer when asked concurrently"
        );
        let (alone, together) = (alone.usage(), together.usage());
        assert_eq!(
            (together.input_tokens, together.output_tokens),
            (alone.input_tokens, alone.output_tokens),
            "{what}: other token counts when asked concurrently"
        );
    }
    Verdict::Held
}
