//! Prometheus metrics on a listener of their own (`metrics.listen`, plain HTTP, `GET
//! /metrics`). Code everywhere records through the `metrics` facade, which costs nothing
//! until [`install`] sets the process's recorder; with `metrics.listen = ""` it never does.
//! What cannot be counted as it happens (the pool's occupancy, the work queued in the
//! database) is read when Prometheus scrapes. `names` lists every metric.

mod chat_model;
mod embedder;
mod listener;
pub mod names;
mod record;

use std::{sync::OnceLock, time::Duration};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub use chat_model::MeteredChatModel;
pub use embedder::MeteredEmbedder;
pub use listener::{MetricsListener, MetricsServer};
pub use record::{FileJobState, WebhookOutcome, file_job, http_request, refused, webhook_delivery};

/// How often histograms' recent samples are folded into their buckets between scrapes
/// (the exporter keeps them in a growing buffer until then).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Whether this process records metrics (callers skip building labels when not).
pub fn enabled() -> bool {
    HANDLE.get().is_some()
}

/// Installs the Prometheus recorder for this process, once: later calls (a second
/// application in one test process) share it.
pub fn install() -> Result<PrometheusHandle, String> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in names::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)
            .map_err(|e| format!("the buckets of {name}: {e}"))?;
    }
    let recorder = builder.build_recorder();
    let handle = recorder.handle();
    if HANDLE.set(handle.clone()).is_err() || metrics::set_global_recorder(recorder).is_err() {
        return Err("another metrics recorder was installed first".into());
    }
    names::describe();
    metrics::gauge!(names::BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    let upkeep = handle.clone();
    std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                upkeep.run_upkeep();
            }
        })
        .map_err(|e| format!("cannot start the metrics upkeep thread: {e}"))?;
    Ok(handle)
}
