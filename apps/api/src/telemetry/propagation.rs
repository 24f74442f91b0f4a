//! W3C trace context read from incoming requests' headers (actix's); writing it onto
//! outgoing calls is `tessera_traces_otlp::propagation::outgoing`.

use actix_web::http::header::HeaderMap;
use tessera_traces_otlp::SpanContext;

/// The caller's trace context, if its headers carry a valid one (several `tracestate`
/// headers are one list, as the W3C specification reads them).
pub fn incoming(headers: &HeaderMap) -> Option<SpanContext> {
    let traceparent = headers.get("traceparent")?.to_str().ok()?;
    let states: Vec<&str> = headers
        .get_all("tracestate")
        .filter_map(|value| value.to_str().ok())
        .collect();
    SpanContext::from_headers(Some(traceparent), Some(&states.join(",")))
}
