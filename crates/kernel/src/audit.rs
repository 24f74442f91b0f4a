//! The audit record: who changed what, when, from where. Each domain decides which of its
//! changes are audited and builds the record here (`AuditRecord::of` for an authenticated
//! principal, `AuditRecord::by_operator` for the admin CLI), then hands it to its store port
//! together with the change, so the store writes both in one transaction: a change that fails
//! leaves no record. Records never hold a secret or a presented credential.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{OrganizationId, Origin, Principal, PrincipalKind};

crate::entity_id!(
    /// An audit event's id (`aud_…`): sorts by the time it was made.
    AuditEventId,
    "aud"
);

/// Who made a change (or failed to authenticate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// A person with a session token.
    User,
    /// A machine client (client credentials).
    Client,
    /// A long-lived API key.
    ApiKey,
    /// An operator through `tessera-admin`.
    Operator,
    /// The service itself (the first-run bootstrap).
    System,
    /// A caller whose credentials were refused.
    Anonymous,
}

impl ActorKind {
    pub const ALL: [ActorKind; 6] = [
        ActorKind::User,
        ActorKind::Client,
        ActorKind::ApiKey,
        ActorKind::Operator,
        ActorKind::System,
        ActorKind::Anonymous,
    ];

    /// The stored and serialised spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ActorKind::User => "user",
            ActorKind::Client => "client",
            ActorKind::ApiKey => "api_key",
            ActorKind::Operator => "operator",
            ActorKind::System => "system",
            ActorKind::Anonymous => "anonymous",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

impl From<PrincipalKind> for ActorKind {
    fn from(kind: PrincipalKind) -> Self {
        match kind {
            PrincipalKind::User => ActorKind::User,
            PrincipalKind::Client => ActorKind::Client,
            PrincipalKind::ApiKey => ActorKind::ApiKey,
        }
    }
}

/// One audit event. `organization_id` is `None` only for failed authentications whose
/// organization is unknown (only operators see those).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    pub id: AuditEventId,
    pub organization_id: Option<OrganizationId>,
    pub occurred_at: DateTime<Utc>,
    pub actor_kind: ActorKind,
    /// The principal's subject, client id or key id; the operator's name; `None` for an
    /// anonymous caller.
    pub actor_id: Option<String>,
    /// `<resource>.<verb>`, e.g. `particle.create`.
    pub action: String,
    /// e.g. `particle`, `api_key`.
    pub resource_type: String,
    pub resource_id: Option<String>,
    /// The client's address, when the change came over the network.
    pub address: Option<String>,
    /// The id of the request that made the change.
    pub request_id: Option<String>,
}

impl AuditRecord {
    /// A change `principal` made in its organization, from the origin of its request.
    pub fn of(
        principal: &Principal,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        now: DateTime<Utc>,
    ) -> Self {
        let origin = principal.origin.clone().unwrap_or_default();
        Self {
            id: AuditEventId::generate(),
            organization_id: Some(principal.organization_id.clone()),
            occurred_at: now,
            actor_kind: principal.kind.into(),
            actor_id: Some(principal.subject.clone()),
            action: action.to_owned(),
            resource_type: resource_type.to_owned(),
            resource_id: Some(resource_id.to_owned()),
            address: origin.address,
            request_id: origin.request_id,
        }
    }

    /// A change an operator (the admin CLI) or the service itself made in `organization`.
    pub fn by_operator(
        organization: &OrganizationId,
        kind: ActorKind,
        operator: &str,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: AuditEventId::generate(),
            organization_id: Some(organization.clone()),
            occurred_at: now,
            actor_kind: kind,
            actor_id: Some(operator.to_owned()),
            action: action.to_owned(),
            resource_type: resource_type.to_owned(),
            resource_id: Some(resource_id.to_owned()),
            address: None,
            request_id: None,
        }
    }

    /// A refused credential: `resource_type` names its kind (`access_token`, `api_key`,
    /// `client_secret`), `resource_id` the client or key it claimed to be when known, and
    /// `organization` that one's organization when known. Never the credential itself.
    pub fn failed_authentication(
        organization: Option<OrganizationId>,
        resource_type: &str,
        resource_id: Option<String>,
        origin: Option<&Origin>,
        now: DateTime<Utc>,
    ) -> Self {
        let origin = origin.cloned().unwrap_or_default();
        Self {
            id: AuditEventId::generate(),
            organization_id: organization,
            occurred_at: now,
            actor_kind: ActorKind::Anonymous,
            actor_id: None,
            action: FAILED_AUTHENTICATION.to_owned(),
            resource_type: resource_type.to_owned(),
            resource_id,
            address: origin.address,
            request_id: origin.request_id,
        }
    }
}

/// The action of a refused credential.
pub const FAILED_AUTHENTICATION: &str = "authentication.fail";

/// Who makes a change a service audits: an authenticated principal (the API), or an operator
/// or the service itself acting on an organization (the admin CLI, the bootstrap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    Principal(Principal),
    Operator(String),
    System,
}

impl Actor {
    /// How records the actor creates name their creator: the principal's subject, the
    /// operator's name, or `tessera`.
    pub fn name(&self) -> &str {
        match self {
            Actor::Principal(principal) => &principal.subject,
            Actor::Operator(name) => name,
            Actor::System => "tessera",
        }
    }

    /// The record of `action` on a resource of `organization` by this actor.
    pub fn record(
        &self,
        organization: &OrganizationId,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        now: DateTime<Utc>,
    ) -> AuditRecord {
        match self {
            Actor::Principal(principal) => {
                let mut record =
                    AuditRecord::of(principal, action, resource_type, resource_id, now);
                record.organization_id = Some(organization.clone());
                record
            }
            Actor::Operator(name) => AuditRecord::by_operator(
                organization,
                ActorKind::Operator,
                name,
                action,
                resource_type,
                resource_id,
                now,
            ),
            Actor::System => AuditRecord::by_operator(
                organization,
                ActorKind::System,
                "tessera",
                action,
                resource_type,
                resource_id,
                now,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScopeSet;

    #[test]
    fn a_principals_record_carries_its_origin() {
        let principal = Principal {
            organization_id: "org_a".parse().unwrap(),
            subject: "cli_1".into(),
            kind: PrincipalKind::Client,
            scopes: ScopeSet::default(),
            origin: None,
        }
        .with_origin(Origin {
            address: Some("192.0.2.7".into()),
            request_id: Some("req-1".into()),
        });
        let now = Utc::now();
        let record = AuditRecord::of(&principal, "particle.create", "particle", "prt_1", now);
        assert_eq!(record.organization_id, Some(principal.organization_id));
        assert_eq!(record.actor_kind, ActorKind::Client);
        assert_eq!(record.actor_id.as_deref(), Some("cli_1"));
        assert_eq!(record.address.as_deref(), Some("192.0.2.7"));
        assert_eq!(record.request_id.as_deref(), Some("req-1"));
        assert_eq!(record.occurred_at, now);
        assert!(record.id.as_str().starts_with("aud_"));
    }

    #[test]
    fn actor_kinds_round_trip() {
        for kind in ActorKind::ALL {
            assert_eq!(ActorKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ActorKind::parse("root"), None);
    }
}
