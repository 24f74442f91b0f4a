//! W3C trace context read from incoming requests' headers (actix's); writing it onto
//! outgoing calls is `tessera_traces_otlp::propagation::outgoing`.

use actix_web::http::header::HeaderMap;
use opentelemetry::{
    Context,
    propagation::{Extractor, TextMapPropagator as _},
};
use opentelemetry_sdk::propagation::TraceContextPropagator;

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
