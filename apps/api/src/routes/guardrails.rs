//! Guardrail policies of the caller's organization (decision 0061): the organization's own
//! policy, checked on every completion, and each model's, refining it for that model's
//! completions. Its bodies are `tessera_wire::v1::guardrails`.

use actix_web::{HttpResponse, delete, get, put, web};
use tessera_guardrails::PolicyScope;
use tessera_wire::v1::guardrails::{GuardrailPolicyIn, GuardrailPolicyList, GuardrailPolicyOut};

use crate::{
    caller::Caller,
    extract::ValidJson,
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};

fn model(path: web::Path<String>) -> PolicyScope {
    PolicyScope::Model(path.into_inner())
}

/// The organization's guardrail policy.
#[utoipa::path(
    tag = "Guardrails",
    operation_id = "getGuardrailPolicy",
    responses(
        (status = 200, description = "The organization's policy", body = GuardrailPolicyOut),
        (status = 404, description = "The organization has no policy", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/guardrails")]
pub async fn get_policy(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<GuardrailPolicyOut>, ApiError> {
    let policy = state
        .guardrails
        .get(caller.organization(), &PolicyScope::Organization)
        .await?;
    Ok(web::Json(policy.into()))
}

/// Set the organization's guardrail policy (replacing any); it applies to every completion
/// from the next one on (within 30 s on other replicas).
#[utoipa::path(
    tag = "Guardrails",
    operation_id = "putGuardrailPolicy",
    request_body = GuardrailPolicyIn,
    responses(
        (status = 200, description = "Stored", body = GuardrailPolicyOut),
        (status = 422, description = "Invalid rule, pattern, kind, limit or hook", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[put("/v1/guardrails")]
pub async fn put_policy(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<GuardrailPolicyIn>,
) -> Result<web::Json<GuardrailPolicyOut>, ApiError> {
    let policy = state
        .guardrails
        .put(
            caller.organization(),
            caller.actor(),
            PolicyScope::Organization,
            body.into(),
        )
        .await?;
    Ok(web::Json(policy.into()))
}

/// Remove the organization's guardrail policy (models' policies stay).
#[utoipa::path(
    tag = "Guardrails",
    operation_id = "deleteGuardrailPolicy",
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "The organization has no policy", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/guardrails")]
pub async fn delete_policy(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    state
        .guardrails
        .delete(
            caller.organization(),
            caller.actor(),
            &PolicyScope::Organization,
        )
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The organization's models' guardrail policies, by model id.
#[utoipa::path(
    tag = "Guardrails",
    operation_id = "listModelGuardrailPolicies",
    responses(
        (status = 200, description = "The model policies", body = GuardrailPolicyList)
    )
)]
#[get("/v1/guardrails/models")]
pub async fn list_model_policies(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<GuardrailPolicyList>, ApiError> {
    let policies = state.guardrails.list_models(caller.organization()).await?;
    Ok(web::Json(
        policies.into_iter().map(GuardrailPolicyOut::from).collect(),
    ))
}

/// A model's guardrail policy.
#[utoipa::path(
    tag = "Guardrails",
    operation_id = "getModelGuardrailPolicy",
    params(("model" = String, Path, description = "A catalog model's id or one of the organization's models")),
    responses(
        (status = 200, description = "The model's policy", body = GuardrailPolicyOut),
        (status = 404, description = "The model has no policy in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/guardrails/models/{model:.+}")]
pub async fn get_model_policy(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<GuardrailPolicyOut>, ApiError> {
    let policy = state
        .guardrails
        .get(caller.organization(), &model(path))
        .await?;
    Ok(web::Json(policy.into()))
}

/// Set a model's guardrail policy (replacing any): it refines the organization's for that
/// model's completions (its rules replace the organization's of the same id, allow lists add
/// up, the smaller size limit applies, its hook replaces the organization's).
#[utoipa::path(
    tag = "Guardrails",
    operation_id = "putModelGuardrailPolicy",
    params(("model" = String, Path, description = "A catalog model's id or one of the organization's models")),
    request_body = GuardrailPolicyIn,
    responses(
        (status = 200, description = "Stored", body = GuardrailPolicyOut),
        (status = 404, description = "No such model for this organization", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid rule, pattern, kind, limit or hook", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[put("/v1/guardrails/models/{model:.+}")]
pub async fn put_model_policy(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<GuardrailPolicyIn>,
) -> Result<web::Json<GuardrailPolicyOut>, ApiError> {
    let policy = state
        .guardrails
        .put(
            caller.organization(),
            caller.actor(),
            model(path),
            body.into(),
        )
        .await?;
    Ok(web::Json(policy.into()))
}

/// Remove a model's guardrail policy (possible after the model itself was deleted).
#[utoipa::path(
    tag = "Guardrails",
    operation_id = "deleteModelGuardrailPolicy",
    params(("model" = String, Path, description = "A catalog model's id or one of the organization's models")),
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "The model has no policy in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/guardrails/models/{model:.+}")]
pub async fn delete_model_policy(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .guardrails
        .delete(caller.organization(), caller.actor(), &model(path))
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
