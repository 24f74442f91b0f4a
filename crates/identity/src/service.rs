use std::{sync::Arc, time::Duration};

use tessera_kernel::{
    Actor, Clock, CursorCodec, DomainError, Limit, OrganizationId, Page, PageRequest, Principal,
    PrincipalKind, ScopeSet,
};
use tessera_organizations::OrganizationStore;

use crate::{
    AccessClaims, ApiKeySecret, ApiKeyService, Client, ClientId, ClientSecret, ClientStore,
    IdentityError, NewClient, RefusalLog, SecretHasher, SessionVerifier, StoredClient, TokenError,
    TokenSigner, TokenVerifier, creator_rule::act_within_held_scopes, refusal::Refusal,
    unverified_issuer,
};

/// What the issuer puts in every token.
#[derive(Debug, Clone)]
pub struct TokenSettings {
    pub issuer: String,
    pub audience: String,
    pub lifetime: Duration,
}

/// A token issued for the client credentials grant.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub access_token: String,
    pub expires_in: u64,
    pub scope: ScopeSet,
}

const CURSOR_LIST: &str = "clients";

/// Manages API clients and issues and checks their access tokens.
#[derive(Clone)]
pub struct IdentityService {
    pub(crate) clients: Arc<dyn ClientStore>,
    hasher: Arc<dyn SecretHasher>,
    signer: Arc<dyn TokenSigner>,
    verifier: Arc<dyn TokenVerifier>,
    pub(crate) clock: Arc<dyn Clock>,
    cursors: CursorCodec,
    settings: TokenSettings,
    sessions: Vec<Arc<dyn SessionVerifier>>,
    /// When set, session tokens must name an organization that exists here.
    organizations: Option<Arc<dyn OrganizationStore>>,
    /// When set, `tsk_…` API keys are accepted as bearer credentials.
    pub(crate) api_keys: Option<ApiKeyService>,
    /// When set, refused credentials are recorded there (`authenticate_from`, `issue_token_from`).
    pub(crate) refusals: Option<Arc<dyn RefusalLog>>,
}

impl IdentityService {
    pub fn new(
        clients: Arc<dyn ClientStore>,
        hasher: Arc<dyn SecretHasher>,
        signer: Arc<dyn TokenSigner>,
        verifier: Arc<dyn TokenVerifier>,
        clock: Arc<dyn Clock>,
        cursors: CursorCodec,
        settings: TokenSettings,
    ) -> Self {
        Self {
            clients,
            hasher,
            signer,
            verifier,
            clock,
            cursors,
            settings,
            sessions: Vec::new(),
            organizations: None,
            api_keys: None,
            refusals: None,
        }
    }

    pub fn token_settings(&self) -> &TokenSettings {
        &self.settings
    }

    /// Creates a client for an authenticated `creator` of its organization, who may give it
    /// only scopes it holds itself (403 `scope_not_held` otherwise: no escalation through a
    /// client). The audit record names the creator.
    pub async fn create_client_by(
        &self,
        creator: &Principal,
        new: NewClient,
    ) -> Result<(Client, ClientSecret), IdentityError> {
        let actor = Actor::Principal(creator.clone());
        act_within_held_scopes(&actor, &new.scopes, "a client cannot be given")?;
        self.create_client(new, &actor).await
    }

    /// Creates a client; the secret is returned this once and stored only as a hash.
    pub async fn create_client(
        &self,
        new: NewClient,
        actor: &Actor,
    ) -> Result<(Client, ClientSecret), IdentityError> {
        let secret = ClientSecret::generate();
        let now = self.clock.now();
        let client = Client {
            id: ClientId::generate(),
            organization_id: new.organization_id,
            name: new.name.as_str().to_owned(),
            scopes: new.scopes,
            secret_generation: 1,
            revoked_at: None,
            created_at: now,
            updated_at: now,
        };
        let stored = StoredClient {
            client: client.clone(),
            secret_hash: self.hasher.hash(&secret)?,
        };
        let audit = actor.record(
            &client.organization_id,
            "client.create",
            "client",
            client.id.as_str(),
            now,
        );
        self.clients.insert(&stored, &audit).await?;
        Ok((client, secret))
    }

    /// Replaces the client's secret; every token issued under the old one stops working. A
    /// principal may rotate only a client whose every scope it holds (403 `scope_not_held`:
    /// rotating hands over the client's power, so it is bound like creating one).
    pub async fn rotate_secret(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        actor: &Actor,
    ) -> Result<ClientSecret, IdentityError> {
        let client = self.active_client(organization, id).await?;
        act_within_held_scopes(actor, &client.scopes, "cannot rotate a client holding")?;
        let secret = ClientSecret::generate();
        let hash = self.hasher.hash(&secret)?;
        let generation = client.secret_generation.saturating_add(1);
        let now = self.clock.now();
        let audit = actor.record(
            organization,
            "client.rotate_secret",
            "client",
            id.as_str(),
            now,
        );
        if !self
            .clients
            .replace_secret(organization, id, &hash, generation, now, &audit)
            .await?
        {
            return Err(IdentityError::ClientNotFound(id.clone()));
        }
        Ok(secret)
    }

    /// Revokes the client and, with it, every token it holds. A principal may revoke only a
    /// client whose every scope it holds (403 `scope_not_held`). A client's scopes never
    /// change, so the check cannot be overtaken by a change to them.
    pub async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        actor: &Actor,
    ) -> Result<(), IdentityError> {
        let client = self.active_client(organization, id).await?;
        act_within_held_scopes(actor, &client.scopes, "cannot revoke a client holding")?;
        let now = self.clock.now();
        let audit = actor.record(organization, "client.revoke", "client", id.as_str(), now);
        if self.clients.revoke(organization, id, now, &audit).await? {
            Ok(())
        } else {
            Err(IdentityError::ClientNotFound(id.clone()))
        }
    }

    pub async fn get(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
    ) -> Result<Client, IdentityError> {
        self.clients
            .get(organization, id)
            .await?
            .ok_or_else(|| IdentityError::ClientNotFound(id.clone()))
    }

    async fn active_client(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
    ) -> Result<Client, IdentityError> {
        Some(self.get(organization, id).await?)
            .filter(Client::is_active)
            .ok_or_else(|| IdentityError::ClientNotFound(id.clone()))
    }

    pub async fn list(
        &self,
        organization: &OrganizationId,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Client>, IdentityError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<ClientId>(CURSOR_LIST, organization.as_str(), c)
            })
            .transpose()
            .map_err(DomainError::from)?;
        let rows = self
            .clients
            .list(organization, &PageRequest { limit, after })
            .await?;
        let total = self.clients.count(organization).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |last| {
            self.cursors
                .encode(CURSOR_LIST, organization.as_str(), &last.id)
        }))
    }

    /// The client credentials grant: checks the client's secret and issues a token for the
    /// requested scopes (all of the client's scopes when none are requested).
    pub async fn issue_token(
        &self,
        client_id: &str,
        secret: &ClientSecret,
        requested_scope: Option<&str>,
    ) -> Result<IssuedToken, IdentityError> {
        self.issue_token_attributed(client_id, secret, requested_scope)
            .await
            .map_err(|refusal| refusal.error)
    }

    pub(crate) async fn issue_token_attributed(
        &self,
        client_id: &str,
        secret: &ClientSecret,
        requested_scope: Option<&str>,
    ) -> Result<IssuedToken, Refusal> {
        let id: ClientId = client_id.parse().map_err(|_| {
            Refusal::anonymous(Refusal::CLIENT_SECRET, IdentityError::InvalidClient)
        })?;
        let stored = self
            .clients
            .find_for_authentication(&id)
            .await
            .map_err(|e| Refusal::not_recorded(IdentityError::from(e)))?
            .ok_or_else(|| {
                Refusal::claiming(
                    Refusal::CLIENT_SECRET,
                    None,
                    &id,
                    IdentityError::InvalidClient,
                )
            })?;
        if !stored.client.is_active() || !self.hasher.verify(secret, &stored.secret_hash) {
            return Err(Refusal::claiming(
                Refusal::CLIENT_SECRET,
                Some(&stored.client.organization_id),
                &id,
                IdentityError::InvalidClient,
            ));
        }
        let client = stored.client;
        let scope = match requested_scope.map(str::trim).filter(|s| !s.is_empty()) {
            None => client.scopes.clone(),
            Some(requested) => {
                let requested = ScopeSet::parse_list(requested).map_err(|e| {
                    Refusal::not_recorded(IdentityError::InvalidScope(e.to_string()))
                })?;
                if let Some(extra) = requested.iter().find(|scope| !client.scopes.allows(scope)) {
                    return Err(Refusal::not_recorded(IdentityError::InvalidScope(format!(
                        "scope `{extra}` is not granted to this client"
                    ))));
                }
                requested
            }
        };
        let now = self.clock.now().timestamp();
        let lifetime = i64::try_from(self.settings.lifetime.as_secs()).unwrap_or(3600);
        let jti: [u8; 16] = rand::random();
        let claims = AccessClaims {
            iss: self.settings.issuer.clone(),
            sub: client.id.to_string(),
            aud: self.settings.audience.clone(),
            org: client.organization_id.to_string(),
            scope: scope.to_string(),
            secret_generation: client.secret_generation,
            iat: now,
            nbf: now,
            exp: now + lifetime,
            jti: jti.iter().map(|b| format!("{b:02x}")).collect(),
        };
        let access_token = self
            .signer
            .sign(&claims)
            .map_err(|e| Refusal::not_recorded(IdentityError::from(e)))?;
        Ok(IssuedToken {
            access_token,
            expires_in: self.settings.lifetime.as_secs(),
            scope,
        })
    }

    /// Turns a presented bearer credential into the principal it stands for: an API key
    /// (`tsk_…`, when keys are enabled), or an access token, refusing tokens of revoked clients
    /// and tokens issued under a secret that has since been rotated.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, IdentityError> {
        self.authenticate_attributed(token)
            .await
            .map_err(|refusal| refusal.error)
    }

    pub(crate) async fn authenticate_attributed(&self, token: &str) -> Result<Principal, Refusal> {
        if ApiKeySecret::is_api_key(token) {
            return match &self.api_keys {
                Some(keys) => keys
                    .authenticate_attributed(token)
                    .await
                    .map_err(|(reason, key)| match key {
                        Some((organization, id)) => Refusal::claiming(
                            Refusal::API_KEY,
                            Some(&organization),
                            &id,
                            IdentityError::InvalidToken(reason),
                        ),
                        None => Refusal::anonymous(
                            Refusal::API_KEY,
                            IdentityError::InvalidToken(reason),
                        ),
                    }),
                None => Err(Refusal::anonymous(
                    Refusal::API_KEY,
                    IdentityError::InvalidToken(TokenError::UnknownApiKey),
                )),
            };
        }
        match unverified_issuer(token) {
            Some(issuer) if issuer != self.settings.issuer => self
                .authenticate_session(&issuer, token)
                .await
                .map_err(|error| Refusal::anonymous(Refusal::SESSION_TOKEN, error)),
            _ => self.authenticate_client(token).await,
        }
    }

    /// Refuse session tokens whose organization claim names no organization of `store`
    /// (an identity provider may know organizations this service was never told about).
    pub fn with_organizations(mut self, store: Arc<dyn OrganizationStore>) -> Self {
        self.organizations = Some(store);
        self
    }

    /// Also accept API keys (`tsk_…`) managed by `keys`.
    pub fn with_api_keys(mut self, keys: ApiKeyService) -> Self {
        self.api_keys = Some(keys);
        self
    }

    /// Also accept session tokens of these identity providers.
    pub fn with_sessions(mut self, sessions: Vec<Arc<dyn SessionVerifier>>) -> Self {
        self.sessions = sessions;
        self
    }

    /// A user's session token from a configured identity provider; the organization and the
    /// scopes come from the claims that provider is configured to use.
    async fn authenticate_session(
        &self,
        issuer: &str,
        token: &str,
    ) -> Result<Principal, IdentityError> {
        let verifier = self
            .sessions
            .iter()
            .find(|verifier| verifier.issuer() == issuer)
            .ok_or(IdentityError::InvalidToken(
                TokenError::WrongIssuerOrAudience,
            ))?;
        let claims = verifier
            .verify(token)
            .await
            .map_err(IdentityError::InvalidToken)?;
        let malformed = || IdentityError::InvalidToken(TokenError::Malformed);
        let organization_id: OrganizationId =
            claims.organization.parse().map_err(|_| malformed())?;
        if let Some(organizations) = &self.organizations {
            let known = organizations
                .get(&organization_id)
                .await
                .map_err(|_| IdentityError::InvalidToken(TokenError::Unavailable))?;
            if known.is_none() {
                return Err(IdentityError::InvalidToken(TokenError::UnknownOrganization));
            }
        }
        // Unknown scope names from the provider are ignored rather than failing the login.
        let scopes = claims
            .scope
            .split([' ', ','])
            .filter_map(|s| s.parse().ok())
            .collect();
        Ok(Principal {
            organization_id,
            subject: claims.subject,
            kind: PrincipalKind::User,
            scopes,
            origin: None,
        })
    }

    async fn authenticate_client(&self, token: &str) -> Result<Principal, Refusal> {
        let refused =
            |reason| Refusal::anonymous(Refusal::ACCESS_TOKEN, IdentityError::InvalidToken(reason));
        let claims = self.verifier.verify(token).map_err(refused)?;
        let id: ClientId = claims
            .sub
            .parse()
            .map_err(|_| refused(TokenError::Malformed))?;
        let organization_id: OrganizationId = claims
            .org
            .parse()
            .map_err(|_| refused(TokenError::Malformed))?;
        let scopes =
            ScopeSet::parse_list(&claims.scope).map_err(|_| refused(TokenError::Malformed))?;
        let stored = self
            .clients
            .find_for_authentication(&id)
            .await
            .map_err(|_| refused(TokenError::Unavailable))?
            .map(|s| s.client);
        let known = stored.as_ref().map(|client| client.organization_id.clone());
        let current = stored.filter(|client| {
            client.is_active()
                && client.organization_id == organization_id
                && client.secret_generation == claims.secret_generation
        });
        if current.is_none() {
            return Err(Refusal::claiming(
                Refusal::ACCESS_TOKEN,
                known.as_ref(),
                &id,
                IdentityError::InvalidToken(TokenError::Revoked),
            ));
        }
        Ok(Principal {
            organization_id,
            subject: id.to_string(),
            kind: PrincipalKind::Client,
            scopes,
            origin: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use chrono::{TimeZone, Utc};
    use tessera_kernel::ManualClock;

    use super::*;
    use crate::{
        ClientName, MockClientStore, MockSecretHasher, MockTokenSigner, MockTokenVerifier,
        SecretHash,
    };

    fn org() -> OrganizationId {
        "org_test".parse().unwrap()
    }

    fn client(generation: u32, revoked: bool) -> StoredClient {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        StoredClient {
            client: Client {
                id: "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".parse().unwrap(),
                organization_id: org(),
                name: "ci".into(),
                scopes: ScopeSet::parse_list("files:read particles:admin").unwrap(),
                secret_generation: generation,
                revoked_at: revoked.then_some(at),
                created_at: at,
                updated_at: at,
            },
            secret_hash: SecretHash("hash-of-right".into()),
        }
    }

    struct Fixture {
        store: MockClientStore,
        signer: MockTokenSigner,
        verifier: MockTokenVerifier,
    }

    impl Fixture {
        fn new() -> Self {
            Self {
                store: MockClientStore::new(),
                signer: MockTokenSigner::new(),
                verifier: MockTokenVerifier::new(),
            }
        }

        fn service(self) -> IdentityService {
            let mut hasher = MockSecretHasher::new();
            hasher
                .expect_hash()
                .returning(|s| Ok(SecretHash(format!("hash-of-{}", s.expose()))));
            hasher
                .expect_verify()
                .returning(|s, h| h.0 == format!("hash-of-{}", s.expose()));
            let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap());
            let settings = TokenSettings {
                issuer: "https://tessera.test".into(),
                audience: "tessera".into(),
                lifetime: Duration::from_secs(3600),
            };
            IdentityService::new(
                Arc::new(self.store),
                Arc::new(hasher),
                Arc::new(self.signer),
                Arc::new(self.verifier),
                Arc::new(clock),
                CursorCodec::new([3; 32]),
                settings,
            )
        }
    }

    fn secret(text: &str) -> ClientSecret {
        ClientSecret::presented(text)
    }

    #[tokio::test]
    async fn created_clients_store_only_the_hash() {
        let mut f = Fixture::new();
        let stored = Arc::new(Mutex::new(None));
        let seen = stored.clone();
        f.store.expect_insert().returning(move |c, audit| {
            assert_eq!(audit.action, "client.create");
            assert_eq!(audit.resource_id.as_deref(), Some(c.client.id.as_str()));
            assert_eq!(audit.organization_id, Some(org()));
            assert_eq!(audit.actor_kind, tessera_kernel::ActorKind::Operator);
            *seen.lock().unwrap() = Some(c.clone());
            Ok(())
        });
        let new = NewClient {
            organization_id: org(),
            name: ClientName::parse("ci").unwrap(),
            scopes: ScopeSet::default(),
        };
        let (client, secret) = f
            .service()
            .create_client(new, &Actor::Operator("ops".into()))
            .await
            .unwrap();
        let stored = stored.lock().unwrap().clone().unwrap();
        assert_eq!(stored.client, client);
        assert_eq!(stored.secret_hash.0, format!("hash-of-{}", secret.expose()));
        assert_eq!(client.secret_generation, 1);
    }

    #[tokio::test]
    async fn a_creator_gives_a_client_only_scopes_it_holds() {
        let mut f = Fixture::new();
        f.store.expect_insert().times(1).returning(|_, _| Ok(()));
        let creator = Principal {
            organization_id: org(),
            subject: "admin-client".into(),
            kind: PrincipalKind::Client,
            scopes: [
                "files:read".parse().unwrap(),
                "chats:write".parse().unwrap(),
            ]
            .into_iter()
            .collect(),
            origin: None,
        };
        let asking = |scopes: &[&str]| NewClient {
            organization_id: org(),
            name: ClientName::parse("ci").unwrap(),
            scopes: scopes.iter().map(|s| s.parse().unwrap()).collect(),
        };
        let service = f.service();
        let refused = service
            .create_client_by(&creator, asking(&["chats:write", "files:write"]))
            .await
            .unwrap_err();
        assert!(matches!(
            DomainError::from(refused),
            DomainError::Forbidden { code: "scope_not_held", ref message } if message.contains("files:write")
        ),);
        let (client, _) = service
            .create_client_by(&creator, asking(&["chats:write"]))
            .await
            .unwrap();
        assert_eq!(client.scopes.to_string(), "chats:write");
    }

    #[tokio::test]
    async fn token_carries_org_scopes_generation_and_lifetime() {
        let mut f = Fixture::new();
        f.store
            .expect_find_for_authentication()
            .returning(|_| Ok(Some(client(3, false))));
        let signed = Arc::new(Mutex::new(None));
        let seen = signed.clone();
        f.signer.expect_sign().returning(move |claims| {
            *seen.lock().unwrap() = Some(claims.clone());
            Ok("signed.jwt".into())
        });
        let issued = f
            .service()
            .issue_token(
                "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
                &secret("right"),
                None,
            )
            .await
            .unwrap();
        assert_eq!(
            (issued.access_token.as_str(), issued.expires_in),
            ("signed.jwt", 3600)
        );
        let claims = signed.lock().unwrap().clone().unwrap();
        assert_eq!(
            (
                claims.org.as_str(),
                claims.secret_generation,
                claims.scope.as_str()
            ),
            ("org_test", 3, "files:read particles:admin")
        );
        assert_eq!(claims.exp - claims.iat, 3600);
        assert_eq!(claims.iss, "https://tessera.test");
    }

    #[tokio::test]
    async fn requested_scopes_must_be_granted() {
        let mut f = Fixture::new();
        f.store
            .expect_find_for_authentication()
            .returning(|_| Ok(Some(client(1, false))));
        f.signer.expect_sign().returning(|_| Ok("jwt".into()));
        let service = f.service();
        let id = "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80";
        let narrowed = service
            .issue_token(id, &secret("right"), Some("particles:read"))
            .await
            .unwrap();
        assert_eq!(
            narrowed.scope.to_string(),
            "particles:read",
            "admin implies read, so read may be requested"
        );
        assert!(matches!(
            service
                .issue_token(id, &secret("right"), Some("files:write"))
                .await,
            Err(IdentityError::InvalidScope(_))
        ));
        assert!(matches!(
            service
                .issue_token(id, &secret("right"), Some("bogus:scope"))
                .await,
            Err(IdentityError::InvalidScope(_))
        ));
    }

    #[tokio::test]
    async fn wrong_secret_unknown_and_revoked_clients_look_the_same() {
        let mut f = Fixture::new();
        f.store.expect_find_for_authentication().returning(|id| {
            Ok(match id.as_str() {
                "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80" => Some(client(1, false)),
                "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f81" => Some(client(1, true)),
                _ => None,
            })
        });
        let service = f.service();
        for (id, presented) in [
            ("cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80", "wrong"),
            ("cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f81", "right"),
            ("cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f82", "right"),
            ("not-an-id", "right"),
        ] {
            assert!(
                matches!(
                    service.issue_token(id, &secret(presented), None).await,
                    Err(IdentityError::InvalidClient)
                ),
                "{id}"
            );
        }
    }

    fn claims(generation: u32) -> AccessClaims {
        AccessClaims {
            iss: "i".into(),
            sub: "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".into(),
            aud: "a".into(),
            org: "org_test".into(),
            scope: "files:read".into(),
            secret_generation: generation,
            iat: 0,
            nbf: 0,
            exp: 0,
            jti: "j".into(),
        }
    }

    #[tokio::test]
    async fn authentication_follows_the_current_secret_generation() {
        let mut f = Fixture::new();
        f.verifier
            .expect_verify()
            .returning(|token| Ok(claims(token.parse().unwrap())));
        f.store
            .expect_find_for_authentication()
            .returning(|_| Ok(Some(client(2, false))));
        let service = f.service();
        let principal = service.authenticate("2").await.unwrap();
        assert_eq!(
            (principal.organization_id.as_str(), principal.kind),
            ("org_test", PrincipalKind::Client)
        );
        assert!(matches!(
            service.authenticate("1").await,
            Err(IdentityError::InvalidToken(TokenError::Revoked))
        ));
    }

    fn session_token(issuer: &str) -> String {
        use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
        format!(
            "e30.{}.sig",
            URL_SAFE_NO_PAD.encode(format!(r#"{{"iss":"{issuer}"}}"#))
        )
    }

    #[tokio::test]
    async fn session_tokens_go_to_their_provider() {
        let mut provider = crate::MockSessionVerifier::new();
        provider
            .expect_issuer()
            .return_const("https://idp.example".to_owned());
        provider.expect_verify().returning(|_| {
            Ok(crate::SessionClaims {
                subject: "user-1".into(),
                organization: "org_test".into(),
                scope: "files:read made:up".into(),
            })
        });
        let service = Fixture::new()
            .service()
            .with_sessions(vec![Arc::new(provider)]);
        let principal = service
            .authenticate(&session_token("https://idp.example"))
            .await
            .unwrap();
        assert_eq!(
            (principal.subject.as_str(), principal.kind),
            ("user-1", PrincipalKind::User)
        );
        assert_eq!(
            principal.scopes.to_string(),
            "files:read",
            "unknown scope names are dropped"
        );
        let unknown = service
            .authenticate(&session_token("https://other.example"))
            .await;
        assert!(matches!(
            unknown,
            Err(IdentityError::InvalidToken(
                TokenError::WrongIssuerOrAudience
            ))
        ));
    }

    #[tokio::test]
    async fn tokens_naming_our_issuer_never_reach_a_provider() {
        let mut provider = crate::MockSessionVerifier::new();
        provider
            .expect_issuer()
            .return_const("https://tessera.test".to_owned());
        provider.expect_verify().never();
        let mut f = Fixture::new();
        f.verifier
            .expect_verify()
            .returning(|_| Err(TokenError::BadSignature));
        let service = f.service().with_sessions(vec![Arc::new(provider)]);
        let result = service
            .authenticate(&session_token("https://tessera.test"))
            .await;
        assert!(matches!(
            result,
            Err(IdentityError::InvalidToken(TokenError::BadSignature))
        ));
    }

    #[tokio::test]
    async fn api_keys_are_checked_by_the_key_service_never_as_tokens() {
        let mut f = Fixture::new();
        f.verifier.expect_verify().never();
        let mut keys = crate::MockApiKeyStore::new();
        keys.expect_find_by_hash().returning(|_| Ok(None));
        let mut hasher = crate::MockApiKeyHasher::new();
        hasher
            .expect_hash()
            .returning(|_| crate::ApiKeyHash("mac".into()));
        let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap());
        let key = ApiKeySecret::generate();
        let without = f.service();
        assert!(matches!(
            without.authenticate(key.expose()).await,
            Err(IdentityError::InvalidToken(TokenError::UnknownApiKey))
        ));
        let with = without.with_api_keys(ApiKeyService::new(
            Arc::new(keys),
            Arc::new(hasher),
            Arc::new(clock),
            CursorCodec::new([4; 32]),
        ));
        let refused = with.authenticate(key.expose()).await;
        assert!(matches!(
            refused,
            Err(IdentityError::InvalidToken(TokenError::UnknownApiKey))
        ));
        assert_eq!(
            DomainError::from(refused.unwrap_err()),
            DomainError::Unauthenticated {
                code: "invalid_token",
                message: "the API key is unknown or has been revoked".into()
            }
        );
    }

    #[tokio::test]
    async fn revoked_clients_tokens_stop_working() {
        let mut f = Fixture::new();
        f.verifier.expect_verify().returning(|_| Ok(claims(1)));
        f.store
            .expect_find_for_authentication()
            .returning(|_| Ok(Some(client(1, true))));
        assert!(matches!(
            f.service().authenticate("t").await,
            Err(IdentityError::InvalidToken(TokenError::Revoked))
        ));
    }

    #[tokio::test]
    async fn refused_credentials_are_recorded_with_what_they_claimed() {
        let mut f = Fixture::new();
        f.verifier.expect_verify().returning(|_| Ok(claims(1)));
        f.store
            .expect_find_for_authentication()
            .returning(|_| Ok(Some(client(1, true))));
        let mut log = crate::MockRefusalLog::new();
        log.expect_record()
            .withf(|record| {
                record.action == tessera_kernel::FAILED_AUTHENTICATION
                    && record.resource_type == "access_token"
                    && record.resource_id.as_deref() == Some("cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")
                    && record.organization_id == Some(org())
                    && record.actor_kind == tessera_kernel::ActorKind::Anonymous
                    && record.actor_id.is_none()
                    && record.address.as_deref() == Some("192.0.2.1")
                    && record.request_id.as_deref() == Some("req-9")
            })
            .times(1)
            .returning(|_| Err(DomainError::internal("disk full")));
        let origin = tessera_kernel::Origin {
            address: Some("192.0.2.1".into()),
            request_id: Some("req-9".into()),
        };
        // A failure to record never changes the answer.
        assert!(matches!(
            f.service()
                .with_refusal_log(Arc::new(log))
                .authenticate_from("t", &origin)
                .await,
            Err(IdentityError::InvalidToken(TokenError::Revoked))
        ));
    }

    #[tokio::test]
    async fn outages_are_not_recorded_as_refusals() {
        let mut f = Fixture::new();
        f.store.expect_find_for_authentication().returning(|_| {
            Err(DomainError::Unavailable {
                message: "down".into(),
            })
        });
        let mut log = crate::MockRefusalLog::new();
        log.expect_record().never();
        let service = f.service().with_refusal_log(Arc::new(log));
        let result = service
            .issue_token_from(
                "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
                &secret("tss_x"),
                None,
                &tessera_kernel::Origin::default(),
            )
            .await;
        assert!(
            matches!(result, Err(IdentityError::Domain(_))),
            "{result:?}"
        );
    }

    fn principal(scopes: &str) -> Actor {
        Actor::Principal(Principal {
            organization_id: org(),
            subject: "key_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".into(),
            kind: PrincipalKind::ApiKey,
            scopes: ScopeSet::parse_list(scopes).unwrap(),
            origin: None,
        })
    }

    #[tokio::test]
    async fn a_client_is_rotated_or_revoked_only_by_a_holder_of_its_scopes() {
        let id: ClientId = "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".parse().unwrap();
        let mut f = Fixture::new();
        // The client holds files:read and particles:admin.
        f.store
            .expect_get()
            .returning(|_, _| Ok(Some(client(4, false).client)));
        f.store.expect_replace_secret().never();
        f.store.expect_revoke().never();
        let service = f.service();
        let partial = principal("files:read particles:read");
        for refused in [
            service
                .rotate_secret(&org(), &id, &partial)
                .await
                .map(|_| ())
                .unwrap_err(),
            service.revoke(&org(), &id, &partial).await.unwrap_err(),
        ] {
            assert!(matches!(
                DomainError::from(refused),
                DomainError::Forbidden { code: "scope_not_held", ref message } if message.contains("particles:admin")
            ));
        }

        let mut f = Fixture::new();
        f.store
            .expect_get()
            .returning(|_, _| Ok(Some(client(4, false).client)));
        f.store
            .expect_replace_secret()
            .times(2)
            .returning(|_, _, _, _, _, _| Ok(true));
        f.store
            .expect_revoke()
            .times(2)
            .returning(|_, _, _, _| Ok(true));
        let service = f.service();
        // org:admin implies both; an operator acts on any client.
        for actor in [principal("org:admin"), Actor::Operator("ops".into())] {
            service.rotate_secret(&org(), &id, &actor).await.unwrap();
            service.revoke(&org(), &id, &actor).await.unwrap();
        }
    }

    #[tokio::test]
    async fn revoking_a_revoked_client_is_not_found() {
        let mut f = Fixture::new();
        f.store
            .expect_get()
            .returning(|_, _| Ok(Some(client(4, true).client)));
        f.store.expect_revoke().never();
        let id: ClientId = "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".parse().unwrap();
        assert!(matches!(
            f.service()
                .revoke(&org(), &id, &principal("org:admin"))
                .await,
            Err(IdentityError::ClientNotFound(_))
        ));
    }

    #[tokio::test]
    async fn rotation_bumps_the_generation() {
        let mut f = Fixture::new();
        f.store
            .expect_get()
            .returning(|_, _| Ok(Some(client(4, false).client)));
        f.store
            .expect_replace_secret()
            .withf(|_, _, hash, generation, _, audit| {
                *generation == 5
                    && hash.0.starts_with("hash-of-tss_")
                    && audit.action == "client.rotate_secret"
            })
            .returning(|_, _, _, _, _, _| Ok(true));
        let secret = f
            .service()
            .rotate_secret(
                &org(),
                &"cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".parse().unwrap(),
                &Actor::System,
            )
            .await
            .unwrap();
        assert!(secret.expose().starts_with("tss_"));
    }
}
