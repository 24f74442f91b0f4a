//! How a trace crosses to another service: adapters that call out (model providers, webhook
//! receivers) add the headers a [`TraceHeaders`] gives for the current trace (W3C
//! `traceparent`, `tracestate`). The binary supplies it when it exports traces; adapters stay
//! free of any tracing library.

/// Returns the trace-context headers of the current span (none when nothing is traced).
pub type TraceHeaders = fn() -> Vec<(&'static str, String)>;
