use serde::{Deserialize, Serialize};

/// The claims of a Tessera access token (a JWT). Names follow RFC 9068 where one exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    /// Issuer.
    pub iss: String,
    /// The client id (for client credentials tokens).
    pub sub: String,
    /// Audience.
    pub aud: String,
    /// The organization the token acts for.
    pub org: String,
    /// Granted scopes, space-separated.
    pub scope: String,
    /// The secret generation the token was issued under.
    #[serde(rename = "sgen")]
    pub secret_generation: u32,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    /// Unique token id.
    pub jti: String,
}

/// Why a presented token was refused. The message is safe to show to the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token's signature is invalid or its key is unknown")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was not issued for this service")]
    WrongIssuerOrAudience,
    #[error("the token's algorithm is not accepted")]
    DisallowedAlgorithm,
    #[error("the token has been revoked")]
    Revoked,
    #[error("the token's organization is not known to this service")]
    UnknownOrganization,
    #[error("the token cannot be checked right now")]
    Unavailable,
    /// The provider's discovery document does not name the configured issuer (OpenID
    /// Connect Discovery 1.0, section 4.3), so none of its keys is trusted.
    #[error(
        "the token's identity provider cannot be trusted: its discovery document names another issuer"
    )]
    UntrustedProvider,
    #[error("the API key is unknown or has been revoked")]
    UnknownApiKey,
    #[error("the API key has expired")]
    ApiKeyExpired,
}

/// What a verified session token says about its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionClaims {
    pub subject: String,
    pub organization: String,
    /// Granted scopes, space-separated.
    pub scope: String,
}

/// The `iss` claim of a JWT, read without checking anything: only to pick the verifier that
/// will then check everything.
pub fn unverified_issuer(token: &str) -> Option<String> {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    #[derive(Deserialize)]
    struct Issuer {
        iss: Option<String>,
    }
    serde_json::from_slice::<Issuer>(&bytes).ok()?.iss
}

#[cfg(test)]
mod tests {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

    use super::*;

    #[test]
    fn issuer_is_read_from_the_payload() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"iss":"https://idp.example","sub":"u"}"#);
        assert_eq!(
            unverified_issuer(&format!("e30.{payload}.sig")).as_deref(),
            Some("https://idp.example")
        );
        assert_eq!(unverified_issuer("garbage"), None);
        assert_eq!(
            unverified_issuer(&format!("e30.{}.sig", URL_SAFE_NO_PAD.encode(b"{}"))),
            None
        );
    }
}
