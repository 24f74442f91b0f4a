//! Response cache policies of the caller's organization's models: a model opted in has its
//! completions answered from earlier answers to the same request (or, with semantic
//! matching, to a question close in meaning), within its time to live and up to its
//! highest temperature. Its bodies are `tessera_wire::v1::response_cache`.

use actix_web::{HttpResponse, delete, get, put, web};
use tessera_wire::v1::response_cache::{
    ResponseCachePolicyIn, ResponseCachePolicyList, ResponseCachePolicyOut,
};

use crate::{
    caller::Caller,
    extract::ValidJson,
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};

/// The organization's models' response cache policies, by model id.
#[utoipa::path(
    tag = "Response cache",
    operation_id = "listResponseCachePolicies",
    responses(
        (status = 200, description = "The models' policies", body = ResponseCachePolicyList)
    )
)]
#[get("/v1/response-cache/models")]
pub async fn list_policies(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<ResponseCachePolicyList>, ApiError> {
    let policies = state.cache_policies.list(caller.organization()).await?;
    Ok(web::Json(
        policies
            .into_iter()
            .map(ResponseCachePolicyOut::from)
            .collect(),
    ))
}

/// A model's response cache policy.
#[utoipa::path(
    tag = "Response cache",
    operation_id = "getResponseCachePolicy",
    params(("model" = String, Path, description = "A catalog model's id or one of the organization's models")),
    responses(
        (status = 200, description = "The model's policy", body = ResponseCachePolicyOut),
        (status = 404, description = "The model has no policy in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/response-cache/models/{model:.+}")]
pub async fn get_policy(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ResponseCachePolicyOut>, ApiError> {
    let policy = state
        .cache_policies
        .get(caller.organization(), &path.into_inner())
        .await?;
    Ok(web::Json(policy.into()))
}

/// Opt a model in to the response cache, or change its policy (replacing it whole): from the
/// next completion on (within 30 s on other replicas), its answers are kept and served.
#[utoipa::path(
    tag = "Response cache",
    operation_id = "putResponseCachePolicy",
    params(("model" = String, Path, description = "A catalog model's id or one of the organization's models")),
    request_body = ResponseCachePolicyIn,
    responses(
        (status = 200, description = "Stored", body = ResponseCachePolicyOut),
        (status = 404, description = "No such model for this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A value out of bounds or an unknown field", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[put("/v1/response-cache/models/{model:.+}")]
pub async fn put_policy(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<ResponseCachePolicyIn>,
) -> Result<web::Json<ResponseCachePolicyOut>, ApiError> {
    let policy = state
        .cache_policies
        .put(
            caller.organization(),
            caller.actor(),
            &path.into_inner(),
            body.into(),
        )
        .await?;
    Ok(web::Json(policy.into()))
}

/// Opt a model out of the response cache (possible after the model itself was deleted);
/// its cached answers are no longer served.
#[utoipa::path(
    tag = "Response cache",
    operation_id = "deleteResponseCachePolicy",
    params(("model" = String, Path, description = "A catalog model's id or one of the organization's models")),
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "The model has no policy in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/response-cache/models/{model:.+}")]
pub async fn delete_policy(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .cache_policies
        .delete(caller.organization(), caller.actor(), &path.into_inner())
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
