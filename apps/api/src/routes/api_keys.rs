//! Long-lived API keys (`tsk_…`) of the caller's organization: create (the secret is shown
//! once), list, read and revoke. A key is accepted as `Authorization: Bearer tsk_…` wherever
//! an access token is, with its own scopes (decision 0024).

use actix_web::{HttpResponse, delete, get, http::header, post, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_identity::{ApiKey, ApiKeyId, NewApiKey};
use tessera_kernel::DomainError;
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::paged;
use utoipa::ToSchema;
use validator::Validate;

use crate::{
    access::Caller,
    extract::{ValidJson, ValidQuery, page_limit, path_id},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};

/// An API key (never its secret, except once in the answer that creates it).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyOut {
    #[schema(example = "key_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub organization_id: String,
    pub name: String,
    #[schema(example = json!(["chats:invoke", "models:read"]))]
    pub scopes: Vec<String>,
    /// When the key stops working; `null` for never.
    pub expires_at: Option<DateTime<Utc>>,
    /// When the key last authenticated a request (recorded at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The principal that created the key (a client id, a user's subject, a key id), or
    /// `tessera-admin` for keys an operator created.
    pub created_by: String,
    /// Present only in the answer that creates the key; store it now. Send it as
    /// `Authorization: Bearer tsk_…`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "tsk_…")]
    pub secret: Option<String>,
}

impl ApiKeyOut {
    fn from(key: ApiKey, secret: Option<String>) -> Self {
        Self {
            id: key.id.to_string(),
            organization_id: key.organization_id.to_string(),
            name: key.name,
            scopes: key.scopes.iter().map(ToString::to_string).collect(),
            expires_at: key.expires_at,
            last_used_at: key.last_used_at,
            created_at: key.created_at,
            created_by: key.created_by,
            secret,
        }
    }
}

paged!(ApiKeyOut => ApiKeyPage, "A page of API keys.");

/// What a new key is called, may do, and until when.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateApiKey {
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255, example = "support bot")]
    pub name: String,
    /// At least one scope; each must be held by the caller (no one grants more than they have).
    #[validate(length(min = 1, max = 64))]
    #[schema(min_items = 1, max_items = 64, example = json!(["chats:invoke", "models:read"]))]
    pub scopes: Vec<String>,
    /// When the key stops working (RFC 3339, in the future); absent for never.
    pub expires_at: Option<DateTime<Utc>>,
}

fn api_key_id(text: &str) -> Result<ApiKeyId, ApiError> {
    path_id(text, "API key")
}

/// Create an API key; the answer holds its secret, shown only this once.
#[utoipa::path(
    tag = "API keys",
    operation_id = "createApiKey",
    request_body = CreateApiKey,
    responses(
        (status = 201, description = "Created; `secret` is shown only now", body = ApiKeyOut),
        (status = 422, description = "Invalid request: an empty name, an unknown scope, a scope the caller does not hold (`scope_not_held`), or `expiresAt` not in the future", body = ValidationProblem, content_type = "application/problem+json")
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
    let (key, secret) = state
        .api_keys
        .create(&caller.0, new)
        .await
        .map_err(DomainError::from)?;
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
        .list(&caller.0.organization_id, limit, query.cursor.as_deref())
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
        .get(&caller.0.organization_id, &id)
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
        .revoke(&caller.0.organization_id, &id, &caller.actor())
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}
