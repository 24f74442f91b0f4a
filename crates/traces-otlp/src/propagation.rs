//! W3C trace context written onto outgoing calls (model providers, webhook receivers), so
//! the services they reach continue the current span's trace.

/// The headers that continue the current span's trace in another service (a
/// `tessera_kernel::TraceHeaders`); none when traces are not exported.
pub fn outgoing() -> Vec<(&'static str, String)> {
    if !crate::exporting() {
        return Vec::new();
    }
    let Some(context) = crate::context_of(&tracing::Span::current()) else {
        return Vec::new();
    };
    let mut headers = vec![("traceparent", context.traceparent())];
    if !context.trace_state.is_empty() {
        headers.push(("tracestate", context.trace_state));
    }
    headers
}
