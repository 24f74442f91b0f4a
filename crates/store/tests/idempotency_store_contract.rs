//! The `IdempotencyStore` contract, run against every adapter: SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, KeyOwner, StoredResponse,
};
use tessera_kernel::OrganizationId;
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Backend, Database, SqlIdempotencyStore, SqlOrganizationStore, testing::TestDatabase,
};

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456)
}

async fn owner(db: &Database, principal: &str) -> KeyOwner {
    let org = Organization {
        id: OrganizationId::generate(),
        name: "Acme".into(),
        plan: Plan::Pro,
        created_at: at(),
        updated_at: at(),
    };
    SqlOrganizationStore::new(db.clone())
        .insert(&org, &[])
        .await
        .unwrap();
    KeyOwner {
        organization_id: org.id,
        principal: principal.into(),
    }
}

fn key(text: &str) -> IdempotencyKey {
    IdempotencyKey::parse(text).unwrap()
}

fn created(body: Option<&[u8]>) -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("location".into(), "/v1/particles/par_1".into()),
        ],
        body: body.map(<[u8]>::to_vec),
    }
}

async fn a_claimed_key_is_taken_until_it_expires(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlIdempotencyStore::new(db.database.clone());
    let alice = owner(&db.database, "cli_alice").await;
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

async fn withheld_bodies_and_releases(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlIdempotencyStore::new(db.database.clone());
    let alice = owner(&db.database, "cli_alice").await;
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

async fn concurrent_claims_of_one_key_admit_exactly_one(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = Arc::new(SqlIdempotencyStore::new(db.database.clone()));
    let alice = owner(&db.database, "cli_alice").await;
    let fp = Fingerprint::of("POST", "/v1/particles", b"{}");
    let claims = (0..20).map(|_| {
        let (store, alice, fp) = (store.clone(), alice.clone(), fp.clone());
        tokio::spawn(async move {
            store
                .claim(&alice, &key("race"), &fp, at(), at() + Duration::hours(1))
                .await
                .unwrap()
        })
    });
    let mut claimed = 0;
    for claim in claims {
        if claim.await.unwrap() == Claim::Claimed {
            claimed += 1;
        }
    }
    assert_eq!(claimed, 1);
}

tessera_store::on_both_databases!(
    a_claimed_key_is_taken_until_it_expires,
    withheld_bodies_and_releases,
    concurrent_claims_of_one_key_admit_exactly_one,
);
