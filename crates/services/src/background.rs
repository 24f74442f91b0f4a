//! The work a serving process does beside its requests: file processing, webhook dispatch,
//! renewing its generation lease, and deleting what outlived its retention.

use std::time::Duration;

use tessera_audit::AuditService;
use tessera_chats::ChatService;
use tessera_idempotency::IdempotencyService;
use tessera_setup::config::Settings;

use crate::{Services, services::log_interrupted};

/// How often expired idempotency keys and old audit events are deleted.
const PURGE_INTERVAL: Duration = Duration::from_secs(10 * 60);

impl Services {
    /// Starts the background work on the current runtime; it runs until the runtime stops.
    pub fn start_background(&self, settings: &Settings) {
        tokio::spawn(purge_expired(self.idempotency.clone(), self.audit.clone()));
        tokio::spawn(keep_generation_lease(
            self.chats.clone(),
            settings.chats.generation_lease(),
        ));
        self.knowledge.start_workers(settings.knowledge.workers);
        self.webhooks
            .start_dispatchers(settings.webhooks.dispatchers);
    }

    /// Starts the batch runners (`batches.runners`), whose lines `executor` answers.
    pub fn start_batch_runners(
        &self,
        settings: &Settings,
        executor: std::sync::Arc<dyn tessera_batches::LineExecutor>,
    ) {
        crate::batches::start_runners(
            &settings.batches,
            &self.database,
            self.knowledge.files.clone(),
            executor,
            std::sync::Arc::new(tessera_kernel::SystemClock),
        );
    }
}

/// Deletes expired idempotency keys, and audit events older than `audit.retention_days`, now
/// and then.
async fn purge_expired(idempotency: IdempotencyService, audit: AuditService) {
    let mut interval = tokio::time::interval(PURGE_INTERVAL);
    loop {
        interval.tick().await;
        match idempotency.purge_expired().await {
            Ok(0) => {}
            Ok(purged) => tracing::debug!(purged, "expired idempotency keys deleted"),
            Err(error) => tracing::warn!(%error, "expired idempotency keys not deleted"),
        }
        match audit.prune().await {
            Ok(0) => {}
            Ok(pruned) => tracing::debug!(pruned, "audit events past their retention deleted"),
            Err(error) => tracing::warn!(%error, "audit events past their retention not deleted"),
        }
    }
}

/// Renews this process's generation lease and fails the generations of stopped processes,
/// every third of the lease.
async fn keep_generation_lease(chats: ChatService, lease: Duration) {
    let mut interval = tokio::time::interval((lease / 3).max(Duration::from_secs(1)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await; // start-up renewed it just now
    loop {
        interval.tick().await;
        match chats.recover_interrupted(lease).await {
            Ok(interrupted) => log_interrupted(interrupted),
            Err(error) => tracing::warn!(%error, "generation lease not renewed"),
        }
    }
}
