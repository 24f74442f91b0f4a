//! OpenAI's embedding request, translated into the knowledge domain's `EmbeddingRequest`,
//! and its answer: vectors as float arrays or as base64 of little-endian `f32`s, as
//! OpenAI's clients decode them.

use base64::Engine;
use serde::{Deserialize, Serialize};
use tessera_knowledge::{EmbeddingRequest, Embeddings};
use utoipa::ToSchema;
use validator::Validate;

/// The texts: one string or an array of strings (token arrays are not accepted).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum EmbeddingInput {
    One(String),
    Many(Vec<String>),
}

/// How vectors are encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EncodingFormat {
    #[default]
    Float,
    /// Base64 of the vector's little-endian 32-bit floats.
    Base64,
}

/// OpenAI's embedding request.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEmbedding {
    /// The embedding model, as `GET /openai/v1/models` lists it (e.g. `all-MiniLM-L6-v2`).
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255, example = "all-MiniLM-L6-v2")]
    pub model: String,
    pub input: EmbeddingInput,
    pub encoding_format: Option<EncodingFormat>,
    /// Only the model's own length (all-MiniLM-L6-v2: 384).
    #[validate(range(min = 1))]
    #[schema(minimum = 1)]
    pub dimensions: Option<u32>,
    /// Accepted for compatibility (usage is attributed to the credential).
    #[validate(length(max = 256))]
    #[schema(max_length = 256)]
    pub user: Option<String>,
}

/// A vector: floats, or base64 text.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Vector {
    Float(Vec<f32>),
    Base64(String),
}

/// One text's embedding.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmbeddingOut {
    /// Always `embedding`.
    pub object: &'static str,
    pub index: usize,
    pub embedding: Vector,
}

/// Tokens read.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmbeddingUsage {
    pub prompt_tokens: u64,
    pub total_tokens: u64,
}

/// The embeddings, in the order of the inputs.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmbeddingList {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<EmbeddingOut>,
    pub model: String,
    pub usage: EmbeddingUsage,
}

fn base64_of(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl CreateEmbedding {
    /// The knowledge domain's request, and how the vectors are to be encoded.
    pub fn into_request(self) -> (EmbeddingRequest, EncodingFormat) {
        let request = EmbeddingRequest {
            model: self.model,
            texts: match self.input {
                EmbeddingInput::One(text) => vec![text],
                EmbeddingInput::Many(texts) => texts,
            },
            dimensions: self.dimensions,
        };
        (request, self.encoding_format.unwrap_or_default())
    }
}

impl EmbeddingList {
    /// The embeddings made, encoded as asked.
    pub fn of(embedded: Embeddings, format: EncodingFormat) -> Self {
        Self {
            object: "list",
            data: embedded
                .vectors
                .iter()
                .enumerate()
                .map(|(index, vector)| EmbeddingOut {
                    object: "embedding",
                    index,
                    embedding: match format {
                        EncodingFormat::Float => Vector::Float(vector.clone()),
                        EncodingFormat::Base64 => Vector::Base64(base64_of(vector)),
                    },
                })
                .collect(),
            model: embedded.model,
            usage: EmbeddingUsage {
                prompt_tokens: embedded.tokens,
                total_tokens: embedded.tokens,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_vectors_are_little_endian_f32() {
        let text = base64_of(&[1.0, -2.5]);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap();
        let back: Vec<f32> = bytes
            .chunks(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(back, vec![1.0, -2.5]);
    }
}
