//! W3C trace context across process boundaries: read from incoming requests' headers,
//! written onto outgoing calls (model providers, webhook receivers) from the current span.

use std::collections::HashMap;

use actix_web::http::header::HeaderMap;
use opentelemetry::{
    Context,
    propagation::{Extractor, TextMapPropagator as _},
};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct IncomingHeaders<'a>(&'a HeaderMap);

impl Extractor for IncomingHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}

/// The caller's trace context, if its headers carry a valid one.
pub fn incoming(headers: &HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&IncomingHeaders(headers))
}

/// The headers that continue the current span's trace in another service (a
/// [`tessera_kernel::TraceHeaders`]); none when traces are not exported.
pub fn outgoing() -> Vec<(&'static str, String)> {
    if !tessera_traces_otlp::exporting() {
        return Vec::new();
    }
    let context = tracing::Span::current().context();
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier
        .into_iter()
        .filter_map(|(name, value)| match name.as_str() {
            "traceparent" => Some(("traceparent", value)),
            "tracestate" if !value.is_empty() => Some(("tracestate", value)),
            _ => None,
        })
        .collect()
}
