//! The word pieces chunks are sized in (`Embedder::chunk_tokens`), for both embedded models
//! (fetched by `just models`): what the model reads of a text, counted without its special
//! tokens and without truncation.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel};
use tessera_knowledge::Embedder;
use tokenizers::Tokenizer;

mod support;

use support::models_dir;

/// The model's tokenizer as its package ships it, reading whole texts without truncation.
fn whole_text_tokenizer(model: LocalEmbeddingModel) -> Tokenizer {
    let dir = model.find(&models_dir()).expect("the model is fetched");
    let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    tokenizer.with_truncation(None).unwrap();
    tokenizer.with_padding(None);
    tokenizer
}

/// Texts whose white space, control characters, accents, scripts and special tokens a
/// word-by-word count could get wrong.
const AWKWARD: &[&str] = &[
    "Ünïcödé naïve café — résumé, Œuvre; ÅNGSTRÖM",
    "中文字符混合English文本和数字123",
    "tab\tseparated\r\nlines\u{000B}vertical\u{000C}feed\u{0085}next",
    "non\u{00A0}breaking\u{2003}em\u{3000}ideographic\u{2028}line\u{2029}para",
    "zero\u{200B}width\u{200D}joiner\u{FEFF}mark\u{00AD}soft",
    "control\u{0}null\u{FFFD}replacement\u{1F}unit",
    "[CLS] [SEP] [MASK] [PAD] [UNK] foo[SEP]bar [unused0]x",
    "👩‍👩‍👧 🎉 ✓ ∑ x² ½",
    "e\u{0301} \u{0301}a \u{0301} cafe\u{0301}",
    "שלום עולם مرحبا بالعالم Привет мир Γειά σου",
    "2,3,7,8-Tetrachlorodibenzo-p-dioxin (TCDD): 0.0042 µg/kg; p<0.05",
    "https://example.com/a?b=c&d=e#f user@example.org C:\\path\\file.txt",
    "   leading and trailing   ",
    "",
];

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

#[test]
fn a_text_counts_as_the_tokenizer_counts_it_whole() {
    for model in [
        LocalEmbeddingModel::AllMiniLmL6V2,
        LocalEmbeddingModel::BgeSmallEnV15,
    ] {
        let embedder = load(model, None);
        let tokens = embedder.chunk_tokens().unwrap();
        let tokenizer = whole_text_tokenizer(model);
        let whole = |text: &str| tokenizer.encode_fast(text, false).unwrap().len();
        let long_word = "Pneumonoultramicroscopicsilicovolcanoconiosis".repeat(8);
        let mut texts: Vec<String> = AWKWARD.iter().map(|text| (*text).to_owned()).collect();
        texts.push(long_word.clone());
        texts.push(format!("{long_word} {long_word}x"));
        // Every pair and a few longer mixtures, joined with and without separators.
        let mut seed = 0x9e37_79b9_u32;
        for _ in 0..300 {
            let mut text = String::new();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let piece = AWKWARD[seed as usize % AWKWARD.len()];
                let cut = piece
                    .char_indices()
                    .map(|(at, _)| at)
                    .nth((seed >> 8) as usize % piece.chars().count().max(1))
                    .unwrap_or(0);
                text.push_str(&piece[cut..]);
                text.push_str(["", " ", "\n", "\u{00A0}", "\t\t"][(seed >> 4) as usize % 5]);
            }
            texts.push(text);
        }
        for text in &texts {
            // Twice: the second count comes from what the first remembered.
            assert_eq!(
                tokens.count(text),
                whole(text),
                "{}: {text:?}",
                model.name()
            );
            assert_eq!(
                tokens.count(text),
                whole(text),
                "{}: {text:?}",
                model.name()
            );
        }
    }
}
