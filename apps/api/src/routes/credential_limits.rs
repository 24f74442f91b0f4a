//! The limits of the organization's API keys and clients: a credit budget per UTC day, week
//! or month, and an allow-list of models (decision 0062). Read, replaced whole (`PUT`) and
//! lifted (`DELETE`) under `/v1/api-keys/{id}/limits` and `/v1/clients/{id}/limits`; every
//! completion of the credential is admitted against them, and the model lists it is shown
//! are narrowed to its allow-list ([`nameable_models`]). Its bodies are
//! `tessera_wire::v1::credential_limits`.

use std::collections::BTreeSet;

use actix_web::{HttpResponse, delete, get, put, web};
use tessera_identity::{ApiKeyId, ClientId, Credential, CredentialLimits, NewCredentialLimits};
use tessera_kernel::DomainError;
use tessera_models::NameableModels;
use tessera_usage::Spender;
use tessera_wire::parse::path_id;
use tessera_wire::v1::credential_limits::{CredentialLimitsIn, CredentialLimitsOut, Spent};

use crate::{
    caller::Caller,
    extract::ValidJson,
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};

fn api_key(text: &str) -> Result<Credential, DomainError> {
    path_id::<ApiKeyId>(text, "API key").map(Credential::ApiKey)
}

fn client(text: &str) -> Result<Credential, DomainError> {
    path_id::<ClientId>(text, "client").map(Credential::Client)
}

/// The limits as answered: with what the credential has spent of its budget this period.
async fn answer(
    state: &AppState,
    credential: &Credential,
    limits: Option<CredentialLimits>,
) -> Result<web::Json<CredentialLimitsOut>, ApiError> {
    let spent = match limits
        .as_ref()
        .and_then(|limits| limits.budget.map(|b| (limits, b)))
    {
        Some((limits, budget)) => {
            let spender = Spender {
                organization: limits.organization_id.clone(),
                principal: Some(limits.credential.clone()),
            };
            let status = (state.budgets)
                .spent_of(&spender, budget.period, budget.credits)
                .await?;
            Some(Spent {
                used_credits: status.used,
                resets_at: status.resets_at,
            })
        }
        None => None,
    };
    Ok(web::Json(CredentialLimitsOut::of(
        credential.as_str(),
        limits,
        spent,
    )))
}

async fn read(
    caller: &Caller,
    state: &AppState,
    credential: Credential,
) -> Result<web::Json<CredentialLimitsOut>, ApiError> {
    let limits = state
        .credential_limits
        .get(caller.organization(), &credential)
        .await
        .map_err(DomainError::from)?;
    answer(state, &credential, limits).await
}

async fn set(
    caller: &Caller,
    state: &AppState,
    credential: Credential,
    body: CredentialLimitsIn,
) -> Result<web::Json<CredentialLimitsOut>, ApiError> {
    let limits = state
        .credential_limits
        .set(
            caller.organization(),
            &credential,
            body.into(),
            caller.actor(),
        )
        .await
        .map_err(DomainError::from)?;
    answer(state, &credential, Some(limits)).await
}

async fn clear(
    caller: &Caller,
    state: &AppState,
    credential: Credential,
) -> Result<HttpResponse, ApiError> {
    state
        .credential_limits
        .clear(caller.organization(), &credential, caller.actor())
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}

/// An API key's limits (both `null` when none are set).
#[utoipa::path(
    tag = "API keys",
    operation_id = "getApiKeyLimits",
    params(("api_key_id" = String, Path, description = "The API key id (`key_…`)")),
    responses(
        (status = 200, description = "The key's limits", body = CredentialLimitsOut),
        (status = 404, description = "No such API key in this organization (or it was revoked)", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/api-keys/{api_key_id}/limits")]
pub async fn get_api_key_limits(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<CredentialLimitsOut>, ApiError> {
    read(&caller, &state, api_key(&path)?).await
}

/// Set an API key's budget and model allow-list, replacing any earlier ones; its next
/// completion is admitted against them.
#[utoipa::path(
    tag = "API keys",
    operation_id = "putApiKeyLimits",
    params(("api_key_id" = String, Path, description = "The API key id (`key_…`)")),
    request_body = CredentialLimitsIn,
    responses(
        (status = 200, description = "Set", body = CredentialLimitsOut),
        (status = 403, description = "The caller lacks `org:admin`, or the key holds a scope the caller does not (`scope_not_held`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such API key in this organization (or it was revoked)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid model ids, credits, period or `onSpent`", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[put("/v1/api-keys/{api_key_id}/limits")]
pub async fn put_api_key_limits(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<CredentialLimitsIn>,
) -> Result<web::Json<CredentialLimitsOut>, ApiError> {
    set(&caller, &state, api_key(&path)?, body).await
}

/// Lift an API key's limits: it may use every model of its organization, without a budget
/// of its own.
#[utoipa::path(
    tag = "API keys",
    operation_id = "deleteApiKeyLimits",
    params(("api_key_id" = String, Path, description = "The API key id (`key_…`)")),
    responses(
        (status = 204, description = "Lifted (or there were none)"),
        (status = 403, description = "The caller lacks `org:admin`, or the key holds a scope the caller does not (`scope_not_held`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such API key in this organization (or it was revoked)", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/api-keys/{api_key_id}/limits")]
pub async fn delete_api_key_limits(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    clear(&caller, &state, api_key(&path)?).await
}

/// A client's limits (both `null` when none are set).
#[utoipa::path(
    tag = "Clients",
    operation_id = "getClientLimits",
    params(("client_id" = String, Path, description = "The client id (`cli_…`)")),
    responses(
        (status = 200, description = "The client's limits", body = CredentialLimitsOut),
        (status = 404, description = "No such client in this organization (or it was revoked)", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/clients/{client_id}/limits")]
pub async fn get_client_limits(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<CredentialLimitsOut>, ApiError> {
    read(&caller, &state, client(&path)?).await
}

/// Set a client's budget and model allow-list, replacing any earlier ones; the next
/// completion of any of its tokens is admitted against them.
#[utoipa::path(
    tag = "Clients",
    operation_id = "putClientLimits",
    params(("client_id" = String, Path, description = "The client id (`cli_…`)")),
    request_body = CredentialLimitsIn,
    responses(
        (status = 200, description = "Set", body = CredentialLimitsOut),
        (status = 403, description = "The caller lacks `org:admin`, or the client holds a scope the caller does not (`scope_not_held`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such client in this organization (or it was revoked)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid model ids, credits, period or `onSpent`", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[put("/v1/clients/{client_id}/limits")]
pub async fn put_client_limits(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<CredentialLimitsIn>,
) -> Result<web::Json<CredentialLimitsOut>, ApiError> {
    set(&caller, &state, client(&path)?, body).await
}

/// Lift a client's limits: it may use every model of its organization, without a budget of
/// its own.
#[utoipa::path(
    tag = "Clients",
    operation_id = "deleteClientLimits",
    params(("client_id" = String, Path, description = "The client id (`cli_…`)")),
    responses(
        (status = 204, description = "Lifted (or there were none)"),
        (status = 403, description = "The caller lacks `org:admin`, or the client holds a scope the caller does not (`scope_not_held`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such client in this organization (or it was revoked)", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/clients/{client_id}/limits")]
pub async fn delete_client_limits(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    clear(&caller, &state, client(&path)?).await
}

/// The limits a new credential is asked with (`limits` in its creation's body), checked
/// before the credential is created (problems located under `body.limits`).
pub fn asked_with(
    limits: Option<CredentialLimitsIn>,
) -> Result<Option<NewCredentialLimits>, ApiError> {
    let Some(limits) = limits.map(NewCredentialLimits::from) else {
        return Ok(None);
    };
    (limits.clone())
        .check_under(&["body".into(), "limits".into()])
        .map_err(DomainError::Validation)?;
    Ok(Some(limits))
}

/// Sets the limits a new credential was asked with. Should that fail, the credential is
/// revoked: one without the limits it was asked with is never handed out.
pub async fn limit_new(
    state: &AppState,
    caller: &Caller,
    credential: Credential,
    limits: Option<NewCredentialLimits>,
) -> Result<(), ApiError> {
    let Some(limits) = limits else {
        return Ok(());
    };
    let organization = caller.organization();
    let set = (state.credential_limits)
        .set(organization, &credential, limits, caller.actor())
        .await;
    let Err(error) = set else {
        return Ok(());
    };
    let _ = match &credential {
        Credential::ApiKey(id) => {
            (state.api_keys)
                .revoke(organization, id, caller.actor())
                .await
        }
        Credential::Client(id) => {
            (state.identity)
                .revoke(organization, id, caller.actor())
                .await
        }
    };
    Err(DomainError::from(error).into())
}

/// The models the caller may name: every model its organization may use, narrowed by its
/// credential's allow-list (the model lists of every dialect show these), and that
/// allow-list (`None`: every model).
pub async fn nameable_models(
    state: &AppState,
    caller: &Caller,
) -> Result<(NameableModels, Option<BTreeSet<String>>), ApiError> {
    let mut nameable = state
        .models
        .nameable(caller.organization())
        .await
        .map_err(DomainError::from)?;
    let allowed = allowed_models(state, caller).await?;
    if let Some(allowed) = &allowed {
        nameable
            .base
            .retain(|base| allowed.contains(base.id.as_str()));
        nameable
            .own
            .retain(|own| allowed.contains(own.model.id.as_str()));
    }
    Ok((nameable, allowed))
}

/// The model ids the caller's credential may name; `None`: every model.
pub async fn allowed_models(
    state: &AppState,
    caller: &Caller,
) -> Result<Option<BTreeSet<String>>, ApiError> {
    Ok(state
        .credential_limits
        .of_caller(caller)
        .await?
        .and_then(|limits| limits.models))
}
