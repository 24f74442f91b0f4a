//! Wiring of webhooks: the service the handlers use, and the dispatchers that send due
//! deliveries from this process (any replica may run them: claims are leases).

use std::{sync::Arc, time::Duration};

use tessera_kernel::{Clock, CursorCodec};
use tessera_setup::config::WebhookSettings;
use tessera_store::{Database, SqlWebhookStore};
use tessera_webhooks::{
    DeliveryStatus, DispatchSettings, Dispatcher, TargetPolicy, WebhookSender, WebhookService,
    WebhookStore,
};
use tessera_webhooks_http::HttpWebhookSender;

use crate::ServicesError;

/// The webhook service and what its dispatchers need.
#[derive(Clone)]
pub struct Webhooks {
    pub service: WebhookService,
    store: Arc<dyn WebhookStore>,
    sender: Arc<dyn WebhookSender>,
    clock: Arc<dyn Clock>,
    dispatch: DispatchSettings,
    poll: Duration,
}

impl Webhooks {
    pub fn build(
        settings: &WebhookSettings,
        database: &Database,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Result<Self, ServicesError> {
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        let policy = TargetPolicy {
            allow_private_targets: settings.allow_private_targets,
        };
        let sender = HttpWebhookSender::new(timeout, policy)
            .map_err(|e| ServicesError::Webhooks(e.to_string()))?
            .with_trace_headers(tessera_traces_otlp::propagation::outgoing);
        let store: Arc<dyn WebhookStore> = Arc::new(SqlWebhookStore::new(database.clone()));
        Ok(Self {
            service: WebhookService::new(store.clone(), clock.clone(), cursors, policy),
            store,
            sender: Arc::new(sender),
            clock,
            dispatch: DispatchSettings {
                max_attempts: settings.max_attempts.max(1),
                first_retry: Duration::from_secs(settings.first_retry_secs.max(1)),
                max_retry: Duration::from_secs(settings.max_retry_secs.max(1)),
                // Twice the answer timeout: a live attempt is never taken over.
                lease: timeout * 2,
            },
            poll: Duration::from_millis(settings.poll_millis.max(10)),
        })
    }

    /// Starts `count` dispatchers on the current runtime; they run until it stops.
    pub fn start_dispatchers(&self, count: usize) {
        let process = std::process::id();
        for number in 0..count {
            let worker = format!("{process}-{number}-{}", uuid::Uuid::now_v7().simple());
            let dispatcher = Dispatcher::new(
                self.store.clone(),
                self.sender.clone(),
                self.clock.clone(),
                self.dispatch,
                worker,
            );
            tokio::spawn(run_dispatcher(dispatcher, self.poll));
        }
    }
}

/// Sends due deliveries until none is left, then waits for the poll interval.
async fn run_dispatcher(dispatcher: Dispatcher, poll: Duration) {
    use tessera_metrics_prometheus::{WebhookOutcome, webhook_delivery};
    loop {
        match dispatcher.deliver_next().await {
            Ok(Some((delivery, record))) => match record.status {
                DeliveryStatus::Delivered => {
                    webhook_delivery(WebhookOutcome::Delivered);
                    tracing::debug!(delivery = %delivery.id, event = delivery.event.as_str(), attempt = delivery.attempts, "webhook delivered");
                }
                DeliveryStatus::Pending => {
                    webhook_delivery(WebhookOutcome::Retrying);
                    tracing::info!(delivery = %delivery.id, attempt = delivery.attempts, error = record.error.as_deref().unwrap_or_default(), "webhook delivery will be retried");
                }
                DeliveryStatus::Failed => {
                    webhook_delivery(WebhookOutcome::Failed);
                    tracing::warn!(delivery = %delivery.id, attempts = delivery.attempts, error = record.error.as_deref().unwrap_or_default(), "webhook delivery failed for good");
                }
            },
            Ok(None) => tokio::time::sleep(poll).await,
            Err(error) => {
                tracing::warn!(%error, "webhook outbox unavailable");
                tokio::time::sleep(poll).await;
            }
        }
    }
}
