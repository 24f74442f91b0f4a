//! The in-memory [`IdempotencyStore`]: the port's reference implementation (the contract
//! suite runs against it as against the SQL stores), for tests.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::DomainError;

use crate::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, KeyOwner, StoredRecord, StoredResponse,
};

/// A key is one owner's: the same text of another principal is another key.
type Slot = (KeyOwner, IdempotencyKey);

#[derive(Default)]
pub struct InMemoryIdempotencyStore {
    records: Mutex<HashMap<Slot, StoredRecord>>,
}

impl InMemoryIdempotencyStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<Slot, StoredRecord>) -> T) -> T {
        f(&mut self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

fn slot(owner: &KeyOwner, key: &IdempotencyKey) -> Slot {
    (owner.clone(), key.clone())
}

#[async_trait]
impl IdempotencyStore for InMemoryIdempotencyStore {
    async fn claim(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<Claim, DomainError> {
        // One lock around the look and the insert: of concurrent claims exactly one wins.
        Ok(self.with(|records| {
            let slot = slot(owner, key);
            match records.get(&slot) {
                // As the SQL stores: a record is expired from its `expires_at` on.
                Some(existing) if existing.expires_at > now => Claim::Taken(existing.clone()),
                _ => {
                    let claim = StoredRecord {
                        fingerprint: fingerprint.clone(),
                        response: None,
                        expires_at,
                    };
                    records.insert(slot, claim);
                    Claim::Claimed
                }
            }
        }))
    }

    async fn complete(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), DomainError> {
        self.with(|records| {
            if let Some(record) = records.get_mut(&slot(owner, key)) {
                record.response = Some(response.clone());
            }
        });
        Ok(())
    }

    async fn release(&self, owner: &KeyOwner, key: &IdempotencyKey) -> Result<(), DomainError> {
        self.with(|records| {
            let slot = slot(owner, key);
            // Only an in-flight claim: a stored response stays replayable.
            if records
                .get(&slot)
                .is_some_and(|record| record.response.is_none())
            {
                records.remove(&slot);
            }
        });
        Ok(())
    }

    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, DomainError> {
        Ok(self.with(|records| {
            let count = records.len();
            records.retain(|_, record| record.expires_at >= now);
            (count - records.len()) as u64
        }))
    }
}
