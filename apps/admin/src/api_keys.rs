//! `tessera-admin key …`: long-lived API keys (`tsk_…`) of an organization.

use chrono::{DateTime, Utc};
use clap::Subcommand;
use serde_json::json;
use tessera_identity::{ApiKey, ApiKeyId, IdentityError, NewApiKey};
use tessera_kernel::{DomainError, FieldError, Limit, LocSegment, OrganizationId};
use tessera_setup::Tenancy;

use crate::{Failure, OPERATOR};

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create an API key; its secret is printed once.
    Create {
        /// The organization the key acts for.
        #[arg(long)]
        org: String,
        /// Display name, 1-255 characters.
        #[arg(long)]
        name: String,
        /// Scopes, space- or comma-separated (e.g. "chats:invoke models:read").
        #[arg(long)]
        scopes: String,
        /// When the key stops working (RFC 3339, e.g. 2027-01-01T00:00:00Z); never when absent.
        #[arg(long, value_parser = parse_time)]
        expires_at: Option<DateTime<Utc>>,
    },
    /// List an organization's API keys (revoked ones are gone).
    List {
        #[arg(long)]
        org: String,
        #[arg(long, default_value_t = 20)]
        limit: i64,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Revoke an API key: the next request that presents it is refused.
    Revoke {
        #[arg(long)]
        org: String,
        /// The key id (`key_…`).
        id: String,
    },
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|e| format!("not an RFC 3339 time ({e})"))
}

fn organization(text: &str) -> Result<OrganizationId, Failure> {
    text.parse().map_err(|e| Failure(format!("--org: {e}")))
}

/// The option a located validation error is about (`["body", "scopes", 2]` → `--scopes`).
fn option_of(error: &FieldError) -> String {
    let field = match error.loc.get(1) {
        Some(LocSegment::Field(name)) => name.as_str(),
        _ => "",
    };
    let option = match field {
        "expiresAt" => "--expires-at",
        "scopes" => "--scopes",
        "name" => "--name",
        _ => return error.to_string(),
    };
    format!("{option}: {}", error.msg)
}

fn failure(error: IdentityError) -> Failure {
    match error {
        IdentityError::Invalid(errors) => {
            Failure(errors.iter().map(option_of).collect::<Vec<_>>().join("; "))
        }
        other => Failure::from(DomainError::from(other)),
    }
}

pub async fn run(state: &Tenancy, command: KeyCommand, json: bool) -> Result<String, Failure> {
    match command {
        KeyCommand::Create {
            org,
            name,
            scopes,
            expires_at,
        } => {
            let organization_id = organization(&org)?;
            // The organization must exist (and this names it clearly when it does not).
            state
                .organizations
                .get(&organization_id)
                .await
                .map_err(|e| Failure(format!("--org: {}", DomainError::from(e))))?;
            let new = NewApiKey {
                name,
                scopes: scopes
                    .split([' ', ','])
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
                expires_at,
            };
            let (key, secret) = state
                .api_keys
                .create_as_operator(&organization_id, OPERATOR, new)
                .await
                .map_err(failure)?;
            Ok(if json {
                json!({
                    "id": key.id,
                    "secret": secret.expose(),
                    "organizationId": key.organization_id,
                    "name": key.name,
                    "scopes": key.scopes,
                    "expiresAt": key.expires_at,
                    "createdBy": key.created_by,
                })
                .to_string()
            } else {
                format!(
                    "created API key \"{}\" ({}) for {} with scopes {}, {}\nsecret: {}\n(store the secret now: it is not shown again)",
                    key.name,
                    key.id,
                    key.organization_id,
                    key.scopes,
                    key.expires_at
                        .map_or("never expiring".to_owned(), |at| format!(
                            "expiring {}",
                            at.to_rfc3339()
                        )),
                    secret.expose()
                )
            })
        }
        KeyCommand::List { org, limit, cursor } => {
            let organization_id = organization(&org)?;
            let limit = Limit::new(limit).map_err(|e| Failure(format!("--limit: {e}")))?;
            let page = state
                .api_keys
                .list(&organization_id, limit, cursor.as_deref())
                .await
                .map_err(failure)?;
            if json {
                return Ok(json!({ "items": page.items, "nextCursor": page.next_cursor, "hasMore": page.has_more, "totalCount": page.total_count }).to_string());
            }
            let now = Utc::now();
            let mut lines: Vec<String> = page.items.iter().map(|key| describe(key, now)).collect();
            if let Some(cursor) = page.next_cursor {
                lines.push(format!("(more: --cursor {})", cursor.as_str()));
            }
            if lines.is_empty() {
                lines.push("no API keys".to_owned());
            }
            Ok(lines.join("\n"))
        }
        KeyCommand::Revoke { org, id } => {
            let organization_id = organization(&org)?;
            let id: ApiKeyId = id.parse().map_err(|e| Failure(format!("<id>: {e}")))?;
            state
                .api_keys
                .revoke(&organization_id, &id, &crate::operator())
                .await
                .map_err(failure)?;
            Ok(if json {
                json!({ "id": id, "revoked": true }).to_string()
            } else {
                format!("revoked {id}; requests with it are refused from now on")
            })
        }
    }
}

fn describe(key: &ApiKey, now: DateTime<Utc>) -> String {
    let state = if key.is_expired(now) {
        "expired"
    } else {
        "active"
    };
    let last_used = key.last_used_at.map_or("never used".to_owned(), |at| {
        format!("last used {}", at.to_rfc3339())
    });
    format!(
        "{}  {:<7}  {}  [{}]  {}",
        key.id, state, key.name, key.scopes, last_used
    )
}
