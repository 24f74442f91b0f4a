//! The in-memory [`ClientStore`], [`ApiKeyStore`] and [`CredentialLimitsStore`]: the ports' reference implementations
//! (the contract suites run against them as against the SQL stores), for tests and for
//! services that keep no database.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Mutex, PoisonError},
};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{
    ApiKey, ApiKeyHash, ApiKeyId, ApiKeyStore, Client, ClientId, ClientStore, CredentialLimits,
    CredentialLimitsStore, SecretHash, StoredApiKey, StoredClient,
};

/// Runs `f` on the state behind `mutex`. A poisoned lock still guards whole states: no
/// change here panics halfway.
fn with<S, T>(mutex: &Mutex<S>, f: impl FnOnce(&mut S) -> T) -> T {
    f(&mut mutex.lock().unwrap_or_else(PoisonError::into_inner))
}

/// At most `page.limit.overfetch()` of `records` (ordered by id) after the page's cursor.
fn page_of<'a, K: Ord + 'a, V: 'a>(
    records: impl Iterator<Item = (&'a K, &'a V)>,
    page: &PageRequest<K>,
) -> impl Iterator<Item = &'a V> {
    let after = page.after.as_ref();
    records
        .filter(move |(id, _)| after.is_none_or(|after| *id > after))
        .take(usize::try_from(page.limit.overfetch()).unwrap_or(usize::MAX))
        .map(|(_, record)| record)
}

fn already_exists(message: String) -> DomainError {
    DomainError::Conflict {
        code: "already_exists",
        message,
    }
}

#[derive(Default)]
struct ClientState {
    /// By id, so listing in id order (creation order) is a range.
    clients: BTreeMap<ClientId, StoredClient>,
    audit: Vec<AuditRecord>,
}

/// The in-memory [`ClientStore`].
#[derive(Default)]
pub struct InMemoryClientStore {
    state: Mutex<ClientState>,
}

impl InMemoryClientStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The audit records written with the changes made, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        with(&self.state, |state| state.audit.clone())
    }

    /// Applies `change` to the active client `id` of `organization`, recording `audit` with
    /// it; false (and no record) when there is no such client.
    fn change_active(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        audit: &AuditRecord,
        change: impl FnOnce(&mut StoredClient),
    ) -> bool {
        with(&self.state, |state| {
            let Some(stored) = state.clients.get_mut(id).filter(|stored| {
                &stored.client.organization_id == organization && stored.client.is_active()
            }) else {
                return false;
            };
            change(stored);
            state.audit.push(audit.clone());
            true
        })
    }
}

#[async_trait]
impl ClientStore for InMemoryClientStore {
    async fn insert(&self, client: &StoredClient, audit: &AuditRecord) -> Result<(), DomainError> {
        with(&self.state, |state| {
            let id = &client.client.id;
            if state.clients.contains_key(id) {
                return Err(already_exists(format!("client {id} already exists")));
            }
            state.clients.insert(id.clone(), client.clone());
            state.audit.push(audit.clone());
            Ok(())
        })
    }

    async fn find_for_authentication(
        &self,
        id: &ClientId,
    ) -> Result<Option<StoredClient>, DomainError> {
        Ok(with(&self.state, |state| state.clients.get(id).cloned()))
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
    ) -> Result<Option<Client>, DomainError> {
        Ok(with(&self.state, |state| {
            state
                .clients
                .get(id)
                .map(|stored| &stored.client)
                .filter(|client| &client.organization_id == organization)
                .cloned()
        }))
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ClientId>,
    ) -> Result<Vec<Client>, DomainError> {
        Ok(with(&self.state, |state| {
            let of_organization = state
                .clients
                .iter()
                .filter(|(_, stored)| &stored.client.organization_id == organization);
            page_of(of_organization, page)
                .map(|stored| stored.client.clone())
                .collect()
        }))
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        Ok(with(&self.state, |state| {
            state
                .clients
                .values()
                .filter(|stored| &stored.client.organization_id == organization)
                .count() as u64
        }))
    }

    async fn replace_secret(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        hash: &SecretHash,
        generation: u32,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.change_active(organization, id, audit, |stored| {
            stored.secret_hash = hash.clone();
            stored.client.secret_generation = generation;
            stored.client.updated_at = at;
        }))
    }

    async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(self.change_active(organization, id, audit, |stored| {
            stored.client.revoked_at = Some(at);
            stored.client.updated_at = at;
        }))
    }
}

#[derive(Default)]
struct ApiKeyState {
    /// By id, so listing in id order (creation order) is a range. Revoked keys stay.
    keys: BTreeMap<ApiKeyId, StoredApiKey>,
    /// The key of each secret hash (unique: authentication looks keys up by it).
    by_hash: HashMap<String, ApiKeyId>,
    audit: Vec<AuditRecord>,
}

impl ApiKeyState {
    /// The key `id` if it is an active key of `organization`.
    fn active_mut(&mut self, organization: &OrganizationId, id: &ApiKeyId) -> Option<&mut ApiKey> {
        self.keys
            .get_mut(id)
            .map(|stored| &mut stored.key)
            .filter(|key| is_active_key_of(key, organization))
    }

    /// The active keys of `organization`, by id.
    fn active_of<'a>(
        &'a self,
        organization: &'a OrganizationId,
    ) -> impl Iterator<Item = (&'a ApiKeyId, &'a StoredApiKey)> {
        self.keys
            .iter()
            .filter(move |(_, stored)| is_active_key_of(&stored.key, organization))
    }
}

fn is_active_key_of(key: &ApiKey, organization: &OrganizationId) -> bool {
    &key.organization_id == organization && !key.is_revoked()
}

/// The in-memory [`ApiKeyStore`].
#[derive(Default)]
pub struct InMemoryApiKeyStore {
    state: Mutex<ApiKeyState>,
}

impl InMemoryApiKeyStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The audit records written with the changes made, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        with(&self.state, |state| state.audit.clone())
    }
}

#[async_trait]
impl ApiKeyStore for InMemoryApiKeyStore {
    async fn insert(&self, key: &StoredApiKey, audit: &AuditRecord) -> Result<(), DomainError> {
        with(&self.state, |state| {
            let id = &key.key.id;
            if state.keys.contains_key(id) {
                return Err(already_exists(format!("api key {id} already exists")));
            }
            if state.by_hash.contains_key(&key.secret_hash.0) {
                return Err(already_exists(
                    "an api key with this secret hash already exists".to_owned(),
                ));
            }
            state.by_hash.insert(key.secret_hash.0.clone(), id.clone());
            state.keys.insert(id.clone(), key.clone());
            state.audit.push(audit.clone());
            Ok(())
        })
    }

    async fn find_by_hash(&self, hash: &ApiKeyHash) -> Result<Option<StoredApiKey>, DomainError> {
        Ok(with(&self.state, |state| {
            state
                .by_hash
                .get(&hash.0)
                .and_then(|id| state.keys.get(id))
                .cloned()
        }))
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
    ) -> Result<Option<ApiKey>, DomainError> {
        Ok(with(&self.state, |state| {
            state
                .keys
                .get(id)
                .map(|stored| &stored.key)
                .filter(|key| is_active_key_of(key, organization))
                .cloned()
        }))
    }

    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ApiKeyId>,
    ) -> Result<Vec<ApiKey>, DomainError> {
        Ok(with(&self.state, |state| {
            page_of(state.active_of(organization), page)
                .map(|stored| stored.key.clone())
                .collect()
        }))
    }

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError> {
        Ok(with(&self.state, |state| {
            state.active_of(organization).count() as u64
        }))
    }

    async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        Ok(with(&self.state, |state| {
            let Some(key) = state.active_mut(organization, id) else {
                return false;
            };
            key.revoked_at = Some(at);
            state.audit.push(audit.clone());
            true
        }))
    }

    async fn touch(
        &self,
        id: &ApiKeyId,
        at: DateTime<Utc>,
        stale_before: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        Ok(with(&self.state, |state| {
            // The port keys this write by id alone: any stored key, revoked or not.
            let Some(stored) = state.keys.get_mut(id) else {
                return false;
            };
            if stored
                .key
                .last_used_at
                .is_some_and(|used| used > stale_before)
            {
                return false;
            }
            stored.key.last_used_at = Some(at);
            true
        }))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use tessera_kernel::{ActorKind, ScopeSet};

    use super::*;

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap()
    }

    fn record(organization: &OrganizationId, action: &str) -> AuditRecord {
        AuditRecord::by_operator(
            organization,
            ActorKind::Operator,
            "ops",
            action,
            "client",
            "x",
            at(),
        )
    }

    fn actions(records: &[AuditRecord]) -> Vec<&str> {
        records.iter().map(|r| r.action.as_str()).collect()
    }

    fn client(organization: &OrganizationId) -> StoredClient {
        StoredClient {
            client: Client {
                id: ClientId::generate(),
                organization_id: organization.clone(),
                name: "ci".to_owned(),
                scopes: ScopeSet::default(),
                secret_generation: 1,
                revoked_at: None,
                created_at: at(),
                updated_at: at(),
            },
            secret_hash: SecretHash("hash".to_owned()),
        }
    }

    fn key(organization: &OrganizationId, hash: &str) -> StoredApiKey {
        StoredApiKey {
            key: ApiKey {
                id: ApiKeyId::generate(),
                organization_id: organization.clone(),
                name: "bot".to_owned(),
                scopes: ScopeSet::default(),
                created_by: "ops".to_owned(),
                expires_at: None,
                last_used_at: None,
                revoked_at: None,
                created_at: at(),
            },
            secret_hash: ApiKeyHash(hash.to_owned()),
        }
    }

    /// The contract suites cannot see audit records (the SQL stores keep them in the audit
    /// log); here, a change's record is kept exactly when the change is made.
    #[tokio::test]
    async fn client_changes_keep_their_audit_records_only_when_made() {
        let store = InMemoryClientStore::new();
        let acme = OrganizationId::generate();
        let ci = client(&acme);
        store
            .insert(&ci, &record(&acme, "client.create"))
            .await
            .unwrap();
        assert!(store.insert(&ci, &record(&acme, "refused")).await.is_err());
        let id = &ci.client.id;
        let globex = OrganizationId::generate();
        assert!(
            !store
                .revoke(&globex, id, at(), &record(&globex, "refused"))
                .await
                .unwrap()
        );
        let hash = SecretHash("rotated".to_owned());
        let rotation = record(&acme, "client.rotate");
        assert!(
            store
                .replace_secret(&acme, id, &hash, 2, at(), &rotation)
                .await
                .unwrap()
        );
        assert!(
            store
                .revoke(&acme, id, at(), &record(&acme, "client.revoke"))
                .await
                .unwrap()
        );
        let refused = record(&acme, "refused");
        assert!(
            !store
                .replace_secret(&acme, id, &hash, 3, at(), &refused)
                .await
                .unwrap()
        );
        assert!(!store.revoke(&acme, id, at(), &refused).await.unwrap());
        assert_eq!(
            actions(&store.audit_records()),
            ["client.create", "client.rotate", "client.revoke"]
        );
    }

    #[tokio::test]
    async fn api_key_changes_keep_their_audit_records_only_when_made() {
        let store = InMemoryApiKeyStore::new();
        let acme = OrganizationId::generate();
        let bot = key(&acme, "a");
        store
            .insert(&bot, &record(&acme, "api_key.create"))
            .await
            .unwrap();
        let twin = key(&acme, "a");
        assert!(
            store
                .insert(&twin, &record(&acme, "refused"))
                .await
                .is_err()
        );
        let id = &bot.key.id;
        let refused = record(&acme, "refused");
        assert!(
            !store
                .revoke(&acme, &ApiKeyId::generate(), at(), &refused)
                .await
                .unwrap()
        );
        assert!(
            store
                .revoke(&acme, id, at(), &record(&acme, "api_key.revoke"))
                .await
                .unwrap()
        );
        assert!(!store.revoke(&acme, id, at(), &refused).await.unwrap());
        assert_eq!(
            actions(&store.audit_records()),
            ["api_key.create", "api_key.revoke"]
        );
        // The refused twin did not take the hash over.
        assert_eq!(
            store.find_by_hash(&twin.secret_hash).await.unwrap(),
            Some({
                let mut revoked = bot.clone();
                revoked.key.revoked_at = Some(at());
                revoked
            })
        );
    }
}

#[derive(Default)]
struct LimitsState {
    limits: HashMap<(OrganizationId, String), CredentialLimits>,
    audit: Vec<AuditRecord>,
}

/// The in-memory [`CredentialLimitsStore`].
#[derive(Default)]
pub struct InMemoryCredentialLimitsStore {
    state: Mutex<LimitsState>,
}

impl InMemoryCredentialLimitsStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The audit records written with the changes made, in order.
    pub fn audit_records(&self) -> Vec<AuditRecord> {
        with(&self.state, |state| state.audit.clone())
    }
}

#[async_trait]
impl CredentialLimitsStore for InMemoryCredentialLimitsStore {
    async fn get(
        &self,
        organization: &OrganizationId,
        credential: &str,
    ) -> Result<Option<CredentialLimits>, DomainError> {
        let key = (organization.clone(), credential.to_owned());
        Ok(with(&self.state, |state| state.limits.get(&key).cloned()))
    }

    async fn put(&self, limits: &CredentialLimits, audit: &AuditRecord) -> Result<(), DomainError> {
        with(&self.state, |state| {
            let key = (limits.organization_id.clone(), limits.credential.clone());
            state.limits.insert(key, limits.clone());
            state.audit.push(audit.clone());
        });
        Ok(())
    }

    async fn delete(
        &self,
        organization: &OrganizationId,
        credential: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError> {
        let key = (organization.clone(), credential.to_owned());
        Ok(with(&self.state, |state| {
            let removed = state.limits.remove(&key).is_some();
            if removed {
                state.audit.push(audit.clone());
            }
            removed
        }))
    }
}
