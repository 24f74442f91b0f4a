//! Structured logs with `tracing`, as text or JSON lines, on standard error (standard output
//! is kept for the admin CLI's machine-readable answers); and, when `telemetry.otlp_endpoint`
//! is set, the same spans exported as OpenTelemetry traces over OTLP (HTTP/protobuf) with
//! W3C trace-context propagation. Without an endpoint no OpenTelemetry layer exists: spans
//! cost what they cost for logging alone, and nothing is sent.

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

use crate::config::{LogFormat, Settings, TelemetrySettings};
use log_ids::WithTraceIds;

static EXPORTING: AtomicBool = AtomicBool::new(false);
static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported (so trace context is worth extracting and sending on).
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Whether completion spans may carry message content (`telemetry.capture_content`).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Why traces cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
#[error("config section `telemetry`: {0}")]
pub struct TelemetryError(String);

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
pub fn init(settings: &Settings) -> Result<Telemetry, TelemetryError> {
    let filter = EnvFilter::try_new(&settings.log).unwrap_or_else(|_| EnvFilter::new("info"));
    let provider = match settings.telemetry.endpoint() {
        Some(endpoint) => Some(tracer_provider(&settings.telemetry, endpoint)?),
        None => None,
    };
    // Each layer filters for itself: `log` chooses the log lines, not the spans exported
    // (with one global filter, `log = "warn"` dropped every `info` span before export).
    let otel = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("tessera-api"))
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
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
        CAPTURE_CONTENT.store(settings.telemetry.capture_content, Ordering::Relaxed);
    }
    Ok(Telemetry { provider })
}

fn tracer_provider(
    settings: &TelemetrySettings,
    endpoint: &str,
) -> Result<SdkTracerProvider, TelemetryError> {
    let traces = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| TelemetryError("the exporter needs a Tokio runtime to send on".into()))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(otlp_client::OtlpHttpClient::new(runtime).map_err(TelemetryError)?)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(traces)
        .build()
        .map_err(|e| TelemetryError(format!("otlp_endpoint: {e}")))?;
    let attributes = settings
        .resource_pairs()
        .map_err(|e| TelemetryError(format!("resource_attributes: {e}")))?
        .into_iter()
        .map(|(key, value)| KeyValue::new(key, value));
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .with_attributes(attributes)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sampling_ratio,
        ))))
        .with_resource(resource)
        .build())
}
