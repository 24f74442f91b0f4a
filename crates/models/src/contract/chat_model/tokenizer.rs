//! The check of the model's tokenizer, which budgets context: it has a name and counts text
//! in tokens, more for more text.

use super::subject::{ChatModelUnderTest, Verdict};

/// The tokenizer names its encoding, counts at least one token in a short sentence, and
/// more in ten of them.
pub async fn the_tokenizer_counts_text_in_tokens(subject: &ChatModelUnderTest) -> Verdict {
    let tokenizer = subject.model.tokenizer();
    assert!(
        !tokenizer.encoding().is_empty(),
        "the tokenizer names no encoding"
    );
    let sentence = "The capital of France is Paris. ";
    let once = tokenizer.count(sentence);
    let ten_times = tokenizer.count(&sentence.repeat(10));
    assert!(once > 0, "no token counted in {sentence:?}");
    assert!(
        ten_times > once,
        "{ten_times} tokens in ten sentences, {once} in one"
    );
    Verdict::Held
}
