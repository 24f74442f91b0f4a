//! The `ClientStore` checks.

use chrono::Duration;
use tessera_kernel::{
    ActorKind, AuditRecord, DomainError, Limit, OrganizationId, PageRequest, ScopeSet,
};

use super::{ClientStores, at};
use crate::{Client, ClientId, SecretHash, StoredClient};

/// A fresh organization of `stores` (made to exist first: clients refer to it).
async fn organization(stores: &impl ClientStores, name: &str) -> OrganizationId {
    let id = OrganizationId::generate();
    stores.organization_exists(&id, name).await;
    id
}

/// An active client of `organization` at its first secret generation, with a few scopes.
pub fn client(organization: &OrganizationId, name: &str) -> StoredClient {
    StoredClient {
        client: Client {
            id: ClientId::generate(),
            organization_id: organization.clone(),
            name: name.to_owned(),
            scopes: ScopeSet::parse_list("files:read chat:invoke models:read").unwrap(),
            secret_generation: 1,
            revoked_at: None,
            created_at: at(),
            updated_at: at() + Duration::seconds(1),
        },
        secret_hash: SecretHash(format!("$argon2id$v=19$m=19456,t=2,p=1$salt${name}")),
    }
}

/// The audit record of creating `client`.
pub fn client_created(client: &StoredClient) -> AuditRecord {
    AuditRecord::by_operator(
        &client.client.organization_id,
        ActorKind::Operator,
        "ops",
        "client.create",
        "client",
        client.client.id.as_str(),
        at(),
    )
}

/// The audit record of a change to a client of `organization`.
pub fn client_changed(organization: &OrganizationId) -> AuditRecord {
    AuditRecord::by_operator(
        organization,
        ActorKind::Operator,
        "ops",
        "client.revoke",
        "client",
        "cli_x",
        at(),
    )
}

pub async fn inserted_clients_authenticate_with_their_hash(stores: &impl ClientStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let ci = client(&acme, "CI – Ünïcode ✓");
    store.insert(&ci, &client_created(&ci)).await.unwrap();
    assert_eq!(
        store.find_for_authentication(&ci.client.id).await.unwrap(),
        Some(ci.clone())
    );
    assert_eq!(
        store.get(&acme, &ci.client.id).await.unwrap(),
        Some(ci.client.clone())
    );
    assert_eq!(
        store
            .find_for_authentication(&ClientId::generate())
            .await
            .unwrap(),
        None
    );

    // No scopes, a later generation and a revocation read back unchanged too.
    let mut bare = client(&acme, "bare");
    bare.client.scopes = ScopeSet::default();
    bare.client.secret_generation = 7;
    bare.client.revoked_at = Some(at() + Duration::microseconds(42));
    store.insert(&bare, &client_created(&bare)).await.unwrap();
    assert_eq!(
        store
            .find_for_authentication(&bare.client.id)
            .await
            .unwrap(),
        Some(bare)
    );
}

pub async fn client_get_is_tenant_scoped(stores: &impl ClientStores) {
    let acme = organization(stores, "Acme").await;
    let globex = organization(stores, "Globex").await;
    let store = stores.store();
    let ci = client(&acme, "ci");
    store.insert(&ci, &client_created(&ci)).await.unwrap();
    assert_eq!(store.get(&globex, &ci.client.id).await.unwrap(), None);
    assert_eq!(store.get(&acme, &ClientId::generate()).await.unwrap(), None);
    assert_eq!(
        store.get(&acme, &ci.client.id).await.unwrap(),
        Some(ci.client)
    );
}

pub async fn client_list_is_tenant_scoped_ordered_and_paged(stores: &impl ClientStores) {
    let acme = organization(stores, "Acme").await;
    let globex = organization(stores, "Globex").await;
    let store = stores.store();
    let mut created = Vec::new();
    let mut others = Vec::new();
    for i in 0..5 {
        let mine = client(&acme, &format!("client {i}"));
        store.insert(&mine, &client_created(&mine)).await.unwrap();
        created.push(mine.client);
        // Interleaved clients of another organization never show up.
        if i % 2 == 0 {
            let theirs = client(&globex, &format!("other {i}"));
            store
                .insert(&theirs, &client_created(&theirs))
                .await
                .unwrap();
            others.push(theirs.client);
        }
    }
    let limit = Limit::new(2).unwrap();
    let first = store.list(&acme, &PageRequest::first(limit)).await.unwrap();
    assert_eq!(
        first,
        created[..3],
        "a page fetches one extra row to tell whether more exist"
    );
    let second = store
        .list(
            &acme,
            &PageRequest {
                limit,
                after: Some(created[1].id.clone()),
            },
        )
        .await
        .unwrap();
    assert_eq!(second, created[2..5]);
    let last = store
        .list(
            &acme,
            &PageRequest {
                limit,
                after: Some(created[4].id.clone()),
            },
        )
        .await
        .unwrap();
    assert!(last.is_empty());
    let theirs = store
        .list(&globex, &PageRequest::first(Limit::DEFAULT))
        .await
        .unwrap();
    assert_eq!(theirs, others);
    assert_eq!(store.count(&acme).await.unwrap(), 5);
    assert_eq!(store.count(&globex).await.unwrap(), 3);
    assert_eq!(store.count(&OrganizationId::generate()).await.unwrap(), 0);
}

pub async fn replace_secret_changes_only_active_clients_of_the_organization(
    stores: &impl ClientStores,
) {
    let acme = organization(stores, "Acme").await;
    let globex = organization(stores, "Globex").await;
    let store = stores.store();
    let ci = client(&acme, "ci");
    store.insert(&ci, &client_created(&ci)).await.unwrap();
    let new_hash = SecretHash("$argon2id$v=19$m=19456,t=2,p=1$salt$rotated".into());
    let later = at() + Duration::minutes(5) + Duration::microseconds(7);

    assert!(
        !store
            .replace_secret(
                &globex,
                &ci.client.id,
                &new_hash,
                2,
                later,
                &client_changed(&globex)
            )
            .await
            .unwrap(),
        "another organization's client is not found"
    );
    assert_eq!(
        store.find_for_authentication(&ci.client.id).await.unwrap(),
        Some(ci.clone())
    );

    assert!(
        store
            .replace_secret(
                &acme,
                &ci.client.id,
                &new_hash,
                2,
                later,
                &client_changed(&acme)
            )
            .await
            .unwrap()
    );
    let mut expected = ci.clone();
    expected.secret_hash = new_hash.clone();
    expected.client.secret_generation = 2;
    expected.client.updated_at = later;
    assert_eq!(
        store.find_for_authentication(&ci.client.id).await.unwrap(),
        Some(expected.clone())
    );

    assert!(
        !store
            .replace_secret(
                &acme,
                &ClientId::generate(),
                &new_hash,
                2,
                later,
                &client_changed(&acme)
            )
            .await
            .unwrap()
    );

    assert!(
        store
            .revoke(&acme, &ci.client.id, later, &client_changed(&acme))
            .await
            .unwrap()
    );
    let after_revocation = store.find_for_authentication(&ci.client.id).await.unwrap();
    let newer_hash = SecretHash("$argon2id$v=19$m=19456,t=2,p=1$salt$newer".into());
    assert!(
        !store
            .replace_secret(
                &acme,
                &ci.client.id,
                &newer_hash,
                3,
                later + Duration::seconds(1),
                &client_changed(&acme)
            )
            .await
            .unwrap(),
        "a revoked client keeps its secret"
    );
    assert_eq!(
        store.find_for_authentication(&ci.client.id).await.unwrap(),
        after_revocation
    );
}

pub async fn client_revocation_is_tenant_scoped_and_happens_once(stores: &impl ClientStores) {
    let acme = organization(stores, "Acme").await;
    let globex = organization(stores, "Globex").await;
    let store = stores.store();
    let ci = client(&acme, "ci");
    store.insert(&ci, &client_created(&ci)).await.unwrap();
    let revoked = at() + Duration::hours(1) + Duration::microseconds(1);

    assert!(
        !store
            .revoke(&globex, &ci.client.id, revoked, &client_changed(&globex))
            .await
            .unwrap()
    );
    assert!(
        store
            .get(&acme, &ci.client.id)
            .await
            .unwrap()
            .unwrap()
            .is_active()
    );

    assert!(
        store
            .revoke(&acme, &ci.client.id, revoked, &client_changed(&acme))
            .await
            .unwrap()
    );
    let mut expected = ci.client.clone();
    expected.revoked_at = Some(revoked);
    expected.updated_at = revoked;
    assert_eq!(
        store.get(&acme, &ci.client.id).await.unwrap(),
        Some(expected.clone())
    );

    let again = revoked + Duration::hours(1);
    assert!(
        !store
            .revoke(&acme, &ci.client.id, again, &client_changed(&acme))
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&acme, &ci.client.id).await.unwrap(),
        Some(expected),
        "the first revocation's time stays"
    );
    assert!(
        !store
            .revoke(&acme, &ClientId::generate(), again, &client_changed(&acme))
            .await
            .unwrap()
    );
}

pub async fn duplicate_client_ids_conflict(stores: &impl ClientStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let ci = client(&acme, "ci");
    store.insert(&ci, &client_created(&ci)).await.unwrap();
    let again = store.insert(&ci, &client_created(&ci)).await.unwrap_err();
    assert!(
        matches!(
            again,
            DomainError::Conflict {
                code: "already_exists",
                ..
            }
        ),
        "{again:?}"
    );
}

/// Lookups made together (on PostgreSQL: one batched query) each get their own client, and
/// a lookup made after a revocation sees it.
pub async fn concurrent_lookups_each_get_their_client(stores: &impl ClientStores) {
    let acme = organization(stores, "Acme").await;
    let store = stores.store();
    let clients: Vec<StoredClient> = (0..3).map(|i| client(&acme, &format!("c{i}"))).collect();
    for stored in &clients {
        store.insert(stored, &client_created(stored)).await.unwrap();
    }
    let unknown = ClientId::generate();
    let ids = [
        &clients[0].client.id,
        &clients[1].client.id,
        &clients[0].client.id,
        &unknown,
        &clients[2].client.id,
        &clients[1].client.id,
    ];
    let found =
        futures_util::future::join_all(ids.iter().map(|id| store.find_for_authentication(id)))
            .await;
    let expected = [0, 1, 0, usize::MAX, 2, 1].map(|i| clients.get(i).cloned());
    let found: Vec<Option<StoredClient>> = found.into_iter().map(Result::unwrap).collect();
    assert_eq!(found, expected);

    let revoked = at() + Duration::hours(1);
    assert!(
        store
            .revoke(
                &acme,
                &clients[1].client.id,
                revoked,
                &client_changed(&acme)
            )
            .await
            .unwrap()
    );
    let found = futures_util::future::join_all(
        [&clients[0].client.id, &clients[1].client.id].map(|id| store.find_for_authentication(id)),
    )
    .await;
    assert!(
        found[0]
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap()
            .client
            .is_active()
    );
    assert_eq!(
        found[1]
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap()
            .client
            .revoked_at,
        Some(revoked)
    );
}
