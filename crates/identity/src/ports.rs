use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tessera_kernel::{AuditRecord, DomainError, OrganizationId, PageRequest};

use crate::{
    AccessClaims, ApiKey, ApiKeyHash, ApiKeyId, ApiKeySecret, Client, ClientId, ClientSecret,
    CredentialLimits, SecretHash, SessionClaims, StoredApiKey, StoredClient, TokenError,
};

/// Persistence of API clients. Every method that reads or changes a client on behalf of an
/// organization takes that organization: a client of another organization is not found.
/// Every change comes with its audit record, written in the same transaction (and not at all
/// when the change is not made).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ClientStore: Send + Sync {
    async fn insert(&self, client: &StoredClient, audit: &AuditRecord) -> Result<(), DomainError>;

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
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// Marks the client revoked; false when no such active client exists.
    async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ClientId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;
}

/// Persistence of API keys. Every method that reads or changes a key on behalf of an
/// organization takes that organization: a key of another organization is not found. Revoked
/// keys stay stored (usage records name them) but are neither read nor listed here. Changes
/// come with their audit records, written in the same transaction.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ApiKeyStore: Send + Sync {
    async fn insert(&self, key: &StoredApiKey, audit: &AuditRecord) -> Result<(), DomainError>;

    /// Looks a key up by the keyed hash of its secret (unique), revoked or not: only for
    /// authenticating a presented key, where the organization is not known yet. Never cached.
    async fn find_by_hash(&self, hash: &ApiKeyHash) -> Result<Option<StoredApiKey>, DomainError>;

    /// An active (not revoked) key of the organization.
    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
    ) -> Result<Option<ApiKey>, DomainError>;

    /// Active keys of the organization ordered by id, at most `page.limit.overfetch()`.
    async fn list(
        &self,
        organization: &OrganizationId,
        page: &PageRequest<ApiKeyId>,
    ) -> Result<Vec<ApiKey>, DomainError>;

    /// How many active keys the organization has.
    async fn count(&self, organization: &OrganizationId) -> Result<u64, DomainError>;

    /// Marks the key revoked; false when no such active key exists.
    async fn revoke(
        &self,
        organization: &OrganizationId,
        id: &ApiKeyId,
        at: DateTime<Utc>,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;

    /// Sets `last_used_at` to `at` unless it is already later than `stale_before` (one
    /// conditional write, so replicas racing on one key write once); true when written.
    async fn touch(
        &self,
        id: &ApiKeyId,
        at: DateTime<Utc>,
        stale_before: DateTime<Utc>,
    ) -> Result<bool, DomainError>;
}

/// Where refused credentials are recorded (the audit log): written on their own, since no
/// change shares their transaction.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait RefusalLog: Send + Sync {
    async fn record(&self, record: &AuditRecord) -> Result<(), DomainError>;
}

/// The keyed hash of API key secrets: fast (a secret has 256 random bits, so a slow hash
/// would buy nothing but latency on every request), deterministic (keys are looked up by
/// it), and keyed with a server-side secret (a leaked table alone cannot be checked offline).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait ApiKeyHasher: Send + Sync {
    fn hash(&self, secret: &ApiKeySecret) -> ApiKeyHash;

    /// Constant-time check of a presented secret against a stored hash.
    fn verify(&self, secret: &ApiKeySecret, hash: &ApiKeyHash) -> bool;
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

/// Persistence of credentials' limits (an API key's or a client's budget and model
/// allow-list), one record per credential of an organization. Changes come with their audit
/// records, written in the same transaction.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait CredentialLimitsStore: Send + Sync {
    /// The credential's limits (`credential` is its id, `key_…` or `cli_…`), if any are set.
    async fn get(
        &self,
        organization: &OrganizationId,
        credential: &str,
    ) -> Result<Option<CredentialLimits>, DomainError>;

    /// Sets the credential's limits, replacing any earlier ones.
    async fn put(&self, limits: &CredentialLimits, audit: &AuditRecord) -> Result<(), DomainError>;

    /// Removes the credential's limits; false when it had none (nothing is audited then).
    async fn delete(
        &self,
        organization: &OrganizationId,
        credential: &str,
        audit: &AuditRecord,
    ) -> Result<bool, DomainError>;
}
