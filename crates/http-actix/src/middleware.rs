//! Cross-cutting request handling: request ids, the header size limit, the HTTPS guard for
//! requests relayed by a trusted proxy, and the rendering of framework errors as problems.

use std::{net::IpAddr, sync::Arc};

use crate::problem::{ApiError, PROBLEM_JSON, ProblemKind, status_problem};
use actix_web::{
    Error, HttpResponse,
    body::{BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{
        StatusCode,
        header::{self, HeaderName},
    },
    middleware::{ErrorHandlerResponse, ErrorHandlers, Next},
};

pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of the current request, available to handlers through request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// A client-supplied id is kept when it is short and printable; otherwise a new one is made.
pub fn request_id_of(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

/// The most header bytes (names and values) a request may carry.
#[derive(Debug, Clone, Copy)]
pub struct HeaderLimit(pub usize);

/// Refuses requests whose headers are larger than `http.max_header_bytes` with a 431 problem,
/// before any handler (or token check) spends work on them.
pub async fn limit_headers(
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let limit = req.app_data::<HeaderLimit>().map_or(usize::MAX, |l| l.0);
    let size: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if size > limit {
        let error = ApiError::new(
            ProblemKind::HeadersTooLarge,
            ProblemKind::HeadersTooLarge.code(),
            format!("the request headers are {size} bytes; at most {limit} are accepted"),
        );
        return Ok(req.into_response(HttpResponse::from_error(error)));
    }
    next.call(req).await
}

/// Peers whose `X-Forwarded-Proto` is believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(pub Arc<Vec<IpAddr>>);

/// Refuses requests that a trusted TLS-terminating proxy says arrived over plain HTTP.
/// (The listener itself speaks only TLS, so a direct request is always HTTPS.)
pub async fn require_https(
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let trusted = req
        .app_data::<TrustedProxies>()
        .cloned()
        .unwrap_or_default();
    let from_trusted_proxy = req
        .peer_addr()
        .is_some_and(|peer| trusted.0.contains(&peer.ip()));
    let forwarded_plain = req
        .headers()
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|proto| {
            proto
                .split(',')
                .next()
                .is_some_and(|first| first.trim().eq_ignore_ascii_case("http"))
        });
    if from_trusted_proxy && forwarded_plain {
        let error = ApiError::forbidden(
            "https_required",
            "this API is served over HTTPS only; repeat the request with https://",
        );
        return Ok(req.into_response(HttpResponse::from_error(error)));
    }
    next.call(req).await
}

/// Turns every error response that is not already a problem (unknown path, wrong method,
/// framework-level failures) into `application/problem+json`.
pub fn problem_errors<B: MessageBody + 'static>() -> ErrorHandlers<B> {
    ErrorHandlers::new().default_handler(|res: ServiceResponse<B>| {
        let is_problem = res
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            // OAuth error bodies are JSON by their own standard; leave them as they are.
            .is_some_and(|v| v.starts_with(PROBLEM_JSON) || v.starts_with("application/json"));
        if is_problem {
            return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
        }
        let status = res.status();
        let detail = match status {
            StatusCode::NOT_FOUND => format!("no resource at {}", res.request().path()),
            StatusCode::METHOD_NOT_ALLOWED => format!(
                "{} is not allowed on {}",
                res.request().method(),
                res.request().path()
            ),
            other => other.canonical_reason().unwrap_or("error").to_owned(),
        };
        // The framework answered by itself: there is only a status to go on.
        let problem = status_problem(status, detail);
        let (req, old) = res.into_parts();
        let mut response = HttpResponse::build(status)
            .insert_header((header::CONTENT_TYPE, PROBLEM_JSON))
            .body(problem.to_string());
        // Keep headers such as Allow, Retry-After and the request id.
        for (name, value) in old.headers() {
            if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
                response.headers_mut().insert(name.clone(), value.clone());
            }
        }
        Ok(ErrorHandlerResponse::Response(
            ServiceResponse::new(req, response).map_into_right_body(),
        ))
    })
}
