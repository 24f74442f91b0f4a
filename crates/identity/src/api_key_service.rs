//! Long-lived API keys (`tsk_…`): created with a subset of their creator's scopes, shown once,
//! stored only as a keyed hash, looked up by that hash on every request (never cached, so a
//! revocation holds on the next request on every replica), expiring, and revocable.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{
    Actor, Clock, CursorCodec, DomainError, FieldError, Limit, OrganizationId, Page, PageRequest,
    Principal, PrincipalKind, Scope, ScopeSet, text,
};

use crate::{
    ApiKey, ApiKeyHasher, ApiKeyId, ApiKeySecret, ApiKeyStore, IdentityError, NewApiKey,
    StoredApiKey, TokenError,
    api_key::{MAX_API_KEY_NAME_CHARS, MAX_API_KEY_SCOPES},
    creator_rule::act_within_held_scopes,
};

const CURSOR_LIST: &str = "api-keys";

/// `lastUsedAt` is written at most once per this interval and key.
pub const LAST_USED_INTERVAL: Duration = Duration::seconds(60);

/// The length of every secret [`ApiKeySecret::generate`] makes (`tsk_` + 43 characters):
/// anything else is refused without a database read.
const SECRET_LEN: usize = 4 + 43;

/// Creates, lists, revokes and authenticates the API keys of organizations.
#[derive(Clone)]
pub struct ApiKeyService {
    store: Arc<dyn ApiKeyStore>,
    hasher: Arc<dyn ApiKeyHasher>,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
}

fn invalid(loc: &[&str], msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(loc.iter().map(|&s| s.into()), msg, kind)
}

impl ApiKeyService {
    pub fn new(
        store: Arc<dyn ApiKeyStore>,
        hasher: Arc<dyn ApiKeyHasher>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
    ) -> Self {
        Self {
            store,
            hasher,
            clock,
            cursors,
        }
    }

    /// Creates a key in the creator's organization, with scopes the creator holds (no one
    /// grants more than they have). The secret is returned this once and stored only as its
    /// keyed hash.
    pub async fn create(
        &self,
        creator: &Principal,
        new: NewApiKey,
    ) -> Result<(ApiKey, ApiKeySecret), IdentityError> {
        self.insert(
            &creator.organization_id,
            &Actor::Principal(creator.clone()),
            Some(&creator.scopes),
            new,
        )
        .await
    }

    /// Creates a key for an operator (the admin CLI), who may grant any scope.
    pub async fn create_as_operator(
        &self,
        organization: &OrganizationId,
        operator: &str,
        new: NewApiKey,
    ) -> Result<(ApiKey, ApiKeySecret), IdentityError> {
        self.insert(
            organization,
            &Actor::Operator(operator.to_owned()),
            None,
            new,
        )
        .await
    }

    async fn insert(
        &self,
        organization: &OrganizationId,
        actor: &Actor,
        grantable: Option<&ScopeSet>,
        new: NewApiKey,
    ) -> Result<(ApiKey, ApiKeySecret), IdentityError> {
        let created_by = actor.name();
        let now = self.clock.now();
        let mut errors = Vec::new();
        let name = new.name.trim();
        if !text::is_storable(name) {
            errors.push(text::nul_error(["body".into(), "name".into()]));
        } else if !(1..=MAX_API_KEY_NAME_CHARS).contains(&name.chars().count()) {
            errors.push(invalid(
                &["body", "name"],
                format!("must be 1 to {MAX_API_KEY_NAME_CHARS} characters"),
                "value_error",
            ));
        }
        if new.scopes.is_empty() {
            errors.push(invalid(
                &["body", "scopes"],
                "name at least one scope",
                "value_error",
            ));
        } else if new.scopes.len() > MAX_API_KEY_SCOPES {
            errors.push(invalid(
                &["body", "scopes"],
                format!("at most {MAX_API_KEY_SCOPES} scopes"),
                "value_error",
            ));
        }
        let mut scopes = Vec::new();
        for (index, text) in new.scopes.iter().enumerate() {
            let loc = ["body".into(), "scopes".into(), index.into()];
            match text.parse::<Scope>() {
                Err(e) => errors.push(FieldError::new(loc, e.to_string(), "invalid_scope")),
                Ok(scope) if grantable.is_some_and(|held| !held.allows(&scope)) => {
                    errors.push(FieldError::new(
                        loc,
                        format!(
                            "`{scope}` is not held by the caller; a key can only be given scopes its creator holds"
                        ),
                        "scope_not_held",
                    ));
                }
                Ok(scope) => scopes.push(scope),
            }
        }
        if new.expires_at.is_some_and(|at| at <= now) {
            errors.push(invalid(
                &["body", "expiresAt"],
                "must lie in the future",
                "value_error",
            ));
        }
        if !errors.is_empty() {
            return Err(IdentityError::Invalid(errors));
        }
        let secret = ApiKeySecret::generate();
        let key = ApiKey {
            id: ApiKeyId::generate(),
            organization_id: organization.clone(),
            name: name.to_owned(),
            scopes: scopes.into_iter().collect(),
            created_by: created_by.to_owned(),
            expires_at: new.expires_at,
            last_used_at: None,
            revoked_at: None,
            created_at: now,
        };
        let stored = StoredApiKey {
            key: key.clone(),
            secret_hash: self.hasher.hash(&secret),
        };
        let audit = actor.record(
            organization,
            "api_key.create",
            "api_key",
            key.id.as_str(),
            now,
        );
        self.store.insert(&stored, &audit).await?;
        Ok((key, secret))
    }

    /// An active key of the organization (revoked keys are not found).
    pub async fn get(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
    ) -> Result<ApiKey, IdentityError> {
        self.store
            .get(organization, id)
            .await?
            .ok_or_else(|| IdentityError::ApiKeyNotFound(id.clone()))
    }

    /// The organization's active keys, oldest first.
    pub async fn list(
        &self,
        organization: &OrganizationId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<ApiKey>, IdentityError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<ApiKeyId>(CURSOR_LIST, organization.as_str(), c)
            })
            .transpose()
            .map_err(DomainError::from)?;
        let rows = self
            .store
            .list(organization, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(organization).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors
                .encode(CURSOR_LIST, organization.as_str(), &last.id)
        }))
    }

    /// Revokes the key: the next request that presents it, on any replica, is refused. A
    /// principal may revoke only a key whose every scope it holds (403 `scope_not_held`, the
    /// creator rule); an operator may revoke any. A key's scopes never change, so the check
    /// cannot be overtaken by a change to them.
    pub async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
        actor: &Actor,
    ) -> Result<(), IdentityError> {
        let key = self.get(organization, id).await?;
        act_within_held_scopes(actor, &key.scopes, "cannot revoke an API key holding")?;
        let now = self.clock.now();
        let audit = actor.record(organization, "api_key.revoke", "api_key", id.as_str(), now);
        if self.store.revoke(organization, id, now, &audit).await? {
            Ok(())
        } else {
            Err(IdentityError::ApiKeyNotFound(id.clone()))
        }
    }

    /// `Ok` while the organization's key `id` is neither revoked (`UnknownApiKey`) nor
    /// expired (`ApiKeyExpired`); `Unavailable` when the store cannot answer. For work that
    /// runs later as the key (see `IdentityService::still_stands`).
    pub async fn still_active(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
    ) -> Result<(), TokenError> {
        let key = self
            .store
            .get(organization, id)
            .await
            .map_err(|_| TokenError::Unavailable)?
            .ok_or(TokenError::UnknownApiKey)?;
        if key.is_revoked() {
            return Err(TokenError::UnknownApiKey);
        }
        if key.is_expired(self.clock.now()) {
            return Err(TokenError::ApiKeyExpired);
        }
        Ok(())
    }

    /// Turns a presented key into the principal it stands for: the key itself, in its
    /// organization, with its scopes. Unknown and revoked keys are refused alike.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, TokenError> {
        self.authenticate_attributed(token)
            .await
            .map_err(|(reason, _)| reason)
    }

    /// `authenticate`, telling on refusal which key (and organization) the secret belonged
    /// to when it named one (revoked, expired).
    pub(crate) async fn authenticate_attributed(
        &self,
        token: &str,
    ) -> Result<Principal, (TokenError, Option<(OrganizationId, ApiKeyId)>)> {
        if !ApiKeySecret::is_api_key(token) || token.len() != SECRET_LEN {
            return Err((TokenError::UnknownApiKey, None));
        }
        let secret = ApiKeySecret::presented(token);
        let stored = self
            .store
            .find_by_hash(&self.hasher.hash(&secret))
            .await
            .map_err(|_| (TokenError::Unavailable, None))?
            .filter(|stored| self.hasher.verify(&secret, &stored.secret_hash))
            .ok_or((TokenError::UnknownApiKey, None))?;
        let key = stored.key;
        let named = || Some((key.organization_id.clone(), key.id.clone()));
        if key.is_revoked() {
            return Err((TokenError::UnknownApiKey, named()));
        }
        let now = self.clock.now();
        if key.is_expired(now) {
            return Err((TokenError::ApiKeyExpired, named()));
        }
        self.note_use(&key, now).await;
        Ok(Principal {
            organization_id: key.organization_id,
            subject: key.id.to_string(),
            kind: PrincipalKind::ApiKey,
            scopes: key.scopes,
            origin: None,
        })
    }

    /// Records the use at most once a minute per key; a failure is logged, never the
    /// request's failure.
    async fn note_use(&self, key: &ApiKey, now: DateTime<Utc>) {
        let stale_before = now - LAST_USED_INTERVAL;
        if key.last_used_at.is_some_and(|at| at > stale_before) {
            return;
        }
        if let Err(error) = self.store.touch(&key.id, now, stale_before).await {
            tracing::warn!(key = %key.id, %error, "lastUsedAt of an API key not recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use chrono::TimeZone;
    use tessera_kernel::ManualClock;

    use super::*;
    use crate::{ApiKeyHash, MockApiKeyHasher, MockApiKeyStore};

    fn org() -> OrganizationId {
        "org_test".parse().unwrap()
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap()
    }

    fn admin() -> Principal {
        Principal {
            organization_id: org(),
            subject: "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".into(),
            kind: PrincipalKind::Client,
            scopes: ScopeSet::parse_list("org:admin").unwrap(),
            origin: None,
        }
    }

    fn hasher() -> MockApiKeyHasher {
        let mut hasher = MockApiKeyHasher::new();
        hasher
            .expect_hash()
            .returning(|s| ApiKeyHash(format!("mac-of-{}", s.expose())));
        hasher
            .expect_verify()
            .returning(|s, h| h.0 == format!("mac-of-{}", s.expose()));
        hasher
    }

    fn service(store: MockApiKeyStore) -> ApiKeyService {
        ApiKeyService::new(
            Arc::new(store),
            Arc::new(hasher()),
            Arc::new(ManualClock::new(now())),
            CursorCodec::new([5; 32]),
        )
    }

    fn new_key(scopes: &[&str]) -> NewApiKey {
        NewApiKey {
            name: " deploy bot ".into(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            expires_at: Some(now() + Duration::days(30)),
        }
    }

    fn stored(secret: &str, last_used_at: Option<DateTime<Utc>>) -> StoredApiKey {
        StoredApiKey {
            key: ApiKey {
                id: "key_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".parse().unwrap(),
                organization_id: org(),
                name: "bot".into(),
                scopes: ScopeSet::parse_list("chats:invoke models:read").unwrap(),
                created_by: "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".into(),
                expires_at: Some(now() + Duration::hours(1)),
                last_used_at,
                revoked_at: None,
                created_at: now() - Duration::days(1),
            },
            secret_hash: ApiKeyHash(format!("mac-of-{secret}")),
        }
    }

    #[tokio::test]
    async fn created_keys_store_only_the_keyed_hash() {
        let mut store = MockApiKeyStore::new();
        let inserted = Arc::new(Mutex::new(None));
        let seen = inserted.clone();
        store.expect_insert().returning(move |key, audit| {
            // The change and its audit record reach the store together.
            assert_eq!(
                (audit.action.as_str(), audit.resource_type.as_str()),
                ("api_key.create", "api_key")
            );
            assert_eq!(audit.resource_id.as_deref(), Some(key.key.id.as_str()));
            assert_eq!(audit.actor_id.as_deref(), Some(key.key.created_by.as_str()));
            assert_eq!(
                audit.organization_id.as_ref(),
                Some(&key.key.organization_id)
            );
            assert_eq!(audit.occurred_at, now());
            *seen.lock().unwrap() = Some(key.clone());
            Ok(())
        });
        let (key, secret) = service(store)
            .create(&admin(), new_key(&["chat:invoke", "files:read"]))
            .await
            .unwrap();
        let stored = inserted.lock().unwrap().clone().unwrap();
        assert_eq!(stored.key, key);
        assert_eq!(stored.secret_hash.0, format!("mac-of-{}", secret.expose()));
        assert!(secret.expose().starts_with("tsk_"));
        assert_eq!(key.name, "deploy bot");
        assert_eq!(key.scopes.to_string(), "chats:invoke files:read");
        assert_eq!(key.created_by, admin().subject);
        assert_eq!((key.created_at, key.last_used_at), (now(), None));
        assert!(key.id.as_str().starts_with("key_"));
    }

    #[tokio::test]
    async fn scopes_must_be_known_and_held_and_expiry_in_the_future() {
        let mut store = MockApiKeyStore::new();
        store.expect_insert().never();
        let service = service(store);
        let mut creator = admin();
        creator.scopes = ScopeSet::parse_list("files:admin chats:invoke").unwrap();
        let mut new = new_key(&["files:read", "nope:read", "org:admin", "chats:invoke"]);
        new.name = "  ".into();
        new.expires_at = Some(now());
        let Err(IdentityError::Invalid(errors)) = service.create(&creator, new).await else {
            panic!("refused")
        };
        let found: Vec<(String, &str)> = errors
            .iter()
            .map(|e| (serde_json::to_string(&e.loc).unwrap(), e.kind.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (r#"["body","name"]"#.to_owned(), "value_error"),
                (r#"["body","scopes",1]"#.to_owned(), "invalid_scope"),
                (r#"["body","scopes",2]"#.to_owned(), "scope_not_held"),
                (r#"["body","expiresAt"]"#.to_owned(), "value_error"),
            ]
        );
        let empty = service.create(&creator, new_key(&[])).await;
        assert!(matches!(empty, Err(IdentityError::Invalid(e)) if e[0].kind == "value_error"));
    }

    #[tokio::test]
    async fn operators_may_grant_any_scope() {
        let mut store = MockApiKeyStore::new();
        store.expect_insert().returning(|_, audit| {
            assert_eq!(audit.actor_kind, tessera_kernel::ActorKind::Operator);
            assert_eq!(audit.actor_id.as_deref(), Some("tessera-admin"));
            Ok(())
        });
        let (key, _) = service(store)
            .create_as_operator(&org(), "tessera-admin", new_key(&["org:owner"]))
            .await
            .unwrap();
        assert_eq!(
            (key.scopes.to_string().as_str(), key.created_by.as_str()),
            ("org:owner", "tessera-admin")
        );
    }

    #[tokio::test]
    async fn a_key_authenticates_as_itself_and_notes_its_use_once_a_minute() {
        let secret = ApiKeySecret::generate();
        let text = secret.expose().to_owned();
        let mut store = MockApiKeyStore::new();
        let presented = text.clone();
        store
            .expect_find_by_hash()
            .withf(move |hash| hash.0 == format!("mac-of-{presented}"))
            .returning({
                let text = text.clone();
                move |_| Ok(Some(stored(&text, None)))
            });
        store
            .expect_touch()
            .withf(|_, at, stale_before| {
                *at == now() && *stale_before == now() - Duration::seconds(60)
            })
            .times(1)
            .returning(|_, _, _| Err(DomainError::internal("disk full")));
        let principal = service(store).authenticate(&text).await.unwrap();
        assert_eq!(
            (
                principal.subject.as_str(),
                principal.kind,
                principal.organization_id.as_str()
            ),
            (
                "key_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
                PrincipalKind::ApiKey,
                "org_test"
            ),
            "a failed lastUsedAt write does not fail the request"
        );
        assert_eq!(principal.scopes.to_string(), "chats:invoke models:read");

        // Used 30 seconds ago: no write.
        let mut store = MockApiKeyStore::new();
        store.expect_find_by_hash().returning({
            let text = text.clone();
            move |_| Ok(Some(stored(&text, Some(now() - Duration::seconds(30)))))
        });
        store.expect_touch().never();
        service(store).authenticate(&text).await.unwrap();
    }

    #[tokio::test]
    async fn unknown_revoked_and_expired_keys_are_refused() {
        let secret = ApiKeySecret::generate().expose().to_owned();
        let revoked = ApiKeySecret::generate().expose().to_owned();
        let expired = ApiKeySecret::generate().expose().to_owned();
        let mut store = MockApiKeyStore::new();
        let (r, e) = (revoked.clone(), expired.clone());
        store.expect_find_by_hash().returning(move |hash| {
            Ok(if hash.0 == format!("mac-of-{r}") {
                let mut key = stored(&r, None);
                key.key.revoked_at = Some(now());
                Some(key)
            } else if hash.0 == format!("mac-of-{e}") {
                let mut key = stored(&e, None);
                key.key.expires_at = Some(now());
                Some(key)
            } else {
                None
            })
        });
        store.expect_touch().never();
        let service = service(store);
        for (token, expected) in [
            (secret.as_str(), TokenError::UnknownApiKey),
            (revoked.as_str(), TokenError::UnknownApiKey),
            (expired.as_str(), TokenError::ApiKeyExpired),
            ("tsk_short", TokenError::UnknownApiKey),
        ] {
            assert_eq!(service.authenticate(token).await, Err(expected), "{token}");
        }
    }

    #[tokio::test]
    async fn a_store_that_cannot_answer_makes_keys_unavailable_not_invalid() {
        let mut store = MockApiKeyStore::new();
        store.expect_find_by_hash().returning(|_| {
            Err(DomainError::Unavailable {
                message: "down".into(),
            })
        });
        let token = ApiKeySecret::generate();
        assert_eq!(
            service(store).authenticate(token.expose()).await,
            Err(TokenError::Unavailable)
        );
    }

    #[tokio::test]
    async fn revoking_an_unknown_key_is_not_found() {
        let mut store = MockApiKeyStore::new();
        store.expect_get().returning(|_, _| Ok(None));
        store.expect_revoke().never();
        let id = ApiKeyId::generate();
        assert!(matches!(
            service(store).revoke(&org(), &id, &Actor::Principal(admin())).await,
            Err(IdentityError::ApiKeyNotFound(found)) if found == id
        ));
        // Revoked between the read and the write: still not found.
        let mut store = MockApiKeyStore::new();
        store
            .expect_get()
            .returning(|_, _| Ok(Some(stored("tsk_x", None).key)));
        store.expect_revoke().returning(|_, _, _, audit| {
            assert_eq!(audit.action, "api_key.revoke");
            Ok(false)
        });
        assert!(matches!(
            service(store)
                .revoke(&org(), &id, &Actor::Principal(admin()))
                .await,
            Err(IdentityError::ApiKeyNotFound(_))
        ));
    }

    #[tokio::test]
    async fn a_key_is_revoked_only_by_a_holder_of_its_scopes_or_an_operator() {
        let owners = |store: &mut MockApiKeyStore| {
            store.expect_get().returning(|_, _| {
                let mut key = stored("tsk_x", None).key;
                key.scopes = ScopeSet::parse_list("org:owner").unwrap();
                Ok(Some(key))
            });
        };
        let mut store = MockApiKeyStore::new();
        owners(&mut store);
        store.expect_revoke().never();
        let id = ApiKeyId::generate();
        let refused = service(store)
            .revoke(&org(), &id, &Actor::Principal(admin()))
            .await
            .unwrap_err();
        assert!(matches!(
            DomainError::from(refused),
            DomainError::Forbidden { code: "scope_not_held", ref message } if message.contains("org:owner")
        ));
        let mut store = MockApiKeyStore::new();
        owners(&mut store);
        store
            .expect_revoke()
            .times(1)
            .returning(|_, _, _, _| Ok(true));
        service(store)
            .revoke(&org(), &id, &Actor::Operator("ops".into()))
            .await
            .unwrap();
    }
}
