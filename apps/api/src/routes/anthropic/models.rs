//! `GET /anthropic/v1/models` and `/anthropic/v1/models/{model}`: the models a message may
//! name (the usable catalog models and the organization's own, narrowed to the caller's
//! credential's allow-list), in Anthropic's model object
//! shape, paged by `after_id`/`before_id` as Anthropic's clients page.

use actix_web::{get, web};
use tessera_kernel::DomainError;
use tessera_models::ModelId;
use tessera_wire::anthropic::{
    error::AnthropicError,
    models::{AnthropicModel, AnthropicModelList, ListModelsQuery},
};

use crate::{
    caller::Caller,
    extract::ValidQuery,
    problem::ApiError,
    routes::{
        credential_limits::{allowed_models, nameable_models},
        openai::models::model_not_found,
    },
    state::AppState,
};

/// Every model the caller may name in a message now.
async fn all_models(state: &AppState, caller: &Caller) -> Result<Vec<AnthropicModel>, ApiError> {
    let loaded = state.models.catalog_loaded_at();
    let (nameable, _) = nameable_models(state, caller).await?;
    let base = nameable
        .base
        .into_iter()
        .map(|base| AnthropicModel::of_base(base, loaded));
    let own = nameable.own.iter().map(AnthropicModel::of_user);
    Ok(base.chain(own).collect())
}

/// The models a message may name, a page at a time.
#[utoipa::path(
    tag = "Anthropic",
    operation_id = "anthropicListModels",
    params(ListModelsQuery),
    responses(
        (status = 200, description = "A page of models", body = AnthropicModelList),
        (status = 400, description = "An invalid `limit`, or an `after_id`/`before_id` that names no listed model (`invalid_request_error`)", body = AnthropicError)
    )
)]
#[get("/anthropic/v1/models")]
pub async fn list_models(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListModelsQuery>,
) -> Result<web::Json<AnthropicModelList>, ApiError> {
    let models = all_models(&state, &caller).await?;
    AnthropicModelList::page(models, &query)
        .map(web::Json)
        .ok_or_else(|| {
            ApiError::bad_request(
                "cursor_invalid",
                "`after_id` or `before_id` names no model of this list",
            )
        })
}

/// One model. Catalog ids contain a slash (`local/smollm2-135m-instruct`); the path takes
/// it as is.
#[utoipa::path(
    tag = "Anthropic",
    operation_id = "anthropicGetModel",
    params(("model" = String, Path, description = "A model id")),
    responses(
        (status = 200, description = "The model", body = AnthropicModel),
        (status = 404, description = "No such model (`not_found_error`)", body = AnthropicError)
    )
)]
#[get("/anthropic/v1/models/{model:.+}")]
pub async fn get_model(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<AnthropicModel>, ApiError> {
    // Anthropic's clients percent-encode the id as one path segment, its slash included;
    // the router leaves `%2F` encoded.
    let id = path.into_inner().replace("%2F", "/").replace("%2f", "/");
    let organization = caller.organization();
    if let Ok(model_id) = id.parse::<ModelId>() {
        let allowed = allowed_models(&state, &caller).await?;
        return state
            .models
            .nameable_own(organization, &model_id)
            .await
            .map_err(DomainError::from)?
            .filter(|_| allowed.is_none_or(|allowed| allowed.contains(&id)))
            .map(|view| web::Json(AnthropicModel::of_user(&view)))
            .ok_or_else(|| model_not_found(&id));
    }
    all_models(&state, &caller)
        .await?
        .into_iter()
        .find(|model| model.id == id)
        .map(web::Json)
        .ok_or_else(|| model_not_found(&id))
}
