//! Structured logs with `tracing`, as text or JSON lines, on standard error (standard output
//! is kept for the admin CLI's machine-readable answers).

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::config::{LogFormat, Settings};

/// Installs the global subscriber; a second call (e.g. in tests) is a no-op.
pub fn init(settings: &Settings) {
    let filter = EnvFilter::try_new(&settings.log).unwrap_or_else(|_| EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(filter);
    let _ = match settings.log_format {
        LogFormat::Json => registry
            .with(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
        LogFormat::Text => registry
            .with(fmt::layer().with_writer(std::io::stderr))
            .try_init(),
    };
}
