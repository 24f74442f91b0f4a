//! The bodies of `/v1/api-keys`: a long-lived API key as answered (with its secret only in
//! the answer that creates it), the page of keys, and the request that creates one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_identity::ApiKey;
use utoipa::ToSchema;
use validator::Validate;

use crate::paged;

/// An API key (never its secret, except once in the answer that creates it).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyOut {
    #[schema(example = "key_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub organization_id: String,
    pub name: String,
    #[schema(example = json!(["chats:invoke", "models:read"]))]
    pub scopes: Vec<String>,
    /// When the key stops working; `null` for never.
    pub expires_at: Option<DateTime<Utc>>,
    /// When the key last authenticated a request (recorded at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// The principal that created the key (a client id, a user's subject, a key id), or
    /// `tessera-admin` for keys an operator created.
    pub created_by: String,
    /// Present only in the answer that creates the key; store it now. Send it as
    /// `Authorization: Bearer tsk_…`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "tsk_…")]
    pub secret: Option<String>,
}

impl ApiKeyOut {
    pub fn from(key: ApiKey, secret: Option<String>) -> Self {
        Self {
            id: key.id.to_string(),
            organization_id: key.organization_id.to_string(),
            name: key.name,
            scopes: key.scopes.iter().map(ToString::to_string).collect(),
            expires_at: key.expires_at,
            last_used_at: key.last_used_at,
            created_at: key.created_at,
            created_by: key.created_by,
            secret,
        }
    }
}

paged!(ApiKeyOut => ApiKeyPage, "A page of API keys.");

/// What a new key is called, may do, and until when.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateApiKey {
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255, example = "support bot")]
    pub name: String,
    /// At least one scope; each must be held by the caller (no one grants more than they have).
    #[validate(length(min = 1, max = 64))]
    #[schema(min_items = 1, max_items = 64, example = json!(["chats:invoke", "models:read"]))]
    pub scopes: Vec<String>,
    /// When the key stops working (RFC 3339, in the future); absent for never.
    pub expires_at: Option<DateTime<Utc>>,
    /// Its budget and model allow-list from the start (as `PUT /v1/api-keys/{id}/limits`
    /// sets them later); absent for none.
    pub limits: Option<crate::v1::credential_limits::CredentialLimitsIn>,
}
