//! Who asks the chats domain, and what their scopes allow them to see.

use tessera_kernel::{OrganizationId, Principal, PrincipalKind, Scope};

/// Who asks, within their organization.
#[derive(Debug, Clone)]
pub struct Caller {
    pub organization: OrganizationId,
    /// The principal's subject: chats belong to it.
    pub subject: String,
    /// Recorded with the usage of the caller's completions.
    pub kind: PrincipalKind,
    /// May see and manage every chat of the organization (`chats:admin`).
    pub sees_all: bool,
}

impl Caller {
    /// The caller an authenticated principal is: its own chats, or every chat of its
    /// organization with `chats:admin`.
    pub fn of(principal: &Principal) -> Self {
        let admin = "chats:admin"
            .parse::<Scope>()
            .is_ok_and(|scope| principal.can(&scope));
        Self {
            organization: principal.organization_id.clone(),
            subject: principal.subject.clone(),
            kind: principal.kind,
            sees_all: admin,
        }
    }
}

#[cfg(test)]
mod tests {
    use tessera_kernel::ScopeSet;

    use super::*;

    fn principal(scopes: &str) -> Principal {
        Principal {
            organization_id: OrganizationId::generate(),
            subject: "ann".into(),
            kind: PrincipalKind::User,
            scopes: ScopeSet::parse_list(scopes).unwrap(),
            origin: None,
        }
    }

    #[test]
    fn chats_admin_sees_every_chat_of_the_organization() {
        assert!(!Caller::of(&principal("chats:invoke chats:read")).sees_all);
        assert!(Caller::of(&principal("chats:admin")).sees_all);
        let caller = Caller::of(&principal("chats:read"));
        assert_eq!(caller.subject, "ann");
        assert_eq!(caller.kind, PrincipalKind::User);
    }
}
