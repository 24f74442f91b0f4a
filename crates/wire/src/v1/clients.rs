//! The bodies of `/v1/clients`: an API client as answered (with its secret only in the
//! answers that create or rotate it), the page of clients, and the request that creates one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_identity::Client;
use utoipa::ToSchema;
use validator::Validate;

use crate::paged;

/// An API client (never its secret, except once in the answers that create one).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientOut {
    #[schema(example = "cli_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub organization_id: String,
    pub name: String,
    #[schema(example = json!(["chats:invoke", "files:read"]))]
    pub scopes: Vec<String>,
    /// Increases with every rotation.
    pub secret_generation: u32,
    pub revoked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Present only when the client was just created or rotated; store it now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "tss_…")]
    pub client_secret: Option<String>,
}

impl ClientOut {
    pub fn from(client: Client, secret: Option<String>) -> Self {
        Self {
            id: client.id.to_string(),
            organization_id: client.organization_id.to_string(),
            name: client.name,
            scopes: client.scopes.iter().map(ToString::to_string).collect(),
            secret_generation: client.secret_generation,
            revoked_at: client.revoked_at,
            created_at: client.created_at,
            updated_at: client.updated_at,
            client_secret: secret,
        }
    }
}

paged!(ClientOut => ClientPage, "A page of clients.");

/// What a new client is called and may do.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateClient {
    #[validate(length(min = 1, max = 255))]
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// At least one scope; each must be held by the caller (no one grants more than they have).
    #[validate(length(min = 1, max = 64))]
    #[schema(min_items = 1, max_items = 64)]
    pub scopes: Vec<String>,
    /// Its budget and model allow-list from the start (as `PUT /v1/clients/{id}/limits`
    /// sets them later); absent for none.
    pub limits: Option<crate::v1::credential_limits::CredentialLimitsIn>,
}
