//! Cross-cutting request handling: request ids, access logs, the HTTPS guard for requests
//! relayed by a trusted proxy, and the rendering of framework errors as problems.

use std::{net::IpAddr, sync::Arc, time::Instant};

use actix_web::{
    Error, HttpMessage, HttpResponse, ResponseError,
    body::{BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{
        StatusCode,
        header::{self, HeaderName, HeaderValue},
    },
    middleware::{ErrorHandlerResponse, ErrorHandlers, Next},
};
use tracing::Instrument;

use crate::problem::{ApiError, PROBLEM_JSON, code_for_status};

pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of the current request, available to handlers through request extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// A client-supplied id is kept when it is short and printable; otherwise a new one is made.
fn request_id_of(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

/// Assigns the request id, runs the request inside a tracing span, echoes the id in the
/// response and logs one line per request.
pub async fn request_context(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = request_id_of(&req);
    req.extensions_mut().insert(RequestId(id.clone()));
    let span = request_span(&req, &id);
    let started = Instant::now();
    let traced = span.clone();
    async move {
        let mut response = next.call(req).await?;
        let status = response.status();
        let elapsed = started.elapsed();
        let route = response.request().match_pattern();
        tessera_metrics_prometheus::http_request(
            response.request().method().as_str(),
            route.as_deref(),
            status.as_u16(),
            elapsed,
        );
        if tessera_traces_otlp::exporting() {
            traced.record("http.route", route.as_deref());
            traced.record("http.response.status_code", i64::from(status.as_u16()));
            if status.is_server_error() {
                traced.record("otel.status_code", "ERROR");
            }
        }
        let elapsed_ms = elapsed.as_secs_f64() * 1000.0;
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), elapsed_ms, "request failed");
        } else {
            tracing::info!(status = status.as_u16(), elapsed_ms, "request handled");
        }
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(REQUEST_ID.clone(), value);
        }
        Ok(response)
    }
    .instrument(span)
    .await
}

/// The request's span. When traces are exported it carries the OpenTelemetry HTTP server
/// attributes and continues the caller's `traceparent`.
fn request_span(req: &ServiceRequest, id: &str) -> tracing::Span {
    use tracing::field::Empty;
    if !tessera_traces_otlp::exporting() {
        return tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.path());
    }
    // Named `{method} {route}` as the HTTP conventions ask; the route is looked up in the
    // documented operations, as the span starts before the router has run.
    let method = req.method().as_str();
    let name = crate::access::span_name_for(method, req.path()).unwrap_or(method);
    let caller = crate::telemetry::propagation::incoming(req.headers());
    // The method and path once, under the conventions' names (every attribute is exported).
    tessera_traces_otlp::with_remote_parent(caller, || {
        tracing::info_span!(
            "request",
            request_id = id,
            "otel.name" = name,
            "otel.kind" = "server",
            "otel.status_code" = Empty,
            "http.request.method" = method,
            "url.path" = req.path(),
            "http.route" = Empty,
            "http.response.status_code" = Empty,
        )
    })
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
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!("the request headers are {size} bytes; at most {limit} are accepted"),
        );
        return Ok(req.into_response(error.error_response()));
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
        let error = ApiError::new(
            StatusCode::FORBIDDEN,
            "https_required",
            "this API is served over HTTPS only; repeat the request with https://",
        );
        return Ok(req.into_response(error.error_response()));
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
        let problem = ApiError::new(status, code_for_status(status), detail);
        let (req, old) = res.into_parts();
        let mut response = HttpResponse::build(status)
            .insert_header((header::CONTENT_TYPE, PROBLEM_JSON))
            .body(problem.body().to_string());
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
