//! The `IdempotencyStore` contract, for anyone implementing the port: each function checks
//! promises of the trait against a fresh, empty store (an [`IdempotencyStores`]), and
//! [`idempotency_store_contract!`](crate::idempotency_store_contract) turns them into tests.
//! Tessera runs it against the in-memory reference (`crate::memory`) and both SQL stores.
// Test support: a broken promise is a failed assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_kernel::OrganizationId;

use crate::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, KeyOwner, StoredResponse,
    memory::InMemoryIdempotencyStore,
};

/// Runs every check of the contract as a `#[tokio::test]` of the calling crate, each on its
/// own store made by `$factory`: an expression that, called with no argument, gives a
/// future of `(stores, guard)`, `stores` an
/// [`IdempotencyStores`](crate::contract::IdempotencyStores) (the guard, e.g. a throwaway
/// database, lives until the test ends).
#[macro_export]
macro_rules! idempotency_store_contract {
    ($factory:expr) => {
        $crate::__tessera_kernel::contract_checks!($factory, $crate;
            a_claimed_key_is_taken_until_it_expires,
            withheld_bodies_and_releases,
            concurrent_claims_of_one_key_admit_exactly_one,
        );
    };
}

/// What the checks run on: an idempotency store over one empty state, and a way to make an
/// organization exist before keys refer to it (where foreign keys need it).
#[async_trait]
pub trait IdempotencyStores: Send + Sync {
    /// Shared, so that concurrent claims can run on spawned tasks.
    fn store(&self) -> Arc<dyn IdempotencyStore>;

    /// Makes the organization `id` (named `name`) exist, e.g. stores it where keys refer to
    /// it; nothing for stores that keep no organizations. Panics if it cannot.
    async fn organization_exists(&self, id: &OrganizationId, name: &str);
}

/// The in-memory reference, which keeps no organizations.
#[async_trait]
impl IdempotencyStores for Arc<InMemoryIdempotencyStore> {
    fn store(&self) -> Arc<dyn IdempotencyStore> {
        self.clone()
    }

    async fn organization_exists(&self, _id: &OrganizationId, _name: &str) {}
}

/// An instant of microsecond precision, as the domain's clock produces.
pub fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456)
}

/// `principal` of a fresh organization (made to exist first: keys refer to it).
async fn owner(stores: &impl IdempotencyStores, principal: &str) -> KeyOwner {
    let organization_id = OrganizationId::generate();
    stores.organization_exists(&organization_id, "Acme").await;
    KeyOwner {
        organization_id,
        principal: principal.into(),
    }
}

pub fn key(text: &str) -> IdempotencyKey {
    IdempotencyKey::parse(text).unwrap()
}

/// A `201 Created` response with headers, and `body` (`None`: withheld).
pub fn created(body: Option<&[u8]>) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("location".into(), "/v1/particles/par_1".into()),
        ],
        body: body.map(<[u8]>::to_vec),
    }
}

pub async fn a_claimed_key_is_taken_until_it_expires(stores: &impl IdempotencyStores) {
    let store = stores.store();
    let alice = owner(stores, "cli_alice").await;
    let fp = Fingerprint::of("POST", "/v1/particles", b"{}");
    let expires = at() + Duration::hours(24);
    assert_eq!(
        store
            .claim(&alice, &key("k1"), &fp, at(), expires)
            .await
            .unwrap(),
        Claim::Claimed
    );
    let Claim::Taken(running) = store
        .claim(&alice, &key("k1"), &fp, at(), expires)
        .await
        .unwrap()
    else {
        panic!("the key should be taken");
    };
    assert_eq!(
        (running.fingerprint, running.response, running.expires_at),
        (fp.clone(), None, expires)
    );

    store
        .complete(&alice, &key("k1"), &created(Some(b"{\"id\":1}")))
        .await
        .unwrap();
    let Claim::Taken(done) = store
        .claim(&alice, &key("k1"), &fp, at(), expires)
        .await
        .unwrap()
    else {
        panic!("the key should be taken");
    };
    assert_eq!(done.response, Some(created(Some(b"{\"id\":1}"))));

    // Another principal's key of the same name is independent.
    let bob = KeyOwner {
        principal: "cli_bob".into(),
        ..alice.clone()
    };
    assert_eq!(
        store
            .claim(&bob, &key("k1"), &fp, at(), expires)
            .await
            .unwrap(),
        Claim::Claimed
    );

    // After expiry the key is free again, and purging removes what expired.
    let later = expires + Duration::seconds(1);
    assert_eq!(
        store
            .claim(&alice, &key("k1"), &fp, later, later + Duration::hours(24))
            .await
            .unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        store.purge_expired(later).await.unwrap(),
        1,
        "bob's record expired"
    );
    assert_eq!(store.purge_expired(later).await.unwrap(), 0);
}

pub async fn withheld_bodies_and_releases(stores: &impl IdempotencyStores) {
    let store = stores.store();
    let alice = owner(stores, "cli_alice").await;
    let fp = Fingerprint::of("POST", "/v1/clients", b"{}");
    let expires = at() + Duration::hours(1);
    store
        .claim(&alice, &key("secret"), &fp, at(), expires)
        .await
        .unwrap();
    store
        .complete(&alice, &key("secret"), &created(None))
        .await
        .unwrap();
    let Claim::Taken(record) = store
        .claim(&alice, &key("secret"), &fp, at(), expires)
        .await
        .unwrap()
    else {
        panic!("taken");
    };
    assert_eq!(record.response, Some(created(None)));

    // Releasing frees an in-flight claim but never a completed one.
    store
        .claim(&alice, &key("retry"), &fp, at(), expires)
        .await
        .unwrap();
    store.release(&alice, &key("retry")).await.unwrap();
    assert_eq!(
        store
            .claim(&alice, &key("retry"), &fp, at(), expires)
            .await
            .unwrap(),
        Claim::Claimed
    );
    store.release(&alice, &key("secret")).await.unwrap();
    assert!(matches!(
        store
            .claim(&alice, &key("secret"), &fp, at(), expires)
            .await
            .unwrap(),
        Claim::Taken(_)
    ));
}

pub async fn concurrent_claims_of_one_key_admit_exactly_one(stores: &impl IdempotencyStores) {
    let store = stores.store();
    let alice = owner(stores, "cli_alice").await;
    let fp = Fingerprint::of("POST", "/v1/particles", b"{}");
    // Collected before any is awaited, so that the claims run at the same time.
    let claims: Vec<_> = (0..20)
        .map(|_| {
            let (store, alice, fp) = (store.clone(), alice.clone(), fp.clone());
            tokio::spawn(async move {
                store
                    .claim(&alice, &key("race"), &fp, at(), at() + Duration::hours(1))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut claimed = 0;
    for claim in claims {
        if claim.await.unwrap() == Claim::Claimed {
            claimed += 1;
        }
    }
    assert_eq!(claimed, 1);
}
