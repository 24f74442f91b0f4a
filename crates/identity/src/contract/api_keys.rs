//! The `ApiKeyStore` checks.

use chrono::Duration;
use tessera_kernel::{
    ActorKind, AuditRecord, DomainError, Limit, OrganizationId, PageRequest, ScopeSet,
};

use super::{ApiKeyStores, at};
use crate::{ApiKey, ApiKeyHash, ApiKeyId, StoredApiKey};

/// A fresh organization of `stores` (made to exist first: keys refer to it).
async fn organization(stores: &impl ApiKeyStores, name: &str) -> OrganizationId {
    let id = OrganizationId::generate();
    stores.organization_exists(&id, name).await;
    id
}

/// The secret hash [`key`] gives the key `id`: unique, and derived from the id so a check
/// can find a key by the hash it knows only the id of.
pub fn key_hash(id: &ApiKeyId) -> ApiKeyHash {
    ApiKeyHash(format!("{:0>64}", id.as_str().trim_start_matches("key_")))
}

/// An active, never used key of `organization` expiring in 30 days, with two scopes.
pub fn key(organization: &OrganizationId, name: &str) -> StoredApiKey {
    let id = ApiKeyId::generate();
    StoredApiKey {
        secret_hash: key_hash(&id),
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

/// The audit record of creating `key`.
pub fn key_created(key: &StoredApiKey) -> AuditRecord {
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
pub fn key_changed(organization: &OrganizationId) -> AuditRecord {
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

pub async fn inserted_keys_are_found_by_their_hash(stores: &impl ApiKeyStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let bot = key(&acme, "Bot – Ünïcode ✓");
    store.insert(&bot, &key_created(&bot)).await.unwrap();
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
    store.insert(&bare, &key_created(&bare)).await.unwrap();
    assert_eq!(
        store.find_by_hash(&bare.secret_hash).await.unwrap(),
        Some(bare)
    );
}

pub async fn key_hashes_and_ids_are_unique(stores: &impl ApiKeyStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let first = key(&acme, "first");
    store.insert(&first, &key_created(&first)).await.unwrap();
    let mut second = key(&acme, "second");
    second.secret_hash = first.secret_hash.clone();
    let refused = store
        .insert(&second, &key_created(&second))
        .await
        .unwrap_err();
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
    let again = store
        .insert(&first, &key_created(&first))
        .await
        .unwrap_err();
    assert!(matches!(again, DomainError::Conflict { .. }), "{again:?}");
}

pub async fn get_list_and_count_are_tenant_scoped_and_skip_revoked_keys(
    stores: &impl ApiKeyStores,
) {
    let acme = organization(stores, "Acme").await;
    let globex = organization(stores, "Globex").await;
    let store = stores.store();
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..5 {
        let ours = key(&acme, &format!("key {i}"));
        store.insert(&ours, &key_created(&ours)).await.unwrap();
        mine.push(ours.key);
        if i % 2 == 0 {
            let other = key(&globex, &format!("other {i}"));
            store.insert(&other, &key_created(&other)).await.unwrap();
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
            .revoke(&globex, &mine[1].id, later, &key_changed(&globex))
            .await
            .unwrap()
    );
    assert!(
        store
            .revoke(&acme, &mine[1].id, later, &key_changed(&acme))
            .await
            .unwrap()
    );
    assert!(
        !store
            .revoke(&acme, &mine[1].id, later, &key_changed(&acme))
            .await
            .unwrap(),
        "revoked once"
    );
    assert!(
        !store
            .revoke(&acme, &ApiKeyId::generate(), later, &key_changed(&acme))
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
    let found = store
        .find_by_hash(&key_hash(&mine[1].id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.key.revoked_at, Some(later));
}

pub async fn last_use_is_written_at_most_once_per_interval(stores: &impl ApiKeyStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let bot = key(&acme, "bot");
    store.insert(&bot, &key_created(&bot)).await.unwrap();
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
pub async fn concurrent_touches_write_once(stores: &impl ApiKeyStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let bot = key(&acme, "bot");
    store.insert(&bot, &key_created(&bot)).await.unwrap();
    let now = at() + Duration::hours(2);
    let stale_before = now - Duration::seconds(60);
    let written =
        futures_util::future::join_all((0..4).map(|_| store.touch(&bot.key.id, now, stale_before)))
            .await;
    let written = written.into_iter().filter(|w| *w.as_ref().unwrap()).count();
    assert_eq!(written, 1);
}
