//! The request's context: its id, its span (named after the documented operation and
//! continuing the caller's trace), its metric and its log line.

use std::time::Instant;

use actix_web::{
    Error, HttpMessage,
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header::HeaderValue,
    middleware::Next,
};
use tessera_http_actix::middleware::{REQUEST_ID, RequestId, request_id_of};
use tracing::Instrument;

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
