//! The model's own tokenizer, rebuilt from the GGUF metadata (the file carries no
//! `tokenizer.json`): byte-level BPE over `tokenizer.ggml.tokens` and `tokenizer.ggml.merges`,
//! pre-tokenized with `Digits(individual_digits)` then `ByteLevel(add_prefix_space = false)`,
//! the control tokens registered as special tokens, no BOS.

use std::{collections::HashMap, sync::Arc};

use candle_core::quantized::gguf_file::{Content, Value};
use tessera_prompts::TokenCounter;
use tokenizers::{
    AddedToken, Tokenizer,
    decoders::byte_level::ByteLevel as ByteLevelDecoder,
    models::bpe::{BPE, Vocab},
    pre_tokenizers::{byte_level::ByteLevel, digits::Digits, sequence::Sequence},
};

use crate::LoadError;

/// GGUF `token_type` of control tokens (llama.cpp's `LLAMA_TOKEN_TYPE_CONTROL`).
const TOKEN_TYPE_CONTROL: i32 = 3;

/// A tokenizer of one GGUF model, with the byte table used to decode generated tokens.
pub(crate) struct GgufTokenizer {
    pub(crate) inner: Tokenizer,
    /// Raw bytes of each token id (empty for special tokens).
    bytes: Vec<Vec<u8>>,
    special: Vec<bool>,
    name: String,
}

impl GgufTokenizer {
    pub(crate) fn from_gguf(content: &Content) -> Result<Self, LoadError> {
        let md = &content.metadata;
        let model = string(md, "tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(LoadError::Unsupported(format!(
                "tokenizer model {model:?} (only byte-level BPE, \"gpt2\", is supported)"
            )));
        }
        let tokens = strings(md, "tokenizer.ggml.tokens")?;
        let merges = strings(md, "tokenizer.ggml.merges")?;
        let types: Vec<i32> = match md.get("tokenizer.ggml.token_type") {
            Some(value) => value
                .to_vec()
                .map_err(metadata("tokenizer.ggml.token_type"))?
                .iter()
                .map(|v| v.to_i32().map_err(metadata("tokenizer.ggml.token_type")))
                .collect::<Result<_, _>>()?,
            None => vec![1; tokens.len()],
        };
        let vocab: Vocab = tokens
            .iter()
            .enumerate()
            .map(|(id, token)| Ok(((*token).to_owned(), u32::try_from(id)?)))
            .collect::<Result<_, std::num::TryFromIntError>>()
            .map_err(|_| LoadError::Metadata("vocabulary too large".into()))?;
        let merges = merges
            .iter()
            .map(|merge| {
                merge
                    .split_once(' ')
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .ok_or_else(|| LoadError::Metadata(format!("malformed merge {merge:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| LoadError::Tokenizer(e.to_string()))?;
        let mut inner = Tokenizer::new(bpe);
        inner.with_pre_tokenizer(Some(Sequence::new(vec![
            Digits::new(true).into(),
            ByteLevel::new(false, true, true).into(),
        ])));
        inner.with_decoder(Some(ByteLevelDecoder::default()));
        let special: Vec<bool> = (0..tokens.len())
            .map(|id| types.get(id) == Some(&TOKEN_TYPE_CONTROL))
            .collect();
        let specials: Vec<AddedToken> = tokens
            .iter()
            .zip(&special)
            .filter(|(_, special)| **special)
            .map(|(token, _)| AddedToken::from(*token, true))
            .collect();
        inner
            .add_special_tokens(specials)
            .map_err(|e| LoadError::Tokenizer(e.to_string()))?;

        let table = byte_decoder();
        let bytes = tokens
            .iter()
            .zip(&special)
            .map(|(token, special)| {
                if *special {
                    Vec::new()
                } else {
                    token
                        .chars()
                        .map(|c| table.get(&c).copied().unwrap_or(b'?'))
                        .collect()
                }
            })
            .collect();
        let name = md
            .get("general.name")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_else(|| "gguf".to_owned());
        Ok(Self {
            inner,
            bytes,
            special,
            name,
        })
    }

    /// Token ids of `text`; special tokens written in the text are recognised.
    pub(crate) fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.inner
            .encode_fast(text, false)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|e| e.to_string())
    }

    pub(crate) fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The raw bytes a token stands for (none for special tokens).
    pub(crate) fn token_bytes(&self, id: u32) -> &[u8] {
        self.bytes.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// How many token ids the vocabulary has.
    pub(crate) fn vocab_size(&self) -> u32 {
        u32::try_from(self.bytes.len()).unwrap_or(u32::MAX)
    }

    /// The token's text as the vocabulary spells it (e.g. `<|im_end|>`).
    pub(crate) fn token_name(&self, id: u32) -> String {
        self.inner.id_to_token(id).unwrap_or_default()
    }

    pub(crate) fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).copied().unwrap_or(false)
    }
}

/// Counts tokens with a local model's own tokenizer.
#[derive(Clone)]
pub struct LocalTokenCounter {
    pub(crate) tokenizer: Arc<GgufTokenizer>,
}

impl LocalTokenCounter {
    /// Token ids of `text` (special tokens written in the text count as one token each).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text).unwrap_or_default()
    }

    /// Text of `ids`, special tokens skipped.
    pub fn decode(&self, ids: &[u32]) -> String {
        self.tokenizer.inner.decode(ids, true).unwrap_or_default()
    }

    /// The id of a token of the vocabulary, special tokens included.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.tokenizer.token_id(token)
    }
}

impl std::fmt::Debug for LocalTokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTokenCounter")
            .field("encoding", &self.tokenizer.name)
            .finish()
    }
}

impl TokenCounter for LocalTokenCounter {
    fn encoding(&self) -> &str {
        &self.tokenizer.name
    }

    fn count(&self, text: &str) -> u32 {
        u32::try_from(self.encode(text).len()).unwrap_or(u32::MAX)
    }
}

fn metadata(key: &'static str) -> impl Fn(candle_core::Error) -> LoadError {
    move |e| LoadError::Metadata(format!("{key}: {e}"))
}

pub(crate) fn string<'a>(
    md: &'a HashMap<String, Value>,
    key: &'static str,
) -> Result<&'a str, LoadError> {
    md.get(key)
        .ok_or_else(|| LoadError::Metadata(format!("{key} is missing")))?
        .to_string()
        .map(String::as_str)
        .map_err(metadata(key))
}

fn strings<'a>(
    md: &'a HashMap<String, Value>,
    key: &'static str,
) -> Result<Vec<&'a str>, LoadError> {
    md.get(key)
        .ok_or_else(|| LoadError::Metadata(format!("{key} is missing")))?
        .to_vec()
        .map_err(metadata(key))?
        .iter()
        .map(|v| v.to_string().map(String::as_str).map_err(metadata(key)))
        .collect()
}

/// GPT-2's byte-to-character table, inverted: the byte each visible character stands for.
fn byte_decoder() -> HashMap<char, u8> {
    let mut table = HashMap::with_capacity(256);
    let mut shifted = 0u32;
    for byte in 0..=255u8 {
        let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let c = if printable {
            char::from(byte)
        } else {
            let c = char::from_u32(256 + shifted).unwrap_or('\u{FFFD}');
            shifted += 1;
            c
        };
        table.insert(c, byte);
    }
    table
}
