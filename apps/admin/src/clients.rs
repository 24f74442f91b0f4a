//! `tessera-admin client …`: API clients (OAuth 2.0 client credentials) of an organization.

use clap::Subcommand;
use serde_json::json;
use tessera_identity::{Client, ClientId, ClientName, NewClient};
use tessera_kernel::{DomainError, Limit, OrganizationId, ScopeSet};
use tessera_setup::Tenancy;

use crate::Failure;

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Create a client; its secret is printed once.
    Create {
        /// The organization the client acts for.
        #[arg(long)]
        org: String,
        /// Scopes, comma- or space-separated (e.g. `chats:invoke,files:read`).
        #[arg(long)]
        scopes: String,
        /// Display name.
        #[arg(long, default_value = "api client")]
        name: String,
    },
    /// Replace a client's secret (printed once); tokens issued under the old one stop working.
    Rotate {
        #[arg(long)]
        org: String,
        /// The client id.
        #[arg(long)]
        id: String,
    },
    /// Revoke a client and every token it holds.
    Revoke {
        #[arg(long)]
        org: String,
        #[arg(long)]
        id: String,
    },
    /// List an organization's clients.
    List {
        #[arg(long)]
        org: String,
        #[arg(long, default_value_t = 20)]
        limit: i64,
        #[arg(long)]
        cursor: Option<String>,
    },
}

fn organization(text: &str) -> Result<OrganizationId, Failure> {
    text.parse().map_err(|e| Failure(format!("--org: {e}")))
}

fn client_id(text: &str) -> Result<ClientId, Failure> {
    text.parse().map_err(|e| Failure(format!("--id: {e}")))
}

fn domain(error: impl Into<DomainError>) -> Failure {
    Failure::from(error.into())
}

pub async fn run(state: &Tenancy, command: ClientCommand, json: bool) -> Result<String, Failure> {
    match command {
        ClientCommand::Create { org, scopes, name } => {
            let organization_id = organization(&org)?;
            // The organization must exist (and this names it clearly when it does not).
            state
                .organizations
                .get(&organization_id)
                .await
                .map_err(|e| Failure(format!("--org: {}", DomainError::from(e))))?;
            let scopes =
                ScopeSet::parse_list(&scopes).map_err(|e| Failure(format!("--scopes: {e}")))?;
            if scopes.is_empty() {
                return Err(Failure("--scopes: at least one scope is required".into()));
            }
            let name = ClientName::parse(&name).map_err(|e| Failure(format!("--name: {e}")))?;
            let (client, secret) = state
                .identity
                .create_client(
                    NewClient {
                        organization_id,
                        name,
                        scopes,
                    },
                    &crate::operator(),
                )
                .await
                .map_err(domain)?;
            Ok(if json {
                json!({
                    "clientId": client.id,
                    "clientSecret": secret.expose(),
                    "organizationId": client.organization_id,
                    "scopes": client.scopes,
                    "name": client.name,
                })
                .to_string()
            } else {
                format!(
                    "created client \"{}\" for {} with scopes {}\nclient_id:     {}\nclient_secret: {}\n(store the secret now: it is not shown again)",
                    client.name,
                    client.organization_id,
                    client.scopes,
                    client.id,
                    secret.expose()
                )
            })
        }
        ClientCommand::Rotate { org, id } => {
            let (organization_id, id) = (organization(&org)?, client_id(&id)?);
            let secret = state
                .identity
                .rotate_secret(&organization_id, &id, &crate::operator())
                .await
                .map_err(domain)?;
            Ok(if json {
                json!({ "clientId": id, "clientSecret": secret.expose(), "organizationId": organization_id }).to_string()
            } else {
                format!(
                    "rotated the secret of {id}; earlier tokens no longer work\nclient_secret: {}\n(store the secret now: it is not shown again)",
                    secret.expose()
                )
            })
        }
        ClientCommand::Revoke { org, id } => {
            let (organization_id, id) = (organization(&org)?, client_id(&id)?);
            state
                .identity
                .revoke(&organization_id, &id, &crate::operator())
                .await
                .map_err(domain)?;
            Ok(if json {
                json!({ "clientId": id, "revoked": true }).to_string()
            } else {
                format!("revoked {id}")
            })
        }
        ClientCommand::List { org, limit, cursor } => {
            let organization_id = organization(&org)?;
            let limit = Limit::new(limit).map_err(|e| Failure(format!("--limit: {e}")))?;
            let page = state
                .identity
                .list(&organization_id, limit, cursor.as_deref())
                .await
                .map_err(domain)?;
            if json {
                return Ok(json!({ "items": page.items, "nextCursor": page.next_cursor, "hasMore": page.has_more, "totalCount": page.total_count }).to_string());
            }
            let mut lines: Vec<String> = page.items.iter().map(describe).collect();
            if let Some(cursor) = page.next_cursor {
                lines.push(format!("(more: --cursor {})", cursor.as_str()));
            }
            if lines.is_empty() {
                lines.push("no clients".to_owned());
            }
            Ok(lines.join("\n"))
        }
    }
}

fn describe(client: &Client) -> String {
    let state = if client.is_active() {
        "active"
    } else {
        "revoked"
    };
    format!(
        "{}  {:<7}  {}  [{}]",
        client.id, state, client.name, client.scopes
    )
}
