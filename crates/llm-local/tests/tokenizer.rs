//! The tokenizer rebuilt from the GGUF metadata.

use tessera_llm_local::{LocalEngineOptions, testing};
use tessera_models::ChatModel;

#[test]
fn tokenizer_matches_the_vocabulary_and_round_trips() {
    let engine = testing::engine(LocalEngineOptions::default());
    let counter = engine.token_counter();

    // SmolLM2's control tokens come first in its vocabulary.
    assert_eq!(counter.token_id("<|endoftext|>"), Some(0));
    assert_eq!(counter.token_id("<|im_start|>"), Some(1));
    assert_eq!(counter.token_id("<|im_end|>"), Some(2));
    assert_eq!(counter.encode("<|im_end|>"), [2]);
    let ids = counter.encode("Hi<|im_end|>\n");
    assert_eq!(ids.iter().filter(|id| **id == 2).count(), 1);

    // A common word is one token of the vocabulary; no BOS is added.
    let hello = counter
        .token_id("Hello")
        .expect("Hello is in the vocabulary");
    assert_eq!(counter.encode("Hello"), [hello]);
    // With a leading space, byte-level BPE uses the `Ġ` form.
    let space_hello = counter
        .token_id("ĠHello")
        .expect("ĠHello is in the vocabulary");
    assert_eq!(counter.encode("Hello Hello"), [hello, space_hello]);

    // Digits are split one by one.
    let digits: Vec<u32> = "2024"
        .chars()
        .map(|d| counter.token_id(&d.to_string()).expect("digit token"))
        .collect();
    assert_eq!(counter.encode("2024"), digits);

    for text in [
        "Hello, world!",
        "héllo wörld — naïve café, 日本語のテキスト, Ελληνικά",
        "emoji 🎉👍🏽 and 👨‍👩‍👧 family",
        "fn main() {\n\tprintln!(\"{}\", 12345 * 678);\n}\n",
        "  leading and trailing spaces  ",
    ] {
        let ids = counter.encode(text);
        assert!(!ids.is_empty());
        assert_eq!(counter.decode(&ids), text, "round trip of {text:?}");
    }

    let port = engine.tokenizer();
    assert_eq!(port.count("Hello Hello"), 2);
    assert_eq!(port.count(""), 0);
    assert!(!port.encoding().is_empty());
}
