//! Who may call what. The route table (`crate::routes::operations`) says, for every
//! documented operation, whether it is public, needs any valid token, or needs a scope; the
//! `authorize` middleware enforces it and `apply_to_openapi` writes it into the document's
//! `security` sections, so the two cannot disagree. A test walks the document and proves
//! every entry is enforced.

use actix_web::{
    Error, HttpMessage, HttpResponse,
    body::BoxBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header,
    middleware::Next,
    web,
};
use tessera_identity::{IdentityError, TokenError};
use tessera_kernel::Scope;

use crate::{
    problem::ApiError,
    routes::{Access, Operation, operations},
    state::AppState,
};

/// The one path parameter that takes the rest of the path: catalog model ids contain a
/// slash (`local/smollm2-135m-instruct`), and OpenAI clients put them in the path as is.
const REST_OF_PATH: &str = "{model}";

/// Whether a concrete path matches an OpenAPI template such as `/v1/files/{id}`.
pub fn path_matches(template: &str, path: &str) -> bool {
    let mut template = template.split('/');
    let mut path = path.split('/');
    loop {
        match (template.next(), path.next()) {
            (None, None) => return true,
            (Some(REST_OF_PATH), Some(p)) if !p.is_empty() => return template.next().is_none(),
            (Some(t), Some(p))
                if t == p || (t.starts_with('{') && t.ends_with('}') && !p.is_empty()) => {}
            _ => return false,
        }
    }
}

fn operation(method: &str, path: &str) -> Option<&'static Operation> {
    operations()
        .iter()
        .find(|operation| operation.method == method && path_matches(&operation.template, path))
}

/// The access rule for a request, when it targets a documented operation.
pub fn access_for(method: &str, path: &str) -> Option<Access> {
    operation(method, path).map(|operation| operation.access)
}

/// The span name (`{method} {template}`) of the documented operation a request targets
/// (known before routing, so a request's span can be named after it).
pub fn span_name_for(method: &str, path: &str) -> Option<&'static str> {
    operation(method, path).map(|operation| operation.span_name.as_str())
}

/// Writes each operation's requirement into the document: public operations get an empty
/// `security`, the others the bearer scheme with the scope they need.
pub fn apply_to_openapi(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{PathItem, security::SecurityRequirement};
    for (path, item) in document.paths.paths.iter_mut() {
        let PathItem {
            get,
            put,
            post,
            delete,
            patch,
            ..
        } = item;
        for (method, operation) in [
            ("GET", get),
            ("PUT", put),
            ("POST", post),
            ("DELETE", delete),
            ("PATCH", patch),
        ] {
            let Some(operation) = operation else { continue };
            let scopes: Vec<&str> = match access_for(method, path) {
                Some(Access::Public) => {
                    operation.security = Some(vec![]);
                    continue;
                }
                Some(Access::Scope(scope)) => vec![scope],
                // Undeclared operations are treated as needing a token (and a test fails).
                Some(Access::Authenticated) | None => vec![],
            };
            let mut requirements = vec![SecurityRequirement::new("bearer", scopes.clone())];
            // Anthropic's clients send the same credential as `x-api-key` (either will do).
            if path.starts_with(tessera_wire::anthropic::PREFIX) {
                requirements.push(SecurityRequirement::new(
                    crate::openapi::ANTHROPIC_API_KEY,
                    scopes,
                ));
            }
            operation.security = Some(requirements);
        }
    }
}

fn bearer_token(req: &ServiceRequest) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The credential a request presents: `Authorization: Bearer`, or on Anthropic's paths the
/// `x-api-key` header its clients send.
fn presented_token(req: &ServiceRequest) -> Option<&str> {
    bearer_token(req).or_else(|| {
        if !req.path().starts_with(tessera_wire::anthropic::PREFIX) {
            return None;
        }
        req.headers()
            .get(tessera_wire::anthropic::API_KEY_HEADER)?
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|t| !t.is_empty())
    })
}

/// A refused credential: the problem (kept on the response, so a dialect renders it from
/// the typed value) with its `WWW-Authenticate` challenge.
fn refusal(req: ServiceRequest, problem: ApiError, challenge: String) -> ServiceResponse<BoxBody> {
    let mut response = HttpResponse::from_error(problem);
    if let Ok(value) = challenge.parse() {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    req.into_response(response)
}

/// Authenticates the bearer token of every non-public documented operation and checks the
/// scope the route needs; the principal is left in the request for handlers (`Caller`).
pub async fn authorize(
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let access = match access_for(req.method().as_str(), req.path()) {
        None => return next.call(req).await,
        Some(Access::Public) if !limited_when_public(req.path()) => return next.call(req).await,
        Some(access) => access,
    };
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        let error = ApiError::internal("state missing");
        return Ok(req.into_response(HttpResponse::from_error(error)));
    };
    if access == Access::Public {
        // Token requests: a budget per peer address guards client secrets against guessing.
        let peer = req
            .peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default();
        return with_limit(req, next, state.limits.for_peer(&peer).await).await;
    }
    let Some(token) = presented_token(&req).map(str::to_owned) else {
        let detail = if req.path().starts_with(tessera_wire::anthropic::PREFIX) {
            "this operation needs `x-api-key: <API key>` or `Authorization: Bearer <access token or API key>`"
        } else {
            "this operation needs `Authorization: Bearer <access token or API key>`"
        }
        .to_owned();
        return Ok(refusal(
            req,
            ApiError::unauthenticated("missing_token", detail),
            r#"Bearer realm="tessera""#.to_owned(),
        ));
    };
    let origin = crate::origin::origin_of(req.request());
    let principal = match state.identity.authenticate_from(&token, &origin).await {
        Ok(principal) => principal,
        Err(IdentityError::InvalidToken(TokenError::Unavailable))
        | Err(IdentityError::Domain(_)) => {
            let error = ApiError::unavailable(
                "service_unavailable",
                "tokens cannot be checked right now; retry later",
            );
            return Ok(req.into_response(HttpResponse::from_error(error)));
        }
        Err(error) => {
            let detail = error.to_string();
            let challenge = format!(
                r#"Bearer realm="tessera", error="invalid_token", error_description="{detail}""#
            );
            return Ok(refusal(
                req,
                ApiError::unauthenticated("invalid_token", detail),
                challenge,
            ));
        }
    };
    if let Access::Scope(needed) = access {
        let allowed = needed
            .parse::<Scope>()
            .is_ok_and(|scope| principal.can(&scope));
        if !allowed {
            let detail = format!("this operation needs the `{needed}` scope");
            let challenge =
                format!(r#"Bearer realm="tessera", error="insufficient_scope", scope="{needed}""#);
            return Ok(refusal(
                req,
                ApiError::forbidden("insufficient_scope", detail),
                challenge,
            ));
        }
    }
    let decision = state.limits.for_principal(&principal).await;
    req.extensions_mut().insert(principal);
    with_limit(req, next, decision).await
}

/// Public operations that still draw from a budget (the token endpoints).
fn limited_when_public(path: &str) -> bool {
    path.ends_with("/token")
}

/// Refuses a request over its budget, or runs it and adds the `RateLimit-*` headers.
async fn with_limit(
    req: ServiceRequest,
    next: Next<BoxBody>,
    decision: Option<tessera_limits::Decision>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let Some(decision) = decision else {
        return next.call(req).await;
    };
    if !decision.allowed {
        tessera_metrics_prometheus::refused("rate_limit");
        return Ok(req.into_response(crate::rate_limit::refusal(&decision)));
    }
    let mut response = next.call(req).await?;
    crate::rate_limit::set_headers(response.headers_mut(), &decision);
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_concrete_paths() {
        assert!(path_matches("/v1/files/{id}", "/v1/files/abc"));
        assert!(!path_matches("/v1/files/{id}", "/v1/files/"));
        assert!(!path_matches("/v1/files/{id}", "/v1/files/abc/content"));
        assert!(path_matches("/v1/health", "/v1/health"));
        assert!(!path_matches("/v1/health", "/v1/health/ready"));
        assert!(path_matches(
            "/openai/v1/models/{model}",
            "/openai/v1/models/local/smollm2"
        ));
        assert!(!path_matches(
            "/openai/v1/models/{model}",
            "/openai/v1/models/"
        ));
    }

    #[test]
    fn every_declared_scope_is_a_real_scope() {
        for operation in operations() {
            if let Access::Scope(scope) = operation.access {
                assert!(
                    scope.parse::<Scope>().is_ok(),
                    "{} {}: unknown scope {scope}",
                    operation.method,
                    operation.template
                );
            }
        }
    }

    #[test]
    fn table_and_document_cover_the_same_operations() {
        let document = serde_json::to_value(crate::startup::openapi()).unwrap();
        let mut documented = Vec::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                documented.push((method.to_ascii_uppercase(), path.clone()));
            }
        }
        documented.sort();
        let mut declared: Vec<(String, String)> = operations()
            .iter()
            .map(|operation| (operation.method.to_owned(), operation.template.clone()))
            .collect();
        declared.sort();
        assert_eq!(
            documented, declared,
            "every operation appears once in the route table"
        );
    }
}
