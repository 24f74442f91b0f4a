//! The embedding model's word pieces as the unit chunks are sized in ([`ChunkTokens`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tessera_knowledge::ChunkTokens;
use tokenizers::Tokenizer;
use tokenizers::models::ModelWrapper;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;

/// Words whose counts are remembered before the memory starts over (a few MiB).
const REMEMBERED_WORDS: usize = 1 << 17;
/// Longer words are counted each time rather than remembered.
const REMEMBERED_WORD_BYTES: usize = 128;

/// Words' counts, remembered across calls.
type RememberedWords = Mutex<HashMap<Box<str>, u32>>;

/// Counts text in a model's word pieces, untruncated, so a chunk is cut to what the model
/// reads rather than cut short by it.
#[derive(Clone)]
pub struct WordPieces {
    tokenizer: Tokenizer,
    window: usize,
    /// Counts of words already seen, when the tokenizer reads each space-separated word on
    /// its own (see [`reads_words_alone`]). A chunker measures the same words again and
    /// again as it looks for where to cut (NFCorpus: about 40 counts per abstract), and
    /// the tokenizer's full encoding of each candidate was most of the time spent cutting.
    words: Option<Arc<RememberedWords>>,
}

impl std::fmt::Debug for WordPieces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordPieces")
            .field("window", &self.window)
            .field("by_words", &self.words.is_some())
            .finish_non_exhaustive()
    }
}

impl WordPieces {
    /// `tokenizer` as the encoder reads texts with it (its truncation is the model's
    /// window, special tokens included).
    pub(crate) fn new(mut tokenizer: Tokenizer) -> Result<Self, String> {
        let read = tokenizer
            .get_truncation()
            .map(|truncation| truncation.max_length);
        let specials = tokenizer
            .encode_fast("", true)
            .map_err(|e| format!("tokenizer: {e}"))?
            .len();
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| format!("tokenizer: {e}"))?;
        let window = read
            .ok_or("the tokenizer reads texts of any length")?
            .saturating_sub(specials)
            .max(1);
        let words = reads_words_alone(&tokenizer).then(Default::default);
        Ok(Self {
            tokenizer,
            window,
            words,
        })
    }

    /// The tokenizer's own count of `text`: a text it cannot read counts as one token per
    /// byte, more than it could hold, so it is cut small rather than truncated.
    fn encoded(&self, text: &str) -> usize {
        self.tokenizer
            .encode_fast(text, false)
            .map_or(text.len(), |encoding| encoding.len())
    }

    /// The sum of the words' counts, each word counted once by the tokenizer.
    fn by_words(&self, remembered: &RememberedWords, text: &str) -> usize {
        let mut remembered = remembered.lock().unwrap_or_else(PoisonError::into_inner);
        text.split(is_separator)
            .filter(|word| !word.is_empty())
            .map(|word| {
                if word.len() > REMEMBERED_WORD_BYTES {
                    return self.encoded(word);
                }
                if let Some(&count) = remembered.get(word) {
                    return count as usize;
                }
                let count = self.encoded(word);
                if remembered.len() >= REMEMBERED_WORDS {
                    remembered.clear();
                }
                remembered.insert(word.into(), u32::try_from(count).unwrap_or(u32::MAX));
                count
            })
            .sum()
    }
}

impl ChunkTokens for WordPieces {
    fn count(&self, text: &str) -> usize {
        match &self.words {
            Some(remembered) => self.by_words(remembered, text),
            None => self.encoded(text),
        }
    }

    fn window(&self) -> usize {
        self.window
    }
}

/// The separators every word is read apart at: BERT's normalizer keeps them as spaces (it
/// only turns other white space into spaces and drops control characters) and its
/// pre-tokenizer splits there, so no word piece spans one and they count for nothing.
fn is_separator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Whether a text's count is the sum of its words' counts: a WordPiece model behind BERT's
/// normalizer (or none) and pre-tokenizer, whose added tokens contain no separator. Any
/// other tokenizer is asked for whole texts.
fn reads_words_alone(tokenizer: &Tokenizer) -> bool {
    let normalizer = matches!(
        tokenizer.get_normalizer(),
        None | Some(NormalizerWrapper::BertNormalizer(_))
    );
    let pre_tokenizer = matches!(
        tokenizer.get_pre_tokenizer(),
        Some(PreTokenizerWrapper::BertPreTokenizer(_))
    );
    let model = matches!(tokenizer.get_model(), ModelWrapper::WordPiece(_));
    let added = tokenizer
        .get_added_tokens_decoder()
        .values()
        .all(|token| !token.content.contains(is_separator));
    normalizer && pre_tokenizer && model && added
}
