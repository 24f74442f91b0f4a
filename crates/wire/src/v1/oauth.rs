//! The bodies of the OAuth 2.0 token endpoint (`/v1/oauth2/token` and `/oauth/token`, client
//! credentials grant, RFC 6749 §4.4): the token request (form-encoded or JSON), the issued
//! access token, and the RFC 6749 §5.2 error, which carries the problem members too.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A token request: form-encoded (RFC 6749) or JSON. The client may instead authenticate
/// with HTTP Basic (`client_secret_basic`).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct TokenRequest {
    /// Must be `client_credentials`.
    #[schema(example = "client_credentials", pattern = "^client_credentials$")]
    pub grant_type: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Space-separated subset of the client's scopes; all of them when absent.
    pub scope: Option<String>,
}

/// An issued access token.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    /// A JWT (EdDSA), to be sent as `Authorization: Bearer <token>`.
    pub access_token: String,
    #[schema(example = "bearer")]
    pub token_type: &'static str,
    #[schema(example = 3600)]
    pub expires_in: u64,
    /// The granted scopes, space-separated.
    pub scope: String,
}

/// An RFC 6749 §5.2 error; the problem members are present too.
#[derive(Debug, Serialize, ToSchema)]
pub struct OAuthError {
    /// `invalid_request`, `invalid_client`, `unsupported_grant_type` or `invalid_scope`.
    #[schema(example = "invalid_client")]
    pub error: &'static str,
    pub error_description: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    pub code: &'static str,
}
