//! A service's logs and traces: structured logs with `tracing`, as text or JSON lines, on
//! standard error, and, when [`TracesSettings::otlp_traces_url`] is set, the same spans exported
//! as OpenTelemetry traces over OTLP (HTTP/protobuf, sent with the workspace's reqwest on the
//! service's Tokio runtime), each log line then naming its trace. It owns the subscriber's
//! setup ([`init`]), the export layer (its own bridge from `tracing` spans to OTLP spans,
//! encoded straight into protobuf as they close), the export queue and its flush on shutdown
//! ([`Telemetry`]), the process-wide switches [`exporting`] and [`capture_content`], the W3C
//! trace context ([`SpanContext`]; continuing a caller's trace is [`with_remote_parent`]),
//! and [`TracedChatModel`], the decorator that makes each upstream call of the `ChatModel`
//! port a GenAI client span. It reads no configuration file: the service maps its own
//! settings into [`TracesSettings`]. The trace context of outgoing calls is
//! [`propagation::outgoing`] (a `tessera_kernel::TraceHeaders` for the provider and webhook
//! adapters); reading it from incoming requests' headers belongs to the service's HTTP
//! framework ([`SpanContext::from_headers`]). Without an endpoint no export layer exists:
//! spans cost what they cost for logging alone, and nothing is sent.

mod chat_model;
mod context;
mod export;
mod layer;
mod log_ids;
mod otlp;
pub mod propagation;
mod span;
#[cfg(test)]
mod test_support;

pub use chat_model::TracedChatModel;
pub use context::{SpanContext, SpanId, TraceId};
pub use export::Compression;
pub use layer::{context_of, with_remote_parent};

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use tracing_subscriber::{EnvFilter, Layer, fmt, prelude::*};

use context::Sampler;
use export::{Export, Sender};
use layer::{ExportFilter, ExportLayer};
use log_ids::WithTraceIds;
use span::AttributeValue;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}

/// What [`init`] sets up.
#[derive(Debug, Clone, PartialEq)]
pub struct TracesSettings {
    /// `EnvFilter` directives choosing the log lines (`info` when they do not parse). They
    /// do not filter the spans exported.
    pub log_filter: String,
    pub log_format: LogFormat,
    /// The URL spans are sent to, used as is (e.g. `http://127.0.0.1:4318/v1/traces`).
    /// `None` (or blank): nothing is exported.
    pub otlp_traces_url: Option<String>,
    /// How long one export request may take before it is abandoned (and retried).
    pub export_timeout: Duration,
    /// How export bodies are compressed.
    pub compression: Compression,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// `service.version` of the exported resource.
    pub service_version: String,
    /// The name of the tracer the spans are exported under (their instrumentation scope).
    pub tracer_name: String,
    /// Share of the traces starting here that is kept (0 to 1: 1 is `always_on`, 0
    /// `always_off`).
    pub sampling_ratio: f64,
    /// Whether a caller's `traceparent` decides for its request (OpenTelemetry's
    /// `parentbased_*` samplers); otherwise `sampling_ratio` decides for it too.
    pub follow_caller_sampling: bool,
    /// More attributes of the exported resource.
    pub resource_attributes: Vec<(String, String)>,
    /// Headers sent with every export (a hosted collector's key, for one).
    pub otlp_headers: Vec<(String, String)>,
    /// Put message content (prompts and answers) on completion spans.
    pub capture_content: bool,
}

static EXPORTING: AtomicBool = AtomicBool::new(false);
static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported (so trace context is worth extracting and sending on).
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Whether completion spans may carry message content ([`TracesSettings::capture_content`],
/// while exporting).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Why traces cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TracesError(String);

/// Flushes the spans still queued for export when dropped (or on [`Telemetry::shutdown`]).
#[must_use = "dropping it stops the export"]
pub struct Telemetry {
    export: Option<Export>,
}

impl Telemetry {
    /// Exports what is queued and stops the exporter; blocks the calling thread until the
    /// last export is answered (or times out), so call it where blocking is allowed.
    pub fn shutdown(&mut self) {
        if let Some(export) = &mut self.export {
            export.shutdown();
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Installs the global subscriber (a second call, e.g. in tests, leaves the first in place)
/// and, with an OTLP endpoint, the trace exporter. Must run inside a Tokio runtime when
/// exporting: the exporter's requests run on it.
pub fn init(settings: &TracesSettings) -> Result<Telemetry, TracesError> {
    let filter =
        EnvFilter::try_new(&settings.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let url = settings
        .otlp_traces_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty());
    let export = match url {
        Some(url) => Some(start_export(settings, url)?),
        None => None,
    };
    // Each layer filters for itself: `log_filter` chooses the log lines, not the spans
    // exported (with one global filter, `warn` dropped every `info` span before export).
    let otel = export.as_ref().map(|export| {
        ExportLayer {
            sampler: Sampler::new(settings.sampling_ratio, settings.follow_caller_sampling),
            queue: export.queue.clone(),
        }
        .with_filter(ExportFilter)
    });
    let traced = export.is_some();
    let logs = match settings.log_format {
        LogFormat::Json => {
            let layer = fmt::layer()
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(false)
                .with_writer(std::io::stderr);
            if traced {
                layer
                    .map_event_format(|format| WithTraceIds { format, json: true })
                    .boxed()
            } else {
                layer.boxed()
            }
        }
        LogFormat::Text => {
            let layer = fmt::layer().with_writer(std::io::stderr);
            if traced {
                layer
                    .map_event_format(|format| WithTraceIds {
                        format,
                        json: false,
                    })
                    .boxed()
            } else {
                layer.boxed()
            }
        }
    };
    let installed = tracing_subscriber::registry()
        .with(otel)
        .with(logs.with_filter(filter))
        .try_init()
        .is_ok();
    if installed && export.is_some() {
        EXPORTING.store(true, Ordering::Relaxed);
        CAPTURE_CONTENT.store(settings.capture_content, Ordering::Relaxed);
    }
    Ok(Telemetry { export })
}

/// Starts the export task on the current Tokio runtime.
fn start_export(settings: &TracesSettings, url: &str) -> Result<Export, TracesError> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| TracesError("the exporter needs a Tokio runtime to send on".into()))?;
    let sender = Sender {
        client: http_client()?,
        url: url.to_owned(),
        timeout: settings.export_timeout,
        compression: settings.compression,
        retry: export::Retry::default(),
        headers: export_headers(&settings.otlp_headers)?,
        envelope: otlp::Envelope::new(
            &resource_attributes(settings),
            &settings.tracer_name,
            &settings.service_version,
        ),
    };
    Ok(Export::start(&runtime, sender))
}

/// The client exports are sent with.
fn http_client() -> Result<reqwest::Client, TracesError> {
    // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
    // process installed, or install the same one the API does.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .build()
        .map_err(|e| TracesError(format!("cannot build the OTLP HTTP client: {e}")))
}

/// The configured export headers, checked.
fn export_headers(pairs: &[(String, String)]) -> Result<reqwest::header::HeaderMap, TracesError> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| TracesError(format!("otlp_headers: `{name}` is not a header name")))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            TracesError(format!(
                "otlp_headers: the value of `{name}` is not a header value"
            ))
        })?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// The exported resource: the configured attributes, then the service's name and version
/// and the telemetry SDK's (which win over configured ones of the same key).
fn resource_attributes(settings: &TracesSettings) -> Vec<(&str, AttributeValue)> {
    let text = |value: &str| AttributeValue::Str(value.to_owned());
    let fixed = [
        ("service.name", text(&settings.service_name)),
        ("service.version", text(&settings.service_version)),
        ("telemetry.sdk.name", text("tessera-traces-otlp")),
        ("telemetry.sdk.language", text("rust")),
        ("telemetry.sdk.version", text(env!("CARGO_PKG_VERSION"))),
    ];
    let mut attributes: Vec<_> = settings
        .resource_attributes
        .iter()
        .filter(|(key, _)| fixed.iter().all(|(fixed, _)| fixed != key))
        .map(|(key, value)| (key.as_str(), text(value)))
        .collect();
    attributes.extend(fixed);
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exported_to(url: &str) -> TracesSettings {
        TracesSettings {
            log_filter: "info".into(),
            log_format: LogFormat::Text,
            otlp_traces_url: Some(url.into()),
            export_timeout: Duration::from_secs(10),
            compression: Compression::None,
            service_name: "test".into(),
            service_version: "0.0.0".into(),
            tracer_name: "test".into(),
            sampling_ratio: 1.0,
            follow_caller_sampling: true,
            resource_attributes: Vec::new(),
            otlp_headers: Vec::new(),
            capture_content: false,
        }
    }

    #[test]
    fn exporting_needs_a_tokio_runtime() {
        let Err(error) = init(&exported_to("http://127.0.0.1:4318/v1/traces")) else {
            panic!("started without a runtime");
        };
        assert_eq!(
            error.to_string(),
            "the exporter needs a Tokio runtime to send on"
        );
        assert!(!exporting());
    }
}
