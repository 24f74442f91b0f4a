//! The embedding model's word pieces as the unit chunks are sized in ([`ChunkTokens`]).

use tessera_knowledge::ChunkTokens;
use tokenizers::Tokenizer;

/// Counts text in a model's word pieces, untruncated, so a chunk is cut to what the model
/// reads rather than cut short by it.
#[derive(Clone)]
pub struct WordPieces {
    tokenizer: Tokenizer,
    window: usize,
}

impl std::fmt::Debug for WordPieces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordPieces")
            .field("window", &self.window)
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
        Ok(Self { tokenizer, window })
    }
}

impl ChunkTokens for WordPieces {
    fn count(&self, text: &str) -> usize {
        // A text the tokenizer cannot read counts as one token per byte: more than it could
        // hold, so it is cut small rather than truncated.
        self.tokenizer
            .encode_fast(text, false)
            .map_or(text.len(), |encoding| encoding.len())
    }

    fn window(&self) -> usize {
        self.window
    }
}
