use std::{sync::Arc, time::Duration};

use tessera_kernel::{Clock, DomainError};

use crate::{Claim, Fingerprint, IdempotencyKey, IdempotencyStore, KeyOwner, StoredResponse};

/// Why a request with a key does not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The key was used for a different request.
    #[error("this Idempotency-Key was used for a different request; use a new key")]
    Mismatch,
    /// The first request with the key is still running.
    #[error("a request with this Idempotency-Key is still being processed; retry later")]
    InFlight,
    /// The first request succeeded but its response carried a secret and was not stored.
    #[error(
        "the request with this Idempotency-Key was processed, but its response held a secret and is not stored"
    )]
    Withheld(StoredResponse),
}

/// What to do with a request that carries a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// Run it, then `finish` (or `abandon`) the key.
    Proceed,
    /// Answer with the stored response.
    Replay(StoredResponse),
    Refuse(Refusal),
}

/// Applies the idempotency rules over a store.
#[derive(Clone)]
pub struct IdempotencyService {
    store: Arc<dyn IdempotencyStore>,
    clock: Arc<dyn Clock>,
    retention: Duration,
}

impl IdempotencyService {
    pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

    pub fn new(
        store: Arc<dyn IdempotencyStore>,
        clock: Arc<dyn Clock>,
        retention: Duration,
    ) -> Self {
        Self {
            store,
            clock,
            retention,
        }
    }

    pub async fn begin(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
    ) -> Result<Begin, DomainError> {
        let now = self.clock.now();
        let retention = chrono::Duration::from_std(self.retention)
            .map_err(|e| DomainError::internal(format!("idempotency retention: {e}")))?;
        match self
            .store
            .claim(owner, key, fingerprint, now, now + retention)
            .await?
        {
            Claim::Claimed => Ok(Begin::Proceed),
            Claim::Taken(record) if &record.fingerprint != fingerprint => {
                Ok(Begin::Refuse(Refusal::Mismatch))
            }
            Claim::Taken(record) => Ok(match record.response {
                None => Begin::Refuse(Refusal::InFlight),
                Some(response) if response.body.is_none() => {
                    Begin::Refuse(Refusal::Withheld(response))
                }
                Some(response) => Begin::Replay(response),
            }),
        }
    }

    /// Stores the response of a request that ran. Server errors and rate-limit refusals
    /// are not stored: the key is released so a retry runs again.
    pub async fn finish(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        response: StoredResponse,
    ) -> Result<(), DomainError> {
        if response.status >= 500 || response.status == 429 {
            return self.store.release(owner, key).await;
        }
        self.store.complete(owner, key, &response).await
    }

    /// Releases the key of a request that failed before producing a response.
    pub async fn abandon(&self, owner: &KeyOwner, key: &IdempotencyKey) -> Result<(), DomainError> {
        self.store.release(owner, key).await
    }

    pub async fn purge_expired(&self) -> Result<u64, DomainError> {
        self.store.purge_expired(self.clock.now()).await
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use mockall::predicate::always;
    use tessera_kernel::{ManualClock, OrganizationId};

    use super::*;
    use crate::{MockIdempotencyStore, StoredRecord};

    fn owner() -> KeyOwner {
        KeyOwner {
            organization_id: OrganizationId::generate(),
            principal: "cli_x".into(),
        }
    }

    fn service(store: MockIdempotencyStore) -> IdempotencyService {
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap());
        IdempotencyService::new(
            Arc::new(store),
            Arc::new(clock),
            IdempotencyService::DEFAULT_RETENTION,
        )
    }

    fn taken(fingerprint: &Fingerprint, response: Option<StoredResponse>) -> Claim {
        Claim::Taken(StoredRecord {
            fingerprint: fingerprint.clone(),
            response,
            expires_at: Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).unwrap(),
        })
    }

    fn created(body: Option<&[u8]>) -> StoredResponse {
        StoredResponse {
            status: 201,
            headers: vec![("location".into(), "/v1/particles/par_1".into())],
            body: body.map(<[u8]>::to_vec),
        }
    }

    #[tokio::test]
    async fn claims_expire_after_the_retention_period() {
        let mut store = MockIdempotencyStore::new();
        store
            .expect_claim()
            .withf(|_, _, _, now, expires| *expires - *now == chrono::Duration::hours(24))
            .return_once(|_, _, _, _, _| Ok(Claim::Claimed));
        let key = IdempotencyKey::parse("k").unwrap();
        let fp = Fingerprint::of("POST", "/v1/particles", b"{}");
        assert_eq!(
            service(store).begin(&owner(), &key, &fp).await,
            Ok(Begin::Proceed)
        );
    }

    #[tokio::test]
    async fn a_taken_key_replays_refuses_or_withholds() {
        let fp = Fingerprint::of("POST", "/v1/particles", b"{}");
        let other = Fingerprint::of("POST", "/v1/particles", b"{\"a\":1}");
        let cases = [
            (
                taken(&fp, Some(created(Some(b"{}")))),
                Begin::Replay(created(Some(b"{}"))),
            ),
            (taken(&fp, None), Begin::Refuse(Refusal::InFlight)),
            (
                taken(&other, Some(created(Some(b"{}")))),
                Begin::Refuse(Refusal::Mismatch),
            ),
            (
                taken(&fp, Some(created(None))),
                Begin::Refuse(Refusal::Withheld(created(None))),
            ),
        ];
        for (claim, expected) in cases {
            let mut store = MockIdempotencyStore::new();
            store
                .expect_claim()
                .return_once(move |_, _, _, _, _| Ok(claim));
            let key = IdempotencyKey::parse("k").unwrap();
            assert_eq!(
                service(store).begin(&owner(), &key, &fp).await,
                Ok(expected)
            );
        }
    }

    #[tokio::test]
    async fn server_errors_release_the_key_and_other_answers_are_stored() {
        let key = IdempotencyKey::parse("k").unwrap();
        let mut store = MockIdempotencyStore::new();
        store.expect_release().times(2).returning(|_, _| Ok(()));
        store
            .expect_complete()
            .with(always(), always(), always())
            .times(2)
            .returning(|_, _, _| Ok(()));
        let service = service(store);
        for status in [503, 429] {
            let response = StoredResponse {
                status,
                headers: vec![],
                body: Some(vec![]),
            };
            service.finish(&owner(), &key, response).await.unwrap();
        }
        for status in [201, 422] {
            let response = StoredResponse {
                status,
                headers: vec![],
                body: Some(vec![]),
            };
            service.finish(&owner(), &key, response).await.unwrap();
        }
    }
}
