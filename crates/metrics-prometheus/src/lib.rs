//! Prometheus metrics for a service built on Tessera's domains. It owns every metric's
//! name, help text, labels and histogram buckets (`names`), the process's Prometheus recorder
//! ([`install`], once per process; [`enabled`] says whether it is), the helpers that record
//! what an HTTP layer and background loops observe, and the decorators that measure the
//! domain ports where a service builds them: [`MeteredChatModel`] around a `ChatModel`
//! (completions, tokens, time to first token, duration, calls in flight) and
//! [`MeteredEmbedder`] around an `Embedder`. Code everywhere records through the `metrics`
//! facade, which costs nothing until [`install`] sets the recorder. Serving the text is the
//! service's business: [`PrometheusHandle::render`] is the body of its `GET /metrics`, and
//! what cannot be counted as it happens (a pool's occupancy, queued work) it sets at scrape
//! time under the names listed here.

mod chat_model;
mod embedder;
pub mod names;
mod record;

use std::{sync::OnceLock, time::Duration};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

pub use chat_model::MeteredChatModel;
pub use embedder::MeteredEmbedder;
/// What [`install`] returns: renders the recorded metrics in the Prometheus text format.
pub use metrics_exporter_prometheus::PrometheusHandle;
pub use record::{
    FileJobState, WebhookOutcome, file_job, guardrail_decision, http_request, refused,
    response_cache_lookup, webhook_delivery,
};

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
    let recorder = builder()?.build_recorder();
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

/// A recorder's builder with each histogram's buckets.
fn builder() -> Result<PrometheusBuilder, String> {
    let mut builder = PrometheusBuilder::new();
    for (name, buckets) in names::HISTOGRAMS {
        builder = builder
            .set_buckets_for_metric(Matcher::Full((*name).to_owned()), buckets)
            .map_err(|e| format!("the buckets of {name}: {e}"))?;
    }
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use std::{
        future::Future,
        pin::pin,
        task::{Context, Poll, Waker},
    };

    use metrics_exporter_prometheus::PrometheusRecorder;

    /// A recorder of this crate's buckets, local to the test that runs in [`recording`].
    pub(crate) fn recorder() -> PrometheusRecorder {
        super::builder().unwrap().build_recorder()
    }

    /// Runs `record` with `recorder` as the thread's recorder and returns the text a scrape
    /// would read.
    pub(crate) fn recording(recorder: &PrometheusRecorder, record: impl FnOnce()) -> String {
        metrics::with_local_recorder(recorder, record);
        recorder.handle().render()
    }

    /// Polls a future that needs no waking (every fake here is ready at once).
    pub(crate) fn ready<F: Future>(future: F) -> F::Output {
        match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("the future was not ready"),
        }
    }

    #[test]
    fn histograms_get_their_buckets() {
        let recorder = recorder();
        let text = recording(&recorder, || {
            metrics::histogram!(super::names::HTTP_REQUEST_DURATION).record(0.2);
        });
        assert!(
            text.contains("http_server_request_duration_seconds_bucket{le=\"0.25\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("http_server_request_duration_seconds_bucket{le=\"0.1\"} 0"),
            "{text}"
        );
    }
}
