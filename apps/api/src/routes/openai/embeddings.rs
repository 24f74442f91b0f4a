//! `POST /openai/v1/embeddings`: the configured embedding model (the embedded
//! all-MiniLM-L6-v2, or the embedding server) through the knowledge domain's
//! `EmbeddingService`, which records the usage. Vectors as float arrays or as base64 of
//! little-endian `f32`s, as OpenAI's clients decode them.

use actix_web::{http::StatusCode, post, web};
use base64::Engine;
use serde::{Deserialize, Serialize};
use tessera_kernel::DomainError;
use tessera_knowledge::{EmbeddingCaller, EmbeddingError, EmbeddingRequest};
use utoipa::ToSchema;
use validator::Validate;

use super::{error::OpenAiError, models::model_not_found};
use crate::{access::Caller, extract::ValidJson, problem::ApiError, state::AppState};

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

/// Create embeddings in OpenAI's format.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateEmbeddings",
    request_body = CreateEmbedding,
    responses(
        (status = 200, description = "The embeddings", body = EmbeddingList),
        (status = 400, description = "Invalid input, token arrays, or `dimensions` the model cannot make", body = OpenAiError),
        (status = 401, description = "Missing, invalid, expired or revoked API key or token", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:invoke`", body = OpenAiError),
        (status = 404, description = "Not the embedding model (`model_not_found`)", body = OpenAiError),
        (status = 429, description = "Rate limited (`Retry-After`)", body = OpenAiError),
        (status = 503, description = "No embedding model is loaded, or it is unavailable", body = OpenAiError)
    )
)]
#[post("/openai/v1/embeddings")]
pub async fn create_embeddings(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateEmbedding>,
) -> Result<web::Json<EmbeddingList>, ApiError> {
    let Some(service) = &state.embeddings else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "embeddings_unavailable",
            "no embedding model is loaded on this instance (`just models`, then set \
             knowledge.embedding_model_dir or models.local_dir)",
        ));
    };
    let principal = &caller.0;
    let format = body.encoding_format.unwrap_or_default();
    let embedded = service
        .embed(
            &EmbeddingCaller {
                organization: principal.organization_id.clone(),
                principal: principal.subject.clone(),
                kind: principal.kind,
            },
            EmbeddingRequest {
                model: body.model.clone(),
                texts: match body.input {
                    EmbeddingInput::One(text) => vec![text],
                    EmbeddingInput::Many(texts) => texts,
                },
                dimensions: body.dimensions,
            },
        )
        .await
        .map_err(|error| match error {
            EmbeddingError::UnknownModel(model) => model_not_found(&model),
            other => DomainError::from(other).into(),
        })?;
    Ok(web::Json(EmbeddingList {
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
    }))
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
