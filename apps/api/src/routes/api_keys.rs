//! Long-lived API keys (`tsk_…`) of the caller's organization: create (the secret is shown
//! once), list, read and revoke. A key is accepted as `Authorization: Bearer tsk_…` wherever
//! an access token is, with its own scopes (decision 0024). Its bodies are
//! `tessera_wire::v1::api_keys`.

use actix_web::{HttpResponse, delete, get, http::header, post, web};
use tessera_identity::{ApiKeyId, Credential, NewApiKey};
use tessera_kernel::DomainError;
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::v1::api_keys::{ApiKeyOut, ApiKeyPage, CreateApiKey};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    routes::credential_limits::{asked_with, limit_new},
    state::AppState,
};
use tessera_wire::parse::{page_limit, path_id};

fn api_key_id(text: &str) -> Result<ApiKeyId, DomainError> {
    path_id(text, "API key")
}

/// Create an API key; the answer holds its secret, shown only this once.
#[utoipa::path(
    tag = "API keys",
    operation_id = "createApiKey",
    request_body = CreateApiKey,
    responses(
        (status = 201, description = "Created; `secret` is shown only now", body = ApiKeyOut),
        (status = 422, description = "Invalid request: an empty name, an unknown scope, a scope the caller does not hold (`scope_not_held`), `expiresAt` not in the future, or invalid `limits`", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/api-keys")]
pub async fn create_api_key(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateApiKey>,
) -> Result<HttpResponse, ApiError> {
    let new = NewApiKey {
        name: body.name,
        scopes: body.scopes,
        expires_at: body.expires_at,
    };
    let limits = asked_with(body.limits)?;
    let (key, secret) = state
        .api_keys
        .create(caller.principal(), new)
        .await
        .map_err(DomainError::from)?;
    limit_new(&state, &caller, Credential::ApiKey(key.id.clone()), limits).await?;
    let location = format!("/v1/api-keys/{}", key.id);
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(ApiKeyOut::from(key, Some(secret.expose().to_owned()))))
}

/// List the organization's API keys (revoked ones are gone), oldest first.
#[utoipa::path(
    tag = "API keys",
    operation_id = "listApiKeys",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of API keys", body = ApiKeyPage),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/api-keys")]
pub async fn list_api_keys(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<ApiKeyPage>, ApiError> {
    let limit = page_limit(query.limit)?;
    let page = state
        .api_keys
        .list(caller.organization(), limit, query.cursor.as_deref())
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(PageOf::of(page, |key| {
        ApiKeyOut::from(key, None)
    })))
}

/// One API key of the organization, with when it was last used.
#[utoipa::path(
    tag = "API keys",
    operation_id = "getApiKey",
    params(("api_key_id" = String, Path, description = "The API key id (`key_…`)")),
    responses(
        (status = 200, description = "The API key", body = ApiKeyOut),
        (status = 404, description = "No such API key in this organization (or it was revoked)", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/api-keys/{api_key_id}")]
pub async fn get_api_key(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ApiKeyOut>, ApiError> {
    let id = api_key_id(&path)?;
    let key = state
        .api_keys
        .get(caller.organization(), &id)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(ApiKeyOut::from(key, None)))
}

/// Revoke the API key: the next request that presents it, on any replica, is refused.
#[utoipa::path(
    tag = "API keys",
    operation_id = "revokeApiKey",
    params(("api_key_id" = String, Path, description = "The API key id (`key_…`)")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 403, description = "The caller lacks `org:admin`, or the key holds a scope the caller does not (`scope_not_held`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such API key in this organization (or it was revoked already)", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/api-keys/{api_key_id}")]
pub async fn revoke_api_key(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = api_key_id(&path)?;
    state
        .api_keys
        .revoke(caller.organization(), &id, caller.actor())
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}
