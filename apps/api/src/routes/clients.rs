//! API clients of the caller's organization: the dashboard's way to create, list, rotate and
//! revoke machine credentials (the admin CLI offers the same for operators). Its bodies are
//! `tessera_wire::v1::clients`.

use actix_web::{HttpResponse, delete, get, http::header, post, web};
use tessera_identity::{ClientId, ClientName, Credential, NewClient};
use tessera_kernel::{DomainError, FieldError, Scope, ScopeSet};
use tessera_wire::page::{PageOf, PageQuery};
use tessera_wire::v1::clients::{ClientOut, ClientPage, CreateClient};

use crate::{
    caller::Caller,
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    routes::credential_limits::{asked_with, limit_new},
    state::AppState,
};
use tessera_wire::parse::{page_limit, path_id};

fn client_id(text: &str) -> Result<ClientId, DomainError> {
    path_id(text, "client")
}

/// Create an API client; the answer holds its secret, shown only this once.
#[utoipa::path(
    tag = "Clients",
    operation_id = "createClient",
    request_body = CreateClient,
    responses(
        (status = 201, description = "Created; `clientSecret` is shown only now", body = ClientOut),
        (status = 403, description = "The caller lacks `org:admin` or a requested scope", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request (a name, a scope, or `limits`)", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[post("/v1/clients")]
pub async fn create_client(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CreateClient>,
) -> Result<HttpResponse, ApiError> {
    let mut scopes = Vec::new();
    let mut invalid = Vec::new();
    for (index, text) in body.scopes.iter().enumerate() {
        match text.parse::<Scope>() {
            Ok(scope) => scopes.push(scope),
            Err(e) => invalid.push(FieldError::new(
                ["body".into(), "scopes".into(), index.into()],
                e.to_string(),
                "invalid_scope",
            )),
        }
    }
    if !invalid.is_empty() {
        return Err(ApiError::validation(invalid));
    }
    let name = ClientName::parse(&body.name).map_err(|e| {
        DomainError::invalid(["body".into(), "name".into()], e.to_string(), "value_error")
    })?;
    let new = NewClient {
        organization_id: caller.organization().clone(),
        name,
        scopes: scopes.into_iter().collect::<ScopeSet>(),
    };
    let limits = asked_with(body.limits)?;
    let (client, secret) = state
        .identity
        .create_client_by(caller.principal(), new)
        .await
        .map_err(DomainError::from)?;
    limit_new(
        &state,
        &caller,
        Credential::Client(client.id.clone()),
        limits,
    )
    .await?;
    let location = format!("/v1/clients/{}", client.id);
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(ClientOut::from(client, Some(secret.expose().to_owned()))))
}

/// List the organization's API clients, oldest first.
#[utoipa::path(
    tag = "Clients",
    operation_id = "listClients",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of clients", body = ClientPage),
        (status = 422, description = "Invalid limit or cursor", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/clients")]
pub async fn list_clients(
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<PageQuery>,
) -> Result<web::Json<ClientPage>, ApiError> {
    let limit = page_limit(query.limit)?;
    let page = state
        .identity
        .list(caller.organization(), limit, query.cursor.as_deref())
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(PageOf::of(page, |c| ClientOut::from(c, None))))
}

/// One API client of the organization.
#[utoipa::path(
    tag = "Clients",
    operation_id = "getClient",
    params(("client_id" = String, Path, description = "The client id")),
    responses(
        (status = 200, description = "The client", body = ClientOut),
        (status = 404, description = "No such client in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/clients/{client_id}")]
pub async fn get_client(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ClientOut>, ApiError> {
    let id = client_id(&path)?;
    let client = state
        .identity
        .get(caller.organization(), &id)
        .await
        .map_err(DomainError::from)?;
    Ok(web::Json(ClientOut::from(client, None)))
}

/// Replace the client's secret; tokens issued under the old one stop working at once.
#[utoipa::path(
    tag = "Clients",
    operation_id = "rotateClientSecret",
    params(("client_id" = String, Path, description = "The client id")),
    responses(
        (status = 200, description = "Rotated; `clientSecret` is shown only now", body = ClientOut),
        (status = 403, description = "The caller lacks `org:admin`, or the client holds a scope the caller does not (`scope_not_held`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such active client in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[post("/v1/clients/{client_id}/rotate")]
pub async fn rotate_client(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = client_id(&path)?;
    let organization = caller.organization();
    let secret = state
        .identity
        .rotate_secret(organization, &id, caller.actor())
        .await
        .map_err(DomainError::from)?;
    let client = state
        .identity
        .get(organization, &id)
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(ClientOut::from(client, Some(secret.expose().to_owned()))))
}

/// Revoke the client and every token it holds.
#[utoipa::path(
    tag = "Clients",
    operation_id = "revokeClient",
    params(("client_id" = String, Path, description = "The client id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 403, description = "The caller lacks `org:admin`, or the client holds a scope the caller does not (`scope_not_held`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such active client in this organization", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/clients/{client_id}")]
pub async fn revoke_client(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = client_id(&path)?;
    state
        .identity
        .revoke(caller.organization(), &id, caller.actor())
        .await
        .map_err(DomainError::from)?;
    Ok(HttpResponse::NoContent().finish())
}
