//! W3C trace context written onto outgoing calls (model providers, webhook receivers), so
//! the services they reach continue the current span's trace.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The headers that continue the current span's trace in another service (a
/// `tessera_kernel::TraceHeaders`); none when traces are not exported.
pub fn outgoing() -> Vec<(&'static str, String)> {
    if !crate::exporting() {
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
