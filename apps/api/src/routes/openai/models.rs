//! `GET /openai/v1/models` and `/openai/v1/models/{model}`: the models a completion may name
//! (the usable catalog models and the organization's own, narrowed to the caller's
//! credential's allow-list), plus the embedding model, in OpenAI's model object shape.

use actix_web::{get, web};
use tessera_kernel::DomainError;
use tessera_models::ModelId;
use tessera_wire::openai::{
    error::OpenAiError,
    models::{OpenAiModel, OpenAiModelList},
    unix,
};

use crate::{
    caller::Caller,
    problem::ApiError,
    routes::credential_limits::{allowed_models, nameable_models},
    state::AppState,
};

/// Every model the caller may name now, with the embedding model.
async fn all_models(state: &AppState, caller: &Caller) -> Result<Vec<OpenAiModel>, ApiError> {
    let loaded = unix(state.models.catalog_loaded_at());
    let organization = caller.organization();
    let (nameable, allowed) = nameable_models(state, caller).await?;
    let base = nameable
        .base
        .into_iter()
        .map(|base| OpenAiModel::of_base(base, loaded));
    let own = nameable
        .own
        .iter()
        .map(|view| OpenAiModel::of_user(view, organization));
    let embeddings = (state.embeddings.as_ref())
        .map(|embeddings| embeddings.model())
        .filter(|model| {
            allowed
                .as_ref()
                .is_none_or(|allowed| allowed.contains(*model))
        })
        .map(|model| OpenAiModel::of_embeddings(model, loaded));
    Ok(base.chain(own).chain(embeddings).collect())
}

/// The models a completion (or an embedding) may name.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListModels",
    responses(
        (status = 200, description = "The models", body = OpenAiModelList)
    )
)]
#[get("/openai/v1/models")]
pub async fn list_models(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<OpenAiModelList>, ApiError> {
    let models = all_models(&state, &caller).await?;
    Ok(web::Json(OpenAiModelList::of(models)))
}

/// One model. Catalog ids contain a slash (`local/smollm2-135m-instruct`); the path takes
/// it as is.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiGetModel",
    params(("model" = String, Path, description = "A model id")),
    responses(
        (status = 200, description = "The model", body = OpenAiModel),
        (status = 404, description = "No such model (`model_not_found`)", body = OpenAiError)
    )
)]
#[get("/openai/v1/models/{model:.+}")]
pub async fn get_model(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<OpenAiModel>, ApiError> {
    let id = path.into_inner();
    let organization = caller.organization();
    // Only the organization's own models are read one by one; catalog models are few.
    if let Ok(model_id) = id.parse::<ModelId>() {
        let allowed = allowed_models(&state, &caller).await?;
        return state
            .models
            .nameable_own(organization, &model_id)
            .await
            .map_err(DomainError::from)?
            .filter(|_| allowed.is_none_or(|allowed| allowed.contains(&id)))
            .map(|view| web::Json(OpenAiModel::of_user(&view, organization)))
            .ok_or_else(|| model_not_found(&id));
    }
    all_models(&state, &caller)
        .await?
        .into_iter()
        .find(|model| model.id == id)
        .map(web::Json)
        .ok_or_else(|| model_not_found(&id))
}

/// 404 `model_not_found`, OpenAI's code for a model that does not exist or is not usable.
pub fn model_not_found(id: &str) -> ApiError {
    ApiError::not_found(
        "model_not_found",
        format!("the model `{id}` does not exist or you do not have access to it"),
    )
}
