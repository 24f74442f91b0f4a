//! Who asks a domain service to act: the one caller type every domain takes. A caller acts
//! within one organization, as an authenticated principal (the API, MCP, a batch run for its
//! creator), an operator (the admin CLI) or the service itself (retrieval, the bootstrap).
//! Domains ask it what they need (the organization, the subject that owns what it creates,
//! whether it holds a scope, the audit record of a change) instead of each keeping its own
//! copy of the principal's fields.

use chrono::{DateTime, Utc};

use crate::{Actor, AuditRecord, DomainError, OrganizationId, Principal, PrincipalKind, Scope};

/// Who asks, within which organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    organization: OrganizationId,
    actor: Actor,
}

impl Caller {
    /// An authenticated principal, in its own organization.
    pub fn of(principal: Principal) -> Self {
        Self {
            organization: principal.organization_id.clone(),
            actor: Actor::Principal(principal),
        }
    }

    /// An operator (the admin CLI) acting on `organization` under `name`.
    pub fn operator(organization: OrganizationId, name: impl Into<String>) -> Self {
        Self {
            organization,
            actor: Actor::Operator(name.into()),
        }
    }

    /// The service itself acting on `organization` (retrieval for a chat, the bootstrap).
    pub fn system(organization: OrganizationId) -> Self {
        Self {
            organization,
            actor: Actor::System,
        }
    }

    pub fn organization(&self) -> &OrganizationId {
        &self.organization
    }

    /// Who the caller is: records it creates name it as their creator or owner.
    pub fn subject(&self) -> &str {
        self.actor.name()
    }

    /// Who the audit records of the caller's changes name.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The authenticated principal, when the caller is one.
    pub fn as_principal(&self) -> Option<&Principal> {
        match &self.actor {
            Actor::Principal(principal) => Some(principal),
            Actor::Operator(_) | Actor::System => None,
        }
    }

    /// The principal's kind, recorded with the usage it causes; `None` for an operator or
    /// the service itself.
    pub fn principal_kind(&self) -> Option<PrincipalKind> {
        self.as_principal().map(|principal| principal.kind)
    }

    /// The principal kind the usage the caller causes is recorded under. Usage is metered
    /// per principal, so an operator or the service itself cannot cause any (start a
    /// completion, make embeddings).
    pub fn metered_kind(&self) -> Result<PrincipalKind, DomainError> {
        self.principal_kind().ok_or_else(|| DomainError::Forbidden {
            code: "principal_required",
            message: "usage is metered per principal: only an authenticated principal may \
                      cause it"
                .into(),
        })
    }

    /// Whether the caller holds `scope`. Operators and the service itself act with the
    /// organization's full authority: they were let in by whoever runs the service, not by
    /// a token's scopes.
    pub fn holds(&self, scope: &Scope) -> bool {
        self.as_principal()
            .is_none_or(|principal| principal.can(scope))
    }

    /// 403 `insufficient_scope` unless the caller holds `scope`: for an operation that needs
    /// a second scope in some requests only (the route table checks the first).
    pub fn require(&self, scope: &Scope) -> Result<(), DomainError> {
        if self.holds(scope) {
            return Ok(());
        }
        Err(DomainError::Forbidden {
            code: "insufficient_scope",
            message: format!("this request also needs the `{scope}` scope"),
        })
    }

    /// Whether the caller sees a record of its organization owned by `owner`: its own, or
    /// any when it holds `admin` (e.g. `chats:admin`).
    pub fn sees_owner(&self, owner: &str, admin: &Scope) -> bool {
        owner == self.subject() || self.holds(admin)
    }

    /// The audit record of `action` on a resource of the caller's organization.
    pub fn audit(
        &self,
        action: &str,
        resource_type: &str,
        resource_id: &str,
        at: DateTime<Utc>,
    ) -> AuditRecord {
        self.actor
            .record(&self.organization, action, resource_type, resource_id, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ActorKind, ScopeSet};

    fn principal(scopes: &str) -> Principal {
        Principal {
            organization_id: OrganizationId::generate(),
            subject: "ann".into(),
            kind: PrincipalKind::User,
            scopes: ScopeSet::parse_list(scopes).unwrap(),
            origin: None,
        }
    }

    fn scope(text: &str) -> Scope {
        text.parse().unwrap()
    }

    #[test]
    fn a_principal_holds_its_scopes_and_what_they_imply() {
        let caller = Caller::of(principal("chats:invoke files:admin"));
        assert!(caller.holds(&scope("chats:invoke")));
        assert!(caller.holds(&scope("files:read")));
        assert!(!caller.holds(&scope("chats:admin")));
        assert_eq!(caller.subject(), "ann");
        assert_eq!(caller.principal_kind(), Some(PrincipalKind::User));
        assert_eq!(caller.metered_kind(), Ok(PrincipalKind::User));
        let refused = caller.require(&scope("usage:read")).unwrap_err();
        assert!(matches!(
            refused,
            DomainError::Forbidden { code: "insufficient_scope", ref message }
                if message == "this request also needs the `usage:read` scope"
        ));
    }

    #[test]
    fn an_admin_scope_sees_every_owner_others_their_own() {
        let admin = scope("chats:admin");
        let reader = Caller::of(principal("chats:read"));
        assert!(reader.sees_owner("ann", &admin));
        assert!(!reader.sees_owner("bob", &admin));
        assert!(Caller::of(principal("chats:admin")).sees_owner("bob", &admin));
        assert!(Caller::of(principal("org:admin")).sees_owner("bob", &admin));
    }

    #[test]
    fn operators_and_the_service_act_with_full_authority() {
        let organization = OrganizationId::generate();
        let operator = Caller::operator(organization.clone(), "ops");
        assert!(operator.holds(&Scope::ORG_OWNER));
        assert_eq!(operator.subject(), "ops");
        assert_eq!(operator.principal_kind(), None);
        assert!(matches!(
            operator.metered_kind(),
            Err(DomainError::Forbidden {
                code: "principal_required",
                ..
            })
        ));
        let system = Caller::system(organization.clone());
        assert_eq!(system.subject(), "tessera");
        assert!(system.sees_owner("bob", &scope("chats:admin")));
        let record = operator.audit("particle.create", "particle", "par_1", Utc::now());
        assert_eq!(record.organization_id, Some(organization));
        assert_eq!(record.actor_kind, ActorKind::Operator);
        assert_eq!(record.actor_id.as_deref(), Some("ops"));
    }

    #[test]
    fn a_principals_audit_record_names_it_and_its_organization() {
        let principal = principal("files:write");
        let organization = principal.organization_id.clone();
        let record = Caller::of(principal).audit("file.create", "file", "fil_1", Utc::now());
        assert_eq!(record.organization_id, Some(organization));
        assert_eq!(record.actor_kind, ActorKind::User);
        assert_eq!(record.actor_id.as_deref(), Some("ann"));
    }
}
