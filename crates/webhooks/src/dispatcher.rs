//! The dispatcher: claims due deliveries, signs and sends them, and settles each attempt:
//! delivered on 2xx, else retried on a doubling schedule until the attempts run out.

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use tessera_kernel::{Clock, DomainError};
use tracing::Instrument;

use crate::{
    AttemptRecord, DELIVERY_HEADER, Delivery, DeliveryStatus, EVENT_HEADER, EVENT_ID_HEADER,
    OutgoingRequest, SIGNATURE_HEADER, WebhookSender, WebhookStore, sign,
};

/// How deliveries are attempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchSettings {
    /// Attempts before a delivery fails for good.
    pub max_attempts: u32,
    /// The wait before the second attempt; it doubles for each later one.
    pub first_retry: Duration,
    /// The longest wait between attempts.
    pub max_retry: Duration,
    /// How long a claim lasts; longer than the sender's timeout, so a live attempt is never
    /// taken over.
    pub lease: Duration,
}

impl Default for DispatchSettings {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            first_retry: Duration::from_secs(10),
            max_retry: Duration::from_secs(3600),
            lease: Duration::from_secs(60),
        }
    }
}

/// The wait after failed attempt number `attempt` (1-based): `first · 2^(attempt-1)`, at
/// most `max`.
pub fn retry_delay(attempt: u32, first: Duration, max: Duration) -> Duration {
    let doublings = attempt.saturating_sub(1).min(31);
    first.saturating_mul(1 << doublings).min(max)
}

/// Sends due deliveries on behalf of one worker.
#[derive(Clone)]
pub struct Dispatcher {
    store: Arc<dyn WebhookStore>,
    sender: Arc<dyn WebhookSender>,
    clock: Arc<dyn Clock>,
    settings: DispatchSettings,
    worker: String,
}

fn later(now: DateTime<Utc>, by: Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX)
}

impl Dispatcher {
    pub fn new(
        store: Arc<dyn WebhookStore>,
        sender: Arc<dyn WebhookSender>,
        clock: Arc<dyn Clock>,
        settings: DispatchSettings,
        worker: String,
    ) -> Self {
        Self {
            store,
            sender,
            clock,
            settings,
            worker,
        }
    }

    /// Attempts the oldest due delivery; `None` when nothing is due. The returned record
    /// says what became of it.
    pub async fn deliver_next(&self) -> Result<Option<(Delivery, AttemptRecord)>, DomainError> {
        let now = self.clock.now();
        let Some(claimed) = self
            .store
            .claim_due(&self.worker, now, later(now, self.settings.lease))
            .await?
        else {
            return Ok(None);
        };
        let delivery = claimed.delivery;
        let request = OutgoingRequest {
            url: claimed.url,
            headers: vec![
                (EVENT_HEADER, delivery.event.as_str().to_owned()),
                (EVENT_ID_HEADER, delivery.event_id.to_string()),
                (DELIVERY_HEADER, delivery.id.to_string()),
                (
                    SIGNATURE_HEADER,
                    sign(&claimed.secret, now.timestamp(), delivery.body.as_bytes()),
                ),
            ],
            body: delivery.body.clone(),
        };
        // The attempt's span; its `traceparent` goes to the receiver.
        let span = tracing::info_span!(
            "webhook delivery",
            "otel.name" = format!("POST webhook {}", delivery.event.as_str()).as_str(),
            "otel.kind" = "client",
            "otel.status_code" = tracing::field::Empty,
            "webhook.event" = delivery.event.as_str(),
            "webhook.attempt" = i64::from(delivery.attempts),
            "http.response.status_code" = tracing::field::Empty,
        );
        let answer = self.sender.post(&request).instrument(span.clone()).await;
        match &answer {
            Ok(code) => {
                span.record("http.response.status_code", i64::from(*code));
                if !(200..300).contains(code) {
                    span.record("otel.status_code", "ERROR");
                }
            }
            Err(_) => {
                span.record("otel.status_code", "ERROR");
            }
        }
        let at = self.clock.now();
        let (status_code, error) = match answer {
            Ok(code) if (200..300).contains(&code) => (Some(code), None),
            Ok(code) => (Some(code), Some(format!("the receiver answered {code}"))),
            Err(error) => (None, Some(error.0)),
        };
        let record = match error {
            None => AttemptRecord {
                status: DeliveryStatus::Delivered,
                status_code,
                error: None,
                next_attempt_at: None,
                at,
            },
            Some(error) if delivery.attempts >= self.settings.max_attempts => AttemptRecord {
                status: DeliveryStatus::Failed,
                status_code,
                error: Some(error),
                next_attempt_at: None,
                at,
            },
            Some(error) => {
                let wait = retry_delay(
                    delivery.attempts,
                    self.settings.first_retry,
                    self.settings.max_retry,
                );
                AttemptRecord {
                    status: DeliveryStatus::Pending,
                    status_code,
                    error: Some(error),
                    next_attempt_at: Some(later(at, wait)),
                    at,
                }
            }
        };
        if !self
            .store
            .record_attempt(&delivery.id, &self.worker, &record)
            .await?
        {
            tracing::warn!(delivery = %delivery.id, "webhook delivery outcome dropped: another dispatcher took it over, or its webhook was deleted");
        }
        Ok(Some((delivery, record)))
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use tessera_kernel::{ManualClock, OrganizationId};

    use super::*;
    use crate::{
        ClaimedDelivery, DeliveryId, EventId, EventKind, MockWebhookSender, MockWebhookStore,
        SendError, WebhookId, WebhookSecret, verify,
    };

    fn claimed(attempts: u32) -> ClaimedDelivery {
        ClaimedDelivery {
            delivery: Delivery {
                id: DeliveryId::generate(),
                webhook_id: WebhookId::generate(),
                organization: OrganizationId::generate(),
                event_id: EventId::generate(),
                event: EventKind::FileReady,
                body: "{\"type\":\"file.ready\"}".into(),
                status: DeliveryStatus::Pending,
                attempts,
                next_attempt_at: Some(Utc::now()),
                last_status_code: None,
                last_error: None,
                created_at: Utc::now(),
                delivered_at: None,
            },
            url: "https://hooks.example.com/x".into(),
            secret: WebhookSecret::stored("whsec_test"),
        }
    }

    fn dispatcher(
        store: MockWebhookStore,
        sender: MockWebhookSender,
        clock: Arc<ManualClock>,
    ) -> Dispatcher {
        Dispatcher::new(
            Arc::new(store),
            Arc::new(sender),
            clock,
            DispatchSettings {
                max_attempts: 3,
                first_retry: Duration::from_secs(10),
                max_retry: Duration::from_secs(25),
                lease: Duration::from_secs(60),
            },
            "worker-1".into(),
        )
    }

    async fn attempt(attempts: u32, answer: Result<u16, SendError>) -> AttemptRecord {
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let now = clock.now();
        let mut store = MockWebhookStore::new();
        store
            .expect_claim_due()
            .times(1)
            .returning(move |_, _, _| Ok(Some(claimed(attempts))));
        store
            .expect_record_attempt()
            .times(1)
            .returning(|_, worker, _| Ok(worker == "worker-1"));
        let mut sender = MockWebhookSender::new();
        sender.expect_post().times(1).returning(move |request| {
            let signature = request
                .headers
                .iter()
                .find(|(name, _)| *name == SIGNATURE_HEADER)
                .map(|(_, value)| value.clone())
                .unwrap_or_default();
            assert!(verify(
                &WebhookSecret::stored("whsec_test"),
                &signature,
                request.body.as_bytes(),
                now,
                0
            ));
            answer.clone()
        });
        let (_, record) = dispatcher(store, sender, clock)
            .deliver_next()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.at, now);
        record
    }

    #[tokio::test]
    async fn a_2xx_answer_delivers() {
        let record = attempt(1, Ok(204)).await;
        assert_eq!(record.status, DeliveryStatus::Delivered);
        assert_eq!(record.status_code, Some(204));
        assert_eq!(record.next_attempt_at, None);
    }

    #[tokio::test]
    async fn other_answers_and_errors_retry_later_until_the_last_attempt() {
        let record = attempt(2, Ok(500)).await;
        assert_eq!(record.status, DeliveryStatus::Pending);
        assert_eq!(record.error.as_deref(), Some("the receiver answered 500"));
        assert_eq!(
            record.next_attempt_at,
            Some(record.at + chrono::Duration::seconds(20))
        );
        let record = attempt(1, Err(SendError("connection refused".into()))).await;
        assert_eq!(record.status, DeliveryStatus::Pending);
        assert_eq!(record.status_code, None);
        let record = attempt(3, Ok(410)).await;
        assert_eq!(record.status, DeliveryStatus::Failed);
        assert_eq!(record.next_attempt_at, None);
    }

    #[tokio::test]
    async fn nothing_due_sends_nothing() {
        let mut store = MockWebhookStore::new();
        store.expect_claim_due().returning(|_, _, _| Ok(None));
        let sender = MockWebhookSender::new();
        let clock = Arc::new(ManualClock::new(Utc::now()));
        assert!(
            dispatcher(store, sender, clock)
                .deliver_next()
                .await
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn retries_double_up_to_the_cap() {
        let (first, max) = (Duration::from_secs(10), Duration::from_secs(3600));
        let waits: Vec<u64> = (1..=10)
            .map(|n| retry_delay(n, first, max).as_secs())
            .collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600]);
        assert_eq!(retry_delay(u32::MAX, first, max), max);
    }
}
