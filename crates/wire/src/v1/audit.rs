//! The bodies of `/v1/audit-events`: one audit event as answered (from the kernel's audit
//! record), the page of events, and the query parameters that filter and page them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_kernel::AuditRecord;
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::paged;

/// One audit event.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEventOut {
    #[schema(example = "aud_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub organization_id: Option<String>,
    pub occurred_at: DateTime<Utc>,
    /// `user`, `client`, `api_key`, `operator` (the admin CLI), `system` or `anonymous` (a
    /// refused credential).
    #[schema(example = "client")]
    pub actor_kind: String,
    /// The user's subject, the client id or the API key id; the operator's name; `null` for
    /// an anonymous caller.
    pub actor_id: Option<String>,
    /// `<resourceType>.<verb>`; refused credentials are `authentication.fail`.
    #[schema(example = "particle.create")]
    pub action: String,
    #[schema(example = "particle")]
    pub resource_type: String,
    pub resource_id: Option<String>,
    /// The client's address (as a trusted proxy reported it, when one relayed the request).
    pub address: Option<String>,
    /// The `X-Request-Id` of the request that made the change.
    pub request_id: Option<String>,
}

impl From<AuditRecord> for AuditEventOut {
    fn from(record: AuditRecord) -> Self {
        Self {
            id: record.id.to_string(),
            organization_id: record.organization_id.map(|org| org.to_string()),
            occurred_at: record.occurred_at,
            actor_kind: record.actor_kind.as_str().to_owned(),
            actor_id: record.actor_id,
            action: record.action,
            resource_type: record.resource_type,
            resource_id: record.resource_id,
            address: record.address,
            request_id: record.request_id,
        }
    }
}

paged!(AuditEventOut => AuditEventPage, "A page of audit events.");

/// Which events to list; every filter given must match exactly.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListAuditEvents {
    /// Events at or after this instant (RFC 3339, e.g. `2026-11-01T00:00:00Z`).
    pub from: Option<DateTime<Utc>>,
    /// Events before this instant (RFC 3339); later than `from`.
    pub to: Option<DateTime<Utc>>,
    /// `user`, `client`, `api_key`, `operator`, `system` or `anonymous`.
    pub actor_kind: Option<String>,
    /// A user's subject, a client id, an API key id or an operator's name.
    pub actor_id: Option<String>,
    /// e.g. `particle`, `api_key`, `dataset`.
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// e.g. `particle.create`.
    pub action: Option<String>,
    /// The changes made by the request with this `X-Request-Id`.
    pub request_id: Option<String>,
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}
