//! Token counting with OpenAI's byte-pair encodings through `tiktoken-rs`, whose vocabulary
//! files are compiled in (no download at run time). `TiktokenCounter` implements the
//! prompts crate's `TokenCounter` port; `o200k_base` (GPT-4o and later) is the default.
//! Text is counted as ordinary text: special-token spellings such as `<|endoftext|>` in a
//! particle are counted as the characters they are, never as control tokens.

use std::{
    fmt,
    str::FromStr,
    sync::{Arc, OnceLock},
};

use tessera_prompts::TokenCounter;
use tiktoken_rs::CoreBPE;

/// The encodings Tessera can count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    #[default]
    O200kBase,
    Cl100kBase,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an encoding name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown encoding `{0}`; expected o200k_base or cl100k_base")]
pub struct EncodingError(String);

impl FromStr for Encoding {
    type Err = EncodingError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "o200k_base" => Ok(Encoding::O200kBase),
            "cl100k_base" => Ok(Encoding::Cl100kBase),
            other => Err(EncodingError(other.to_owned())),
        }
    }
}

/// Why an encoding could not be loaded (its compiled-in vocabulary failed to parse).
#[derive(Debug, Clone, thiserror::Error)]
#[error("loading {encoding}: {reason}")]
pub struct LoadError {
    encoding: Encoding,
    reason: String,
}

/// Counts tokens with one tiktoken encoding. Cheap to clone; loading takes a few hundred
/// milliseconds, so build one at start-up and share it.
#[derive(Clone)]
pub struct TiktokenCounter {
    encoding: Encoding,
    bpe: Arc<CoreBPE>,
}

impl fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl TiktokenCounter {
    pub fn new(encoding: Encoding) -> Result<Self, LoadError> {
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base(),
        }
        .map_err(|e| LoadError {
            encoding,
            reason: e.to_string(),
        })?;
        Ok(Self {
            encoding,
            bpe: Arc::new(bpe),
        })
    }

    /// A counter shared by the whole process: the vocabulary is parsed once per encoding.
    pub fn shared(encoding: Encoding) -> Result<Self, LoadError> {
        static O200K: OnceLock<Result<TiktokenCounter, LoadError>> = OnceLock::new();
        static CL100K: OnceLock<Result<TiktokenCounter, LoadError>> = OnceLock::new();
        let cell = match encoding {
            Encoding::O200kBase => &O200K,
            Encoding::Cl100kBase => &CL100K,
        };
        cell.get_or_init(|| Self::new(encoding)).clone()
    }

    /// The token ids of `text` (ordinary text, no special tokens).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.bpe.encode_ordinary(text)
    }
}

impl TokenCounter for TiktokenCounter {
    fn encoding(&self) -> &str {
        self.encoding.as_str()
    }

    fn count(&self, text: &str) -> u32 {
        u32::try_from(self.bpe.encode_ordinary(text).len()).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_reference_tokenizer() {
        // Figures from OpenAI's tokenizer for these encodings.
        let o200k = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        assert_eq!(o200k.count(""), 0);
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(o200k.encode("hello world"), vec![24912, 2375]);
        let cl100k = TiktokenCounter::new(Encoding::Cl100kBase).unwrap();
        assert_eq!(cl100k.encode("hello world"), vec![15339, 1917]);
    }

    #[test]
    fn special_token_spellings_are_ordinary_text() {
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        assert!(counter.count("<|endoftext|>") > 1);
    }

    #[test]
    fn encoding_names_round_trip() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            assert_eq!(encoding.as_str().parse::<Encoding>(), Ok(encoding));
        }
        assert!("gpt2".parse::<Encoding>().is_err());
    }
}

#[cfg(test)]
mod profile_sizes {
    use tessera_prompts::{SystemProfiles, composition_warnings, particle_warnings};

    use super::*;

    /// The shipped system profiles follow the size guidance they are examples of.
    #[test]
    fn builtin_profiles_are_inside_the_recommended_sizes() {
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        for profile in SystemProfiles::builtin().unwrap().profiles {
            let mut total = 0;
            for particle in &profile.particles {
                let tokens = counter.count(&particle.content);
                total += tokens;
                let warnings = particle_warnings(particle.category, tokens);
                assert!(warnings.is_empty(), "{}: {warnings:?}", particle.slug);
            }
            let count = u32::try_from(profile.particles.len()).unwrap();
            let warnings = composition_warnings(count, total);
            assert!(warnings.is_empty(), "{}: {warnings:?}", profile.slug);
        }
    }
}
