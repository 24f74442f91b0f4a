use std::fmt;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use serde::Serialize;
use tessera_kernel::{OrganizationId, ScopeSet};

tessera_kernel::entity_id!(
    /// An API client's id, also its OAuth2 `client_id`.
    ClientId,
    "cli"
);

/// A client secret in clear text. It exists only between generation and the one time it is
/// shown, and between a token request and its verification; it never appears in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(String);

impl ClientSecret {
    const PREFIX: &'static str = "tss_";

    /// 256 random bits, URL-safe, with a recognisable prefix (for secret scanners).
    pub fn generate() -> Self {
        let bytes: [u8; 32] = rand::random();
        Self(format!("{}{}", Self::PREFIX, URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// Wraps a secret presented by a caller.
    pub fn presented(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientSecret(<redacted>)")
    }
}

/// A one-way hash of a client secret, in the hasher's self-describing format (PHC string).
#[derive(Clone, PartialEq, Eq)]
pub struct SecretHash(pub String);

impl fmt::Debug for SecretHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretHash(<redacted>)")
    }
}

/// Why a client name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("client name must be 1 to 255 characters")]
pub struct ClientNameError;

/// A client's display name: 1 to 255 characters after trimming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientName(String);

impl ClientName {
    pub fn parse(text: &str) -> Result<Self, ClientNameError> {
        let trimmed = text.trim();
        if (1..=255).contains(&trimmed.chars().count()) {
            Ok(Self(trimmed.to_owned()))
        } else {
            Err(ClientNameError)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What is needed to create a client.
#[derive(Debug, Clone)]
pub struct NewClient {
    pub organization_id: OrganizationId,
    pub name: ClientName,
    pub scopes: ScopeSet,
}

/// An API client of an organization (what may be shown: never the secret or its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Client {
    pub id: ClientId,
    pub organization_id: OrganizationId,
    pub name: String,
    pub scopes: ScopeSet,
    /// Increases with every secret rotation; tokens carry the generation they were issued
    /// under, so rotating revokes every earlier token.
    pub secret_generation: u32,
    pub revoked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Client {
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
    }
}

/// A client as stored: the record plus the hash of its current secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredClient {
    pub client: Client,
    pub secret_hash: SecretHash,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_prefixed_and_redacted() {
        let a = ClientSecret::generate();
        let b = ClientSecret::generate();
        assert_ne!(a, b);
        assert!(a.expose().starts_with("tss_") && a.expose().len() == 4 + 43);
        assert_eq!(format!("{a:?}"), "ClientSecret(<redacted>)");
        assert_eq!(
            format!("{:?}", SecretHash("x".into())),
            "SecretHash(<redacted>)"
        );
    }

    #[test]
    fn names_are_bounded() {
        assert!(ClientName::parse(" ci ").is_ok_and(|n| n.as_str() == "ci"));
        assert!(ClientName::parse("").is_err());
        assert!(ClientName::parse(&"x".repeat(256)).is_err());
    }
}
