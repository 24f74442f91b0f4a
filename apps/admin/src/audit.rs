//! `tessera-admin audit …`: the audit log, of one organization (`--org`) or of all of them,
//! including refused credentials of no known organization (which only operators see).

use chrono::{DateTime, Utc};
use clap::Subcommand;
use serde_json::json;
use tessera_audit::{AuditQuery, AuditScope};
use tessera_kernel::{AuditRecord, DomainError, FieldError, Limit, LocSegment};
use tessera_setup::Tenancy;

use crate::Failure;

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// List audit events, newest first.
    List {
        /// Only this organization's events; every organization's (and those of none) when
        /// absent.
        #[arg(long)]
        org: Option<String>,
        /// Events at or after this instant (RFC 3339).
        #[arg(long, value_parser = parse_time)]
        from: Option<DateTime<Utc>>,
        /// Events before this instant (RFC 3339).
        #[arg(long, value_parser = parse_time)]
        to: Option<DateTime<Utc>>,
        /// user, client, api_key, operator, system or anonymous.
        #[arg(long)]
        actor_kind: Option<String>,
        #[arg(long)]
        actor_id: Option<String>,
        #[arg(long)]
        resource_type: Option<String>,
        #[arg(long)]
        resource_id: Option<String>,
        /// e.g. particle.create
        #[arg(long)]
        action: Option<String>,
        /// The changes made by the request with this id.
        #[arg(long)]
        request_id: Option<String>,
        /// Page size, 1-100.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// `nextCursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|e| format!("not an RFC 3339 time ({e})"))
}

/// The option a located validation error is about (`["query", "actorKind"]` →
/// `--actor-kind`).
fn option_of(error: &FieldError) -> String {
    let option = match error.loc.get(1) {
        Some(LocSegment::Field(name)) => name
            .chars()
            .flat_map(|c| {
                if c.is_ascii_uppercase() {
                    vec!['-', c.to_ascii_lowercase()]
                } else {
                    vec![c]
                }
            })
            .collect::<String>(),
        _ => return error.to_string(),
    };
    format!("--{option}: {}", error.msg)
}

fn failure(error: DomainError) -> Failure {
    match error {
        DomainError::Validation(errors) => {
            Failure(errors.iter().map(option_of).collect::<Vec<_>>().join("; "))
        }
        other => Failure::from(other),
    }
}

pub async fn run(state: &Tenancy, command: AuditCommand, json: bool) -> Result<String, Failure> {
    let AuditCommand::List {
        org,
        from,
        to,
        actor_kind,
        actor_id,
        resource_type,
        resource_id,
        action,
        request_id,
        limit,
        cursor,
    } = command;
    let scope = match org {
        Some(org) => {
            AuditScope::Organization(org.parse().map_err(|e| Failure(format!("--org: {e}")))?)
        }
        None => AuditScope::All,
    };
    let limit = Limit::new(limit).map_err(|e| Failure(format!("--limit: {e}")))?;
    let query = AuditQuery {
        from,
        to,
        actor_kind,
        actor_id,
        resource_type,
        resource_id,
        action,
        request_id,
    };
    let page = state
        .audit
        .list(&scope, query, limit, cursor.as_deref())
        .await
        .map_err(failure)?;
    if json {
        return Ok(json!({ "items": page.items, "nextCursor": page.next_cursor, "hasMore": page.has_more, "totalCount": page.total_count }).to_string());
    }
    let mut lines: Vec<String> = page.items.iter().map(describe).collect();
    if let Some(cursor) = page.next_cursor {
        lines.push(format!("(more: --cursor {})", cursor.as_str()));
    }
    if lines.is_empty() {
        lines.push("no audit events".to_owned());
    }
    Ok(lines.join("\n"))
}

fn describe(record: &AuditRecord) -> String {
    let or_dash = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".to_owned());
    format!(
        "{}  {}  {}  {}:{}  {} {}  from {}  request {}",
        record.occurred_at.to_rfc3339(),
        record
            .organization_id
            .as_ref()
            .map_or("-".to_owned(), ToString::to_string),
        record.action,
        record.actor_kind.as_str(),
        or_dash(&record.actor_id),
        record.resource_type,
        or_dash(&record.resource_id),
        or_dash(&record.address),
        or_dash(&record.request_id),
    )
}
