//! The service's logs and traces (`tessera-traces-otlp`) set up from its settings: `log` and
//! `log_format` choose the log lines, the `telemetry` section the OTLP export. Logs go to
//! standard error (standard output is kept for the admin CLI's machine-readable answers).
//! W3C trace context crosses the HTTP boundary in [`propagation`].

pub mod propagation;

use std::time::Duration;

use tessera_setup::otel::OtlpCompression;
use tessera_traces_otlp::{Compression, LogFormat as TracesLogFormat, Telemetry, TracesSettings};

use crate::config::{LogFormat, Settings};

/// Why traces cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
#[error("config section `telemetry`: {0}")]
pub struct TelemetryError(String);

/// Installs the global subscriber (a second call, e.g. in tests, leaves the first in place)
/// and, with an OTLP endpoint, the trace exporter. Must run inside a Tokio runtime when
/// exporting: the exporter's requests run on it.
pub fn init(settings: &Settings) -> Result<Telemetry, TelemetryError> {
    let telemetry = &settings.telemetry;
    // `None` too when `OTEL_SDK_DISABLED=true`: then nothing is exported (decision 0044).
    let otlp_traces_url = telemetry.endpoint();
    let (resource_attributes, otlp_headers) = match otlp_traces_url {
        Some(_) => (
            telemetry
                .resource_pairs()
                .map_err(|e| TelemetryError(format!("resource_attributes: {e}")))?,
            telemetry
                .header_pairs()
                .map_err(|e| TelemetryError(format!("otlp_headers: {e}")))?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    let traces = TracesSettings {
        log_filter: settings.log.clone(),
        log_format: match settings.log_format {
            LogFormat::Text => TracesLogFormat::Text,
            LogFormat::Json => TracesLogFormat::Json,
        },
        otlp_traces_url,
        export_timeout: Duration::from_millis(telemetry.otlp_timeout_ms),
        compression: match telemetry.otlp_compression {
            OtlpCompression::None => Compression::None,
            OtlpCompression::Gzip => Compression::Gzip,
        },
        service_name: telemetry.service_name.clone(),
        service_version: env!("CARGO_PKG_VERSION").to_owned(),
        tracer_name: "tessera-api".to_owned(),
        sampling_ratio: telemetry.sampler.ratio(telemetry.sampling_ratio),
        follow_caller_sampling: telemetry.sampler.follows_caller(),
        resource_attributes,
        otlp_headers,
        capture_content: telemetry.capture_content,
    };
    tessera_traces_otlp::init(&traces).map_err(|e| TelemetryError(e.to_string()))
}
