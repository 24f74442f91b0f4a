//! Worker mode (`tessera-api worker`): the service's background work without its HTTP API,
//! for scale-out. It processes uploaded files (extract, chunk, embed, index) and delivers
//! webhooks, from the same database queue the API replicas fill; those then run with
//! `knowledge.workers = 0` (and, if they should not send webhooks, `webhooks.dispatchers =
//! 0`). Workers and API replicas must share the database, the uploaded content (one
//! `knowledge.blobs_dir` on a shared volume, or `knowledge.s3_bucket`) and the vector index:
//! the embedded index belongs to one process, so worker mode needs the Qdrant server
//! (`knowledge.qdrant_url`). A stopped worker loses nothing: the jobs it held are taken over
//! when their leases expire.

use std::sync::Arc;

use tessera_kernel::SystemClock;

use tessera_services::{knowledge::Knowledge, webhooks::Webhooks};

use crate::{
    config::Settings,
    metrics::MetricsServer,
    secrets,
    startup::{StartupError, bind_metrics, serve_metrics},
};

/// File processing and webhook delivery, ready to start.
pub struct Worker {
    knowledge: Knowledge,
    webhooks: Webhooks,
    processors: usize,
    dispatchers: usize,
    /// The Prometheus listener, unless `metrics.listen` is `""`.
    metrics: Option<MetricsServer>,
}

impl Worker {
    /// Checks that this configuration can run beside API replicas, then opens what the
    /// work needs (database, blobs, embedding model, index).
    pub async fn build(settings: &Settings) -> Result<Self, StartupError> {
        if settings.knowledge.qdrant_url.is_none() {
            return Err(StartupError::Worker(
                "needs the vector index the API replicas search: set knowledge.qdrant_url \
                 (QDRANT_URL); the embedded index belongs to one process"
                    .into(),
            ));
        }
        let processors = settings.knowledge.workers;
        let dispatchers = settings.webhooks.dispatchers;
        if processors == 0 && dispatchers == 0 {
            return Err(StartupError::Worker(
                "knowledge.workers and webhooks.dispatchers are both 0: this worker would do \
                 nothing"
                    .into(),
            ));
        }
        std::fs::create_dir_all(&settings.data_dir).map_err(|e| {
            StartupError::DataDir(format!(
                "cannot create {}: {e}",
                settings.data_dir.display()
            ))
        })?;
        // Outbound HTTPS (Qdrant, S3, webhooks, remote embeddings) needs a crypto provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let metrics = bind_metrics(settings)?;
        let database = tessera_setup::open_database(settings).await?;
        let cursors = secrets::cursor_codec(settings).map_err(StartupError::DataDir)?;
        let clock = Arc::new(SystemClock);
        let knowledge =
            Knowledge::build_for_processing(settings, &database, clock.clone(), cursors.clone())
                .await?;
        if processors > 0 && !knowledge.can_process() {
            return Err(StartupError::Worker(
                "no embedding model: set knowledge.embedding_model_dir (or models.local_dir), \
                 or knowledge.embedding_base_url, so this worker can process files"
                    .into(),
            ));
        }
        let webhooks = Webhooks::build(&settings.webhooks, &database, clock, cursors)?;
        let metrics = serve_metrics(metrics, &database, None)?;
        Ok(Self {
            knowledge,
            webhooks,
            processors,
            dispatchers,
            metrics,
        })
    }

    /// Starts the processors and dispatchers on the current runtime; they run until it stops.
    pub fn start(&self) {
        self.knowledge.start_workers(self.processors);
        self.webhooks.start_dispatchers(self.dispatchers);
        tracing::info!(
            processors = self.processors,
            dispatchers = self.dispatchers,
            metrics = self
                .metrics
                .as_ref()
                .map(|m| m.address.to_string())
                .unwrap_or_default(),
            "tessera-api worker running"
        );
    }
}
