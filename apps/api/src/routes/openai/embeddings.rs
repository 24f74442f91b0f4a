//! `POST /openai/v1/embeddings`: the configured embedding model (the embedded
//! all-MiniLM-L6-v2, or the embedding server) through the knowledge domain's
//! `EmbeddingService`, which records the usage; the shapes are `tessera_wire::openai::embeddings`.

use actix_web::{post, web};
use tessera_http_actix::problem::chat_error;
use tessera_kernel::DomainError;
use tessera_knowledge::EmbeddingError;
use tessera_wire::openai::{
    embeddings::{CreateEmbedding, EmbeddingList},
    error::OpenAiError,
};

use super::models::model_not_found;
use crate::{caller::Caller, extract::ValidJson, problem::ApiError, state::AppState};

/// Create embeddings in OpenAI's format.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateEmbeddings",
    request_body = CreateEmbedding,
    responses(
        (status = 200, description = "The embeddings", body = EmbeddingList),
        (status = 400, description = "Invalid input, token arrays, or `dimensions` the model cannot make", body = OpenAiError),
        (status = 403, description = "The credential's allow-list does not name the embedding model (`model_not_allowed`)", body = OpenAiError),
        (status = 429, description = "The organization's or the credential's credit budget is spent (`insufficient_quota`)", body = OpenAiError),
        (status = 404, description = "Not the embedding model (`model_not_found`)", body = OpenAiError),
        (status = 503, description = "No embedding model is loaded, or it is unavailable", body = OpenAiError)
    )
)]
#[post("/openai/v1/embeddings")]
pub async fn create_embeddings(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateEmbedding>,
) -> Result<web::Json<EmbeddingList>, ApiError> {
    Ok(web::Json(embed(&state, &caller, body).await?))
}

/// The embeddings of a request (also a batch's line).
pub async fn embed(
    state: &AppState,
    caller: &Caller,
    body: CreateEmbedding,
) -> Result<EmbeddingList, ApiError> {
    let Some(service) = &state.embeddings else {
        return Err(ApiError::unavailable(
            "embeddings_unavailable",
            "no embedding model is loaded on this instance (`just models`, then set \
             knowledge.embedding_model_dir or models.local_dir)",
        ));
    };
    let (request, format) = body.into_request();
    // Embeddings are billed in credits: admitted as a completion is (spent budgets refuse,
    // the credential's allow-list applies).
    (state.chats.admit(caller).await)
        .and_then(|admitted| admitted.may_use(&request.model))
        .map_err(chat_error)?;
    let embedded = service
        .embed(caller, request)
        .await
        .map_err(|error| match error {
            EmbeddingError::UnknownModel(model) => model_not_found(&model),
            other => DomainError::from(other).into(),
        })?;
    Ok(EmbeddingList::of(embedded, format))
}
