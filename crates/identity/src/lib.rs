//! Identity and access for Tessera: the API clients an organization creates (machine
//! credentials with assigned scopes and a hashed, rotatable secret), the claims of the access
//! tokens issued to them, long-lived API keys (`tsk_…`, `ApiKeyService`), and the
//! `IdentityService` that issues tokens for the client credentials grant and turns a presented
//! token or key back into a `Principal`. Pure domain: hashing, signing and storage are ports
//! (`SecretHasher`, `ApiKeyHasher`, `TokenSigner`, `TokenVerifier`, `ClientStore`,
//! `ApiKeyStore`, and `SessionVerifier` for session tokens of external identity providers)
//! implemented by adapters (`tessera-auth`, `tessera-store`). Its changes (clients created,
//! rotated, revoked; keys created, revoked; credentials' budgets and model allow-lists set,
//! `CredentialLimitsService`) reach their stores with their audit records, and
//! refused credentials go to the `RefusalLog` port (the audit log). The `memory` feature has
//! the store ports' in-memory reference implementations, the `contract` feature their
//! contract suites (`client_store_contract!`, `api_key_store_contract!`) for any other.

mod api_key;
mod api_key_service;
mod claims;
mod client;
#[cfg(feature = "contract")]
pub mod contract;
mod creator_rule;
mod credential_limits;
mod credential_limits_service;
mod error;
// The contract macros' path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod ports;
mod refusal;
mod refusal_recording;
mod service;
mod standing;

pub use api_key::{
    ApiKey, ApiKeyHash, ApiKeyId, ApiKeySecret, MAX_API_KEY_NAME_CHARS, MAX_API_KEY_SCOPES,
    NewApiKey, StoredApiKey,
};
pub use api_key_service::{ApiKeyService, LAST_USED_INTERVAL};
pub use claims::{AccessClaims, SessionClaims, TokenError, unverified_issuer};
pub use client::{Client, ClientId, ClientName, ClientSecret, NewClient, SecretHash, StoredClient};
pub use credential_limits::{
    Credential, CredentialBudget, CredentialLimits, MAX_ALLOWED_MODELS, MAX_MODEL_ID_CHARS,
    NewCredentialBudget, NewCredentialLimits, OnSpent,
};
pub use credential_limits_service::CredentialLimitsService;
pub use error::IdentityError;
pub use ports::{
    ApiKeyHasher, ApiKeyStore, ClientStore, CredentialLimitsStore, RefusalLog, SecretHasher,
    SessionVerifier, TokenSigner, TokenVerifier,
};
#[cfg(any(test, feature = "mocks"))]
pub use ports::{
    MockApiKeyHasher, MockApiKeyStore, MockClientStore, MockCredentialLimitsStore, MockRefusalLog,
    MockSecretHasher, MockSessionVerifier, MockTokenSigner, MockTokenVerifier,
};
pub use service::{IdentityService, IssuedToken, TokenSettings};
