//! The OAuth 2.0 token endpoint (client credentials grant, RFC 6749 §4.4) and the discovery
//! documents: the JSON Web Key Set and the OpenID provider metadata. Its bodies are
//! `tessera_wire::v1::oauth`.

use actix_web::{HttpRequest, HttpResponse, get, http::header, post, web};
use base64::{Engine, engine::general_purpose::STANDARD};
use tessera_identity::{ClientSecret, IdentityError};
use tessera_kernel::Scope;
use tessera_wire::v1::oauth::{OAuthError, TokenRequest, TokenResponse};

use crate::{problem::ProblemKind, state::AppState};

/// An OAuth error (RFC 6749 §5.2, which fixes its own body) that is a problem as well: the
/// catalogue's kind decides its status and title.
fn oauth_error(
    kind: ProblemKind,
    error: &'static str,
    description: impl Into<String>,
) -> HttpResponse {
    let description = description.into();
    let body = OAuthError {
        error,
        error_description: description.clone(),
        kind: format!("urn:tessera:problem:{error}"),
        title: kind.title().to_owned(),
        status: kind.status().as_u16(),
        detail: description,
        code: error,
    };
    let mut response = HttpResponse::build(kind.status());
    response.insert_header((header::CACHE_CONTROL, "no-store"));
    if kind == ProblemKind::Unauthenticated {
        response.insert_header((header::WWW_AUTHENTICATE, r#"Basic realm="tessera""#));
    }
    response.json(body)
}

/// The request body; the error is the `invalid_request` description.
fn parse_request(req: &HttpRequest, body: &[u8]) -> Result<TokenRequest, String> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/x-www-form-urlencoded" => {
            serde_urlencoded::from_bytes::<TokenRequest>(body).map_err(|e| e.to_string())
        }
        "application/json" => {
            serde_json::from_slice::<TokenRequest>(body).map_err(|e| e.to_string())
        }
        "" if body.is_empty() => Ok(TokenRequest::default()),
        other => Err(format!(
            "unsupported content type `{other}`; send application/x-www-form-urlencoded or application/json"
        )),
    }
}

/// `Authorization: Basic base64(client_id:client_secret)`, each part form-url-encoded.
fn basic_credentials(req: &HttpRequest) -> Option<(String, String)> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    let decode = |s: &str| {
        form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    Some((decode(id)?, decode(secret)?))
}

async fn issue(req: HttpRequest, body: web::Bytes, state: web::Data<AppState>) -> HttpResponse {
    let request = match parse_request(&req, &body) {
        Ok(request) => request,
        Err(message) => return oauth_error(ProblemKind::BadRequest, "invalid_request", message),
    };
    match request.grant_type.as_deref() {
        Some("client_credentials") => {}
        Some(other) => {
            return oauth_error(
                ProblemKind::BadRequest,
                "unsupported_grant_type",
                format!("grant type `{other}` is not supported; use client_credentials"),
            );
        }
        None => {
            return oauth_error(
                ProblemKind::BadRequest,
                "invalid_request",
                "grant_type is required",
            );
        }
    }
    let (client_id, client_secret) = match (
        basic_credentials(&req),
        request.client_id,
        request.client_secret,
    ) {
        (Some(_), Some(_), Some(_)) => {
            return oauth_error(
                ProblemKind::BadRequest,
                "invalid_request",
                "use one client authentication method, not both",
            );
        }
        (Some(basic), _, _) => basic,
        (None, Some(id), Some(secret)) => (id, secret),
        _ => {
            return oauth_error(
                ProblemKind::Unauthenticated,
                "invalid_client",
                "client_id and client_secret are required",
            );
        }
    };
    match state
        .identity
        .issue_token_from(
            &client_id,
            &ClientSecret::presented(client_secret),
            request.scope.as_deref(),
            &crate::origin::origin_of(&req),
        )
        .await
    {
        Ok(issued) => HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .insert_header((header::PRAGMA, "no-cache"))
            .json(TokenResponse {
                access_token: issued.access_token,
                token_type: "bearer",
                expires_in: issued.expires_in,
                scope: issued.scope.to_string(),
            }),
        Err(IdentityError::InvalidClient) => oauth_error(
            ProblemKind::Unauthenticated,
            "invalid_client",
            "client authentication failed",
        ),
        Err(IdentityError::InvalidScope(message)) => {
            oauth_error(ProblemKind::BadRequest, "invalid_scope", message)
        }
        Err(error) => {
            tracing::warn!(%error, "token request failed");
            oauth_error(
                ProblemKind::Unavailable,
                "temporarily_unavailable",
                "tokens cannot be issued right now; retry later",
            )
        }
    }
}

/// Issue an access token (client credentials grant).
#[utoipa::path(
    tag = "Authentication",
    operation_id = "issueToken",
    request_body(content(
        (TokenRequest = "application/x-www-form-urlencoded"),
        (TokenRequest = "application/json")
    )),
    responses(
        (status = 200, description = "The token", body = TokenResponse),
        (status = 400, description = "Invalid request, grant type or scope", body = OAuthError),
        (status = 401, description = "Client authentication failed", body = OAuthError)
    )
)]
#[post("/v1/oauth2/token")]
pub async fn token(req: HttpRequest, body: web::Bytes, state: web::Data<AppState>) -> HttpResponse {
    issue(req, body, state).await
}

/// Issue an access token (the address named by the security declaration; same as `/v1/oauth2/token`).
#[utoipa::path(
    tag = "Authentication",
    operation_id = "issueTokenOAuth",
    request_body(content(
        (TokenRequest = "application/x-www-form-urlencoded"),
        (TokenRequest = "application/json")
    )),
    responses(
        (status = 200, description = "The token", body = TokenResponse),
        (status = 400, description = "Invalid request, grant type or scope", body = OAuthError),
        (status = 401, description = "Client authentication failed", body = OAuthError)
    )
)]
#[post("/oauth/token")]
pub async fn token_oauth(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    issue(req, body, state).await
}

/// The public keys that verify access tokens (JWKS).
#[utoipa::path(tag = "Authentication", operation_id = "jwks", responses((status = 200, description = "JSON Web Key Set", body = Object)))]
#[get("/.well-known/jwks.json")]
pub async fn jwks(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .json(state.keys.jwks())
}

/// Authorization server metadata (OpenID Connect discovery).
#[utoipa::path(tag = "Authentication", operation_id = "openidConfiguration", responses((status = 200, description = "Provider metadata", body = Object)))]
#[get("/.well-known/openid-configuration")]
pub async fn openid_configuration(state: web::Data<AppState>) -> HttpResponse {
    let issuer = &state.issuer;
    let scopes: Vec<String> = Scope::all().iter().map(ToString::to_string).collect();
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .json(serde_json::json!({
            "issuer": issuer,
            "token_endpoint": format!("{issuer}/oauth/token"),
            "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "response_types_supported": ["token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["EdDSA"],
            "token_endpoint_auth_signing_alg_values_supported": ["EdDSA"],
            "scopes_supported": scopes,
        }))
}
