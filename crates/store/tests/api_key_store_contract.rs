//! The `ApiKeyStore` contract, run against every adapter: SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use tessera_identity::{ApiKey, ApiKeyHash, ApiKeyId, ApiKeyStore, StoredApiKey};
use tessera_kernel::{
    ActorKind, AuditRecord, DomainError, Limit, OrganizationId, PageRequest, ScopeSet,
};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_store::{
    Backend, Database, SqlApiKeyStore, SqlOrganizationStore,
    testing::{TestDatabase, text_rows},
};

/// Microsecond precision, as the domain's clock produces.
fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::microseconds(123_456)
}

async fn organization(db: &Database, name: &str) -> OrganizationId {
    let org = Organization {
        id: OrganizationId::generate(),
        name: name.to_owned(),
        plan: Plan::Pro,
        created_at: at(),
        updated_at: at(),
    };
    SqlOrganizationStore::new(db.clone())
        .insert(&org, &[])
        .await
        .unwrap();
    org.id
}

/// The audit record of creating `key`.
fn audited(key: &StoredApiKey) -> AuditRecord {
    AuditRecord::by_operator(
        &key.key.organization_id,
        ActorKind::Operator,
        "ops",
        "api_key.create",
        "api_key",
        key.key.id.as_str(),
        at(),
    )
}

/// The audit record of a change to a key of `organization`.
fn change(organization: &OrganizationId) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        "api_key.revoke",
        "api_key",
        "key_x",
        at(),
    )
}

async fn changes_and_their_audit_records_commit_together(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let events = || {
        text_rows(
            &db.database,
            "SELECT action || ' ' || resource_id AS value FROM audit_events ORDER BY id",
        )
    };
    let bot = key(&acme, "bot");
    store.insert(&bot, &audited(&bot)).await.unwrap();
    let created = format!("api_key.create {}", bot.key.id);
    assert_eq!(events().await, std::slice::from_ref(&created));
    // A refused insert (the same hash again) leaves no event, nor does revoking nothing.
    let mut twin = key(&acme, "twin");
    twin.secret_hash = bot.secret_hash.clone();
    assert!(store.insert(&twin, &audited(&twin)).await.is_err());
    assert!(
        !store
            .revoke(&acme, &ApiKeyId::generate(), at(), &change(&acme))
            .await
            .unwrap()
    );
    assert_eq!(events().await, std::slice::from_ref(&created));
    // A refused event undoes the change it records.
    let stray = change(&OrganizationId::generate());
    assert!(
        store
            .revoke(&acme, &bot.key.id, at(), &stray)
            .await
            .is_err()
    );
    assert!(
        store.get(&acme, &bot.key.id).await.unwrap().is_some(),
        "still active"
    );
    assert!(
        store
            .revoke(&acme, &bot.key.id, at(), &change(&acme))
            .await
            .unwrap()
    );
    assert_eq!(events().await, [created, "api_key.revoke key_x".to_owned()]);
}

fn key(organization: &OrganizationId, name: &str) -> StoredApiKey {
    let id = ApiKeyId::generate();
    StoredApiKey {
        secret_hash: ApiKeyHash(format!("{:0>64}", id.as_str().trim_start_matches("key_"))),
        key: ApiKey {
            id,
            organization_id: organization.clone(),
            name: name.to_owned(),
            scopes: ScopeSet::parse_list("chat:invoke models:read").unwrap(),
            created_by: "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".to_owned(),
            expires_at: Some(at() + Duration::days(30) + Duration::microseconds(1)),
            last_used_at: None,
            revoked_at: None,
            created_at: at(),
        },
    }
}

async fn inserted_keys_are_found_by_their_hash(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let bot = key(&acme, "Bot – Ünïcode ✓");
    store.insert(&bot, &audited(&bot)).await.unwrap();
    assert_eq!(
        store.find_by_hash(&bot.secret_hash).await.unwrap(),
        Some(bot.clone())
    );
    assert_eq!(
        store.get(&acme, &bot.key.id).await.unwrap(),
        Some(bot.key.clone())
    );
    assert_eq!(
        store
            .find_by_hash(&ApiKeyHash("0".repeat(64)))
            .await
            .unwrap(),
        None
    );

    // No expiry, no scopes and a last use read back unchanged too.
    let mut bare = key(&acme, "bare");
    bare.key.scopes = ScopeSet::default();
    bare.key.expires_at = None;
    bare.key.last_used_at = Some(at() + Duration::microseconds(42));
    store.insert(&bare, &audited(&bare)).await.unwrap();
    assert_eq!(
        store.find_by_hash(&bare.secret_hash).await.unwrap(),
        Some(bare)
    );
}

async fn hashes_are_unique(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let first = key(&acme, "first");
    store.insert(&first, &audited(&first)).await.unwrap();
    let mut second = key(&acme, "second");
    second.secret_hash = first.secret_hash.clone();
    let refused = store.insert(&second, &audited(&second)).await.unwrap_err();
    assert!(
        matches!(
            refused,
            DomainError::Conflict {
                code: "already_exists",
                ..
            }
        ),
        "{refused:?}"
    );
    let again = store.insert(&first, &audited(&first)).await.unwrap_err();
    assert!(matches!(again, DomainError::Conflict { .. }), "{again:?}");
}

async fn get_list_and_count_are_tenant_scoped_and_skip_revoked_keys(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let globex = organization(&db.database, "Globex").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..5 {
        let ours = key(&acme, &format!("key {i}"));
        store.insert(&ours, &audited(&ours)).await.unwrap();
        mine.push(ours.key);
        if i % 2 == 0 {
            let other = key(&globex, &format!("other {i}"));
            store.insert(&other, &audited(&other)).await.unwrap();
            theirs.push(other.key);
        }
    }
    assert_eq!(store.get(&globex, &mine[0].id).await.unwrap(), None);
    assert_eq!(store.get(&acme, &ApiKeyId::generate()).await.unwrap(), None);

    let limit = Limit::new(2).unwrap();
    let first = store.list(&acme, &PageRequest::first(limit)).await.unwrap();
    assert_eq!(first, mine[..3], "a page fetches one extra row");
    let second = store
        .list(
            &acme,
            &PageRequest {
                limit,
                after: Some(mine[1].id.clone()),
            },
        )
        .await
        .unwrap();
    assert_eq!(second, mine[2..5]);
    assert_eq!(
        store
            .list(&globex, &PageRequest::first(Limit::DEFAULT))
            .await
            .unwrap(),
        theirs
    );
    assert_eq!(store.count(&acme).await.unwrap(), 5);
    assert_eq!(store.count(&globex).await.unwrap(), 3);

    // A revoked key is neither read nor listed nor counted; authentication still finds its
    // row (to refuse it), and other organizations cannot revoke it.
    let later = at() + Duration::hours(1) + Duration::microseconds(3);
    assert!(
        !store
            .revoke(&globex, &mine[1].id, later, &change(&globex))
            .await
            .unwrap()
    );
    assert!(
        store
            .revoke(&acme, &mine[1].id, later, &change(&acme))
            .await
            .unwrap()
    );
    assert!(
        !store
            .revoke(&acme, &mine[1].id, later, &change(&acme))
            .await
            .unwrap(),
        "revoked once"
    );
    assert!(
        !store
            .revoke(&acme, &ApiKeyId::generate(), later, &change(&acme))
            .await
            .unwrap()
    );
    assert_eq!(store.get(&acme, &mine[1].id).await.unwrap(), None);
    assert_eq!(store.count(&acme).await.unwrap(), 4);
    let listed = store
        .list(&acme, &PageRequest::first(Limit::DEFAULT))
        .await
        .unwrap();
    assert!(listed.iter().all(|k| k.id != mine[1].id));
    let hash = ApiKeyHash(format!(
        "{:0>64}",
        mine[1].id.as_str().trim_start_matches("key_")
    ));
    let found = store.find_by_hash(&hash).await.unwrap().unwrap();
    assert_eq!(found.key.revoked_at, Some(later));
}

async fn last_use_is_written_at_most_once_per_interval(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let bot = key(&acme, "bot");
    store.insert(&bot, &audited(&bot)).await.unwrap();
    let minute = Duration::seconds(60);
    let first = at() + Duration::hours(1) + Duration::microseconds(9);
    assert!(
        store
            .touch(&bot.key.id, first, first - minute)
            .await
            .unwrap()
    );
    let soon = first + Duration::seconds(20);
    assert!(
        !store.touch(&bot.key.id, soon, soon - minute).await.unwrap(),
        "used 20 s ago: not written again"
    );
    let read = || async {
        store
            .get(&acme, &bot.key.id)
            .await
            .unwrap()
            .unwrap()
            .last_used_at
    };
    assert_eq!(read().await, Some(first));
    let later = first + Duration::seconds(61);
    assert!(
        store
            .touch(&bot.key.id, later, later - minute)
            .await
            .unwrap()
    );
    assert_eq!(read().await, Some(later));
    assert!(
        !store
            .touch(&ApiKeyId::generate(), later, later - minute)
            .await
            .unwrap()
    );
}

/// Racing replicas (concurrent touches of one stale key) write it once.
async fn concurrent_touches_write_once(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let bot = key(&acme, "bot");
    store.insert(&bot, &audited(&bot)).await.unwrap();
    let now = at() + Duration::hours(2);
    let stale_before = now - Duration::seconds(60);
    let written =
        futures_util::future::join_all((0..4).map(|_| store.touch(&bot.key.id, now, stale_before)))
            .await;
    let written = written.into_iter().filter(|w| *w.as_ref().unwrap()).count();
    assert_eq!(written, 1);
}

async fn keys_need_an_existing_organization(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let orphan = key(&OrganizationId::generate(), "orphan");
    assert!(store.insert(&orphan, &audited(&orphan)).await.is_err());
    assert_eq!(store.find_by_hash(&orphan.secret_hash).await.unwrap(), None);
}

/// The table holds the hash it was given and nothing else that could be the secret.
async fn the_row_holds_what_it_was_given(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let acme = organization(&db.database, "Acme").await;
    let store = SqlApiKeyStore::new(db.database.clone());
    let bot = key(&acme, "bot");
    store.insert(&bot, &audited(&bot)).await.unwrap();
    let rows = text_rows(
        &db.database,
        "SELECT id || ' ' || name || ' ' || scopes || ' ' || secret_hash || ' ' || created_by AS value FROM api_keys",
    )
    .await;
    assert_eq!(
        rows,
        [format!(
            "{} bot chats:invoke models:read {} cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
            bot.key.id, bot.secret_hash.0
        )]
    );
}

tessera_store::on_both_databases!(
    changes_and_their_audit_records_commit_together,
    inserted_keys_are_found_by_their_hash,
    hashes_are_unique,
    get_list_and_count_are_tenant_scoped_and_skip_revoked_keys,
    last_use_is_written_at_most_once_per_interval,
    concurrent_touches_write_once,
    keys_need_an_existing_organization,
    the_row_holds_what_it_was_given,
);
