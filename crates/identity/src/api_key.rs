use std::fmt;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use serde::Serialize;
use tessera_kernel::{OrganizationId, ScopeSet};

tessera_kernel::entity_id!(
    /// An API key's id (`key_…`): the principal a key's requests, usage and budgets name.
    ApiKeyId,
    "key"
);

/// An API key's secret in clear text (`tsk_` + 43 URL-safe base64 characters). It exists only
/// between generation and the one time it is shown, and while a presented key is checked; it
/// never appears in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    /// Every API key starts with this (for secret scanners, and for telling keys from JWTs).
    pub const PREFIX: &'static str = "tsk_";

    /// 256 random bits, URL-safe, with the recognisable prefix.
    pub fn generate() -> Self {
        let bytes: [u8; 32] = rand::random();
        Self(format!("{}{}", Self::PREFIX, URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// Wraps a key presented by a caller.
    pub fn presented(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// Whether a bearer credential is meant as an API key (it may still be unknown).
    pub fn is_api_key(token: &str) -> bool {
        token.starts_with(Self::PREFIX)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKeySecret(<redacted>)")
    }
}

/// The keyed hash of an API key's secret (what is stored, and what a key is looked up by).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeyHash(pub String);

impl fmt::Debug for ApiKeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKeyHash(<redacted>)")
    }
}

/// The most scopes one key may list.
pub const MAX_API_KEY_SCOPES: usize = 64;

/// The longest name of a key, in characters (after trimming).
pub const MAX_API_KEY_NAME_CHARS: usize = 255;

/// What a caller asks for when creating a key; [`crate::ApiKeyService`] checks every field.
#[derive(Debug, Clone, Default)]
pub struct NewApiKey {
    /// 1 to 255 characters after trimming.
    pub name: String,
    /// Scope names (either spelling); at least one, each held by the creator.
    pub scopes: Vec<String>,
    /// When the key stops working; must lie in the future.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A long-lived API key of an organization (what may be shown: never the secret or its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: ApiKeyId,
    pub organization_id: OrganizationId,
    pub name: String,
    pub scopes: ScopeSet,
    /// The principal (client id, user subject or key id) or operator that created it.
    pub created_by: String,
    pub expires_at: Option<DateTime<Utc>>,
    /// When the key last authenticated a request, to the minute (written at most once a
    /// minute per key).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Set when the key was revoked (deleted): it works no more and is no longer listed, but
    /// its row stays, so usage records naming it can still be traced.
    #[serde(skip)]
    pub revoked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl ApiKey {
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }

    /// Whether the key has expired at `now` (it expires at `expires_at` exactly).
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// A key as stored: the record plus the keyed hash of its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredApiKey {
    pub key: ApiKey,
    pub secret_hash: ApiKeyHash,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_prefixed_and_redacted() {
        let a = ApiKeySecret::generate();
        let b = ApiKeySecret::generate();
        assert_ne!(a, b);
        assert!(a.expose().starts_with("tsk_") && a.expose().len() == 4 + 43);
        assert!(
            a.expose()[4..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert!(ApiKeySecret::is_api_key(a.expose()));
        assert!(!ApiKeySecret::is_api_key("eyJhbGciOiJFZERTQSJ9.e30.sig"));
        assert_eq!(format!("{a:?}"), "ApiKeySecret(<redacted>)");
        assert_eq!(
            format!("{:?}", ApiKeyHash("x".into())),
            "ApiKeyHash(<redacted>)"
        );
    }

    #[test]
    fn ids_carry_their_prefix() {
        let id = ApiKeyId::generate();
        assert!(id.as_str().starts_with("key_"));
        assert!(
            "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80"
                .parse::<ApiKeyId>()
                .is_err()
        );
    }
}
