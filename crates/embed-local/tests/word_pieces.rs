//! The word pieces chunks are sized in (`Embedder::chunk_tokens`), for both embedded models
//! (fetched by `just models`): what the model reads of a text, counted without its special
//! tokens and without truncation.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel};
use tessera_knowledge::Embedder;

mod support;

use support::models_dir;

fn load(model: LocalEmbeddingModel, max_tokens: Option<usize>) -> LocalEmbedder {
    let root = models_dir();
    let dir = model.find(&root).unwrap_or_else(|| {
        panic!(
            "{} is not under {}: run `just models`",
            model.name(),
            root.display()
        )
    });
    let options = LocalEmbedderOptions {
        model,
        max_tokens,
        ..LocalEmbedderOptions::default()
    };
    LocalEmbedder::load(&dir, options).expect("the model loads")
}

#[test]
fn chunks_are_counted_in_the_word_pieces_the_model_reads() {
    for (model, window) in [
        (LocalEmbeddingModel::AllMiniLmL6V2, 254),
        (LocalEmbeddingModel::BgeSmallEnV15, 510),
    ] {
        let embedder = load(model, None);
        let tokens = embedder
            .chunk_tokens()
            .expect("an embedded model knows its tokens");
        assert_eq!(tokens.window(), window, "{}", model.name());
        for text in [
            "The office is closed on public holidays.",
            "2,3,7,8-Tetrachlorodibenzo-p-dioxin (TCDD): 0.0042 µg/kg",
            "   ",
        ] {
            // The model reads the text between its two special tokens.
            let read = embedder.count_tokens(text).unwrap() as usize;
            assert_eq!(tokens.count(text), read - 2, "{}: {text:?}", model.name());
        }
        // Numbers and rare words take many word pieces: 5 words, 20 pieces or more.
        assert!(tokens.count("2,3,7,8-Tetrachlorodibenzo-p-dioxin 0.0042 µg/kg") >= 20);
        // A text longer than the window is counted whole, not cut to what is read.
        let sentence = "Invoices are sent on the first day of each month. ";
        let long = sentence.repeat(60);
        assert_eq!(embedder.count_tokens(&long).unwrap() as usize, window + 2);
        assert_eq!(tokens.count(&long), 60 * tokens.count(sentence));
        assert!(tokens.count(&long) > window);
    }
}

#[test]
fn a_shorter_reading_narrows_the_window() {
    let embedder = load(LocalEmbeddingModel::AllMiniLmL6V2, Some(128));
    assert_eq!(embedder.chunk_tokens().unwrap().window(), 126);
}
