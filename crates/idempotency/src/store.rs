use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId};

use crate::{Fingerprint, IdempotencyKey};

/// Whose key it is: keys of different principals never collide.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyOwner {
    pub organization_id: OrganizationId,
    /// The principal's subject (client id or user subject).
    pub principal: String,
}

/// A response as stored for replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    /// The headers worth replaying (content type, location), in order.
    pub headers: Vec<(String, String)>,
    /// `None` when the response was not storable (it carried a secret).
    pub body: Option<Vec<u8>>,
}

/// A key's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    pub fingerprint: Fingerprint,
    /// `None` while the first request is still running.
    pub response: Option<StoredResponse>,
    pub expires_at: DateTime<Utc>,
}

/// The outcome of claiming a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key was free (or expired): this request runs.
    Claimed,
    /// The key is taken by an unexpired record.
    Taken(StoredRecord),
}

/// Persistence of idempotency keys.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Atomically records an in-flight claim of `key` unless an unexpired record exists
    /// (an expired one is replaced); returns the existing record otherwise.
    async fn claim(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<Claim, DomainError>;

    /// Stores the response of a claimed key.
    async fn complete(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), DomainError>;

    /// Deletes a claim whose request failed in a way worth retrying.
    async fn release(&self, owner: &KeyOwner, key: &IdempotencyKey) -> Result<(), DomainError>;

    /// Deletes every record that expired before `now`; returns how many.
    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, DomainError>;
}
