//! Setting, reading and clearing the limits of an organization's API keys and clients, and
//! reading them where completions are admitted. A credential's limits change under the
//! creator rule (no caller limits a credential holding scopes it does not hold) and are
//! audit-logged.

use std::sync::Arc;

use tessera_kernel::{Actor, Caller, Clock, DomainError, OrganizationId, PrincipalKind, ScopeSet};

use crate::{
    ApiKeyStore, ClientStore, Credential, CredentialLimits, CredentialLimitsStore, IdentityError,
    NewCredentialLimits, creator_rule::act_within_held_scopes,
};

/// The limits of an organization's credentials.
#[derive(Clone)]
pub struct CredentialLimitsService {
    store: Arc<dyn CredentialLimitsStore>,
    api_keys: Arc<dyn ApiKeyStore>,
    clients: Arc<dyn ClientStore>,
    clock: Arc<dyn Clock>,
}

impl CredentialLimitsService {
    pub fn new(
        store: Arc<dyn CredentialLimitsStore>,
        api_keys: Arc<dyn ApiKeyStore>,
        clients: Arc<dyn ClientStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            api_keys,
            clients,
            clock,
        }
    }

    /// The scopes of an active credential of the organization (404 for any other).
    async fn scopes_of(
        &self,
        organization: &OrganizationId,
        credential: &Credential,
    ) -> Result<ScopeSet, IdentityError> {
        match credential {
            Credential::ApiKey(id) => self
                .api_keys
                .get(organization, id)
                .await?
                .map(|key| key.scopes)
                .ok_or_else(|| IdentityError::ApiKeyNotFound(id.clone())),
            Credential::Client(id) => self
                .clients
                .get(organization, id)
                .await?
                .filter(|client| client.is_active())
                .map(|client| client.scopes)
                .ok_or_else(|| IdentityError::ClientNotFound(id.clone())),
        }
    }

    /// The credential's limits; `None` when none are set (it may use every model its
    /// organization may, without a budget of its own).
    pub async fn get(
        &self,
        organization: &OrganizationId,
        credential: &Credential,
    ) -> Result<Option<CredentialLimits>, IdentityError> {
        self.scopes_of(organization, credential).await?;
        Ok(self.store.get(organization, credential.as_str()).await?)
    }

    /// Replaces the credential's limits with `new`.
    pub async fn set(
        &self,
        organization: &OrganizationId,
        credential: &Credential,
        new: NewCredentialLimits,
        actor: &Actor,
    ) -> Result<CredentialLimits, IdentityError> {
        let (models, budget) = new.check().map_err(IdentityError::Invalid)?;
        let scopes = self.scopes_of(organization, credential).await?;
        act_within_held_scopes(actor, &scopes, "cannot limit a credential holding")?;
        let now = self.clock.now();
        let limits = CredentialLimits {
            organization_id: organization.clone(),
            credential: credential.as_str().to_owned(),
            models,
            budget,
            updated_at: now,
        };
        let action = format!("{}.limits.set", credential.resource_type());
        let audit = actor.record(
            organization,
            &action,
            credential.resource_type(),
            credential.as_str(),
            now,
        );
        self.store.put(&limits, &audit).await?;
        Ok(limits)
    }

    /// Removes the credential's limits (nothing happens when it has none).
    pub async fn clear(
        &self,
        organization: &OrganizationId,
        credential: &Credential,
        actor: &Actor,
    ) -> Result<(), IdentityError> {
        let scopes = self.scopes_of(organization, credential).await?;
        act_within_held_scopes(
            actor,
            &scopes,
            "cannot lift the limits of a credential holding",
        )?;
        let action = format!("{}.limits.clear", credential.resource_type());
        let audit = actor.record(
            organization,
            &action,
            credential.resource_type(),
            credential.as_str(),
            self.clock.now(),
        );
        self.store
            .delete(organization, credential.as_str(), &audit)
            .await?;
        Ok(())
    }

    /// The limits of the caller's credential, as admission and model lists read them: API
    /// keys and clients may have some; users, operators and the service itself have none.
    pub async fn of_caller(
        &self,
        caller: &Caller,
    ) -> Result<Option<CredentialLimits>, DomainError> {
        match caller.principal_kind() {
            Some(PrincipalKind::ApiKey | PrincipalKind::Client) => {
                self.store
                    .get(caller.organization(), caller.subject())
                    .await
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use tessera_kernel::{ManualClock, Principal};

    use super::*;
    use crate::{
        ApiKey, ApiKeyHash, ApiKeyId, StoredApiKey,
        memory::{InMemoryApiKeyStore, InMemoryClientStore, InMemoryCredentialLimitsStore},
    };

    fn org() -> OrganizationId {
        "org_test".parse().unwrap()
    }

    fn principal(scopes: &str, kind: PrincipalKind, subject: &str) -> Principal {
        Principal {
            organization_id: org(),
            subject: subject.into(),
            kind,
            scopes: ScopeSet::parse_list(scopes).unwrap(),
            origin: None,
        }
    }

    struct Fixture {
        limits: Arc<InMemoryCredentialLimitsStore>,
        service: CredentialLimitsService,
        key: Credential,
    }

    /// A service over in-memory stores holding one key of `org()` with `key_scopes`.
    async fn fixture(key_scopes: &str) -> Fixture {
        let now = Utc.with_ymd_and_hms(2026, 12, 3, 12, 0, 0).unwrap();
        let keys = Arc::new(InMemoryApiKeyStore::new());
        let id = ApiKeyId::generate();
        let key = ApiKey {
            id: id.clone(),
            organization_id: org(),
            name: "bot".into(),
            scopes: ScopeSet::parse_list(key_scopes).unwrap(),
            created_by: "tessera".into(),
            expires_at: None,
            last_used_at: None,
            revoked_at: None,
            created_at: now,
        };
        let audit = Actor::System.record(&org(), "api_key.create", "api_key", id.as_str(), now);
        keys.insert(
            &StoredApiKey {
                key,
                secret_hash: ApiKeyHash("h".into()),
            },
            &audit,
        )
        .await
        .unwrap();
        let limits = Arc::new(InMemoryCredentialLimitsStore::new());
        let service = CredentialLimitsService::new(
            limits.clone(),
            keys,
            Arc::new(InMemoryClientStore::new()),
            Arc::new(ManualClock::new(now)),
        );
        Fixture {
            limits,
            service,
            key: Credential::ApiKey(id),
        }
    }

    fn only(model: &str) -> NewCredentialLimits {
        NewCredentialLimits {
            models: Some(vec![model.into()]),
            budget: None,
        }
    }

    #[tokio::test]
    async fn limits_are_set_read_and_lifted_with_their_audit_records() {
        let f = fixture("chats:invoke").await;
        let admin = Actor::Principal(principal(
            "org:admin chats:invoke",
            PrincipalKind::User,
            "ann",
        ));
        assert_eq!(f.service.get(&org(), &f.key).await.unwrap(), None);
        let set = f
            .service
            .set(&org(), &f.key, only("m"), &admin)
            .await
            .unwrap();
        assert!(set.allows_model("m") && !set.allows_model("n"));
        assert_eq!(f.service.get(&org(), &f.key).await.unwrap(), Some(set));
        let key_caller = Caller::of(principal(
            "chats:invoke",
            PrincipalKind::ApiKey,
            f.key.as_str(),
        ));
        assert!(f.service.of_caller(&key_caller).await.unwrap().is_some());
        // A user with the same subject has no credential limits.
        let user = Caller::of(principal(
            "chats:invoke",
            PrincipalKind::User,
            f.key.as_str(),
        ));
        assert_eq!(f.service.of_caller(&user).await.unwrap(), None);

        f.service.clear(&org(), &f.key, &admin).await.unwrap();
        f.service.clear(&org(), &f.key, &admin).await.unwrap();
        assert_eq!(f.service.get(&org(), &f.key).await.unwrap(), None);
        let actions: Vec<String> = (f.limits.audit_records().into_iter())
            .map(|record| record.action)
            .collect();
        assert_eq!(actions, ["api_key.limits.set", "api_key.limits.clear"]);
    }

    #[tokio::test]
    async fn unknown_credentials_stronger_ones_and_bad_limits_are_refused() {
        let f = fixture("chats:invoke files:write").await;
        let weak = Actor::Principal(principal("chats:invoke", PrincipalKind::User, "ann"));
        let refused = f.service.set(&org(), &f.key, only("m"), &weak).await;
        assert!(
            matches!(&refused, Err(IdentityError::Domain(DomainError::Forbidden { code, .. })) if *code == "scope_not_held"),
            "{refused:?}"
        );
        let unknown = Credential::ApiKey(ApiKeyId::generate());
        assert!(matches!(
            f.service.get(&org(), &unknown).await,
            Err(IdentityError::ApiKeyNotFound(_))
        ));
        let elsewhere: OrganizationId = "org_else".parse().unwrap();
        assert!(matches!(
            f.service.get(&elsewhere, &f.key).await,
            Err(IdentityError::ApiKeyNotFound(_))
        ));
        let client = Credential::Client(crate::ClientId::generate());
        assert!(matches!(
            f.service.clear(&org(), &client, &Actor::System).await,
            Err(IdentityError::ClientNotFound(_))
        ));
        let invalid = f
            .service
            .set(&org(), &f.key, only(""), &Actor::System)
            .await;
        assert!(matches!(invalid, Err(IdentityError::Invalid(errors)) if errors.len() == 1));
        assert!(f.limits.audit_records().is_empty());
    }
}
