use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, OrganizationId, PageRequest};

use crate::{
    AccessClaims, Client, ClientId, ClientSecret, SecretHash, SessionClaims, StoredClient,
    TokenError,
};

/// Persistence of API clients. Every method that reads or changes a client on behalf of an
/// organization takes that organization: a client of another organization is not found.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ClientStore: Send + Sync {
    async fn insert(&self, client: &StoredClient) -> Result<(), DomainError>;

    /// Looks a client up by id alone: only for authenticating the client itself (token
    /// requests and token checks), where the organization is not known yet.
    async fn find_for_authentication(
        &self,
        id: &ClientId,
    ) -> Result<Option<StoredClient>, DomainError>;

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
    ) -> Result<Option<Client>, DomainError>;

    /// Clients of the organization ordered by id, at most `page.limit.overfetch()`.
    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ClientId>,
    ) -> Result<Vec<Client>, DomainError>;

    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError>;

    /// Replaces the secret and sets the generation; false when no such active client exists.
    async fn replace_secret(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        hash: &SecretHash,
        generation: u32,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;

    /// Marks the client revoked; false when no such active client exists.
    async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError>;
}

/// One-way hashing of client secrets (slow, salted).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait SecretHasher: Send + Sync {
    fn hash(&self, secret: &ClientSecret) -> Result<SecretHash, DomainError>;

    /// Constant-time check of a presented secret against a stored hash.
    fn verify(&self, secret: &ClientSecret, hash: &SecretHash) -> bool;
}

/// Signs access tokens.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait TokenSigner: Send + Sync {
    fn sign(&self, claims: &AccessClaims) -> Result<String, DomainError>;
}

/// Checks a token's signature, algorithm, issuer, audience and validity period.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait TokenVerifier: Send + Sync {
    fn verify(&self, token: &str) -> Result<AccessClaims, TokenError>;
}

/// Checks session tokens (JWTs) issued by one external identity provider.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait SessionVerifier: Send + Sync {
    /// The issuer (`iss`) whose tokens this verifier checks.
    fn issuer(&self) -> &str;

    async fn verify(&self, token: &str) -> Result<SessionClaims, TokenError>;
}
