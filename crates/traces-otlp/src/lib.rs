//! A service's logs and traces: structured logs with `tracing`, as text or JSON lines, on
//! standard error, and, when [`TracesSettings::otlp_endpoint`] is set, the same spans exported
//! as OpenTelemetry traces over OTLP (HTTP/protobuf, sent with the workspace's reqwest on the
//! service's Tokio runtime), each log line then naming its trace. It owns the subscriber's
//! setup ([`init`]), the exporter and its flush on shutdown ([`Telemetry`]), the process-wide
//! switches [`exporting`] and [`capture_content`], and [`TracedChatModel`], the decorator that
//! makes each upstream call of the `ChatModel` port a GenAI client span. It reads no
//! configuration file: the service maps its own settings into [`TracesSettings`]. The W3C
//! trace context of outgoing calls is [`propagation::outgoing`] (a
//! `tessera_kernel::TraceHeaders` for the provider and webhook adapters); extracting it from
//! incoming requests belongs to the service's HTTP framework. Without an endpoint
//! no OpenTelemetry layer exists: spans cost what they cost for logging alone, and nothing
//! is sent.

mod chat_model;
mod log_ids;
mod otlp_client;
pub mod propagation;

pub use chat_model::TracedChatModel;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::{KeyValue, trace::TracerProvider as _};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    Resource,
    trace::{Sampler, SdkTracerProvider},
};
use tracing_subscriber::{EnvFilter, Layer, filter::LevelFilter, fmt, prelude::*};

use log_ids::WithTraceIds;

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
    /// The collector's base URL (e.g. `http://127.0.0.1:4318`; spans go to `/v1/traces`
    /// below it). `None` (or blank): nothing is exported.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// `service.version` of the exported resource.
    pub service_version: String,
    /// The name of the tracer the spans are exported under (their instrumentation scope).
    pub tracer_name: String,
    /// Share of new traces kept (0 to 1); a trace continued from a caller follows its
    /// caller's decision.
    pub sampling_ratio: f64,
    /// More attributes of the exported resource.
    pub resource_attributes: Vec<(String, String)>,
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
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Exports what is queued and stops the exporter.
    pub fn shutdown(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("warning: the last spans were not exported: {error}");
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
    let endpoint = settings
        .otlp_endpoint
        .as_deref()
        .map(str::trim)
        .filter(|endpoint| !endpoint.is_empty());
    let provider = match endpoint {
        Some(endpoint) => Some(tracer_provider(settings, endpoint)?),
        None => None,
    };
    // Each layer filters for itself: `log_filter` chooses the log lines, not the spans
    // exported (with one global filter, `warn` dropped every `info` span before export).
    let otel = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer(settings.tracer_name.clone()))
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            // Nothing here reads OpenTelemetry's own current context: trace headers of
            // outgoing calls and log lines' ids read the `tracing` span's. Activating it
            // on every enter (every poll of an instrumented future) cloned the span's
            // context and pushed a guard: the largest single cost of exporting (issue 32).
            .with_context_activation(false)
            .with_filter(LevelFilter::INFO)
    });
    let traced = provider.is_some();
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
    if installed && provider.is_some() {
        EXPORTING.store(true, Ordering::Relaxed);
        CAPTURE_CONTENT.store(settings.capture_content, Ordering::Relaxed);
    }
    Ok(Telemetry { provider })
}

/// Where the spans go below the collector's base URL.
fn traces_url(endpoint: &str) -> String {
    format!("{}/v1/traces", endpoint.trim_end_matches('/'))
}

fn tracer_provider(
    settings: &TracesSettings,
    endpoint: &str,
) -> Result<SdkTracerProvider, TracesError> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| TracesError("the exporter needs a Tokio runtime to send on".into()))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(otlp_client::OtlpHttpClient::new(runtime).map_err(TracesError)?)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(traces_url(endpoint))
        .build()
        .map_err(|e| TracesError(format!("otlp_endpoint: {e}")))?;
    let attributes = settings
        .resource_attributes
        .iter()
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()));
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .with_attributes(attributes)
        .with_attribute(KeyValue::new(
            "service.version",
            settings.service_version.clone(),
        ))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sampling_ratio,
        ))))
        .with_resource(resource)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exported_to(endpoint: &str) -> TracesSettings {
        TracesSettings {
            log_filter: "info".into(),
            log_format: LogFormat::Text,
            otlp_endpoint: Some(endpoint.into()),
            service_name: "test".into(),
            service_version: "0.0.0".into(),
            tracer_name: "test".into(),
            sampling_ratio: 1.0,
            resource_attributes: Vec::new(),
            capture_content: false,
        }
    }

    #[test]
    fn spans_go_below_the_base_url() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://collector/otlp/"),
            "https://collector/otlp/v1/traces"
        );
    }

    #[test]
    fn exporting_needs_a_tokio_runtime() {
        let Err(error) = init(&exported_to("http://127.0.0.1:4318")) else {
            panic!("started without a runtime");
        };
        assert_eq!(
            error.to_string(),
            "the exporter needs a Tokio runtime to send on"
        );
        assert!(!exporting());
    }
}
