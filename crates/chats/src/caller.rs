//! Who asks the chats domain, and what their scopes allow them to see.

use tessera_kernel::{DomainError, OrganizationId, Principal, PrincipalKind, Scope};

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
    /// May attach the organization's files to messages (`files:read`).
    pub reads_files: bool,
}

impl Caller {
    /// The caller an authenticated principal is: its own chats, or every chat of its
    /// organization with `chats:admin`.
    pub fn of(principal: &Principal) -> Self {
        let holds = |scope: &str| {
            scope
                .parse::<Scope>()
                .is_ok_and(|scope| principal.can(&scope))
        };
        Self {
            organization: principal.organization_id.clone(),
            subject: principal.subject.clone(),
            kind: principal.kind,
            sees_all: holds("chats:admin"),
            reads_files: holds(FILES_READ),
        }
    }

    /// Whether the caller sees a chat of its organization whose owner is `owner`: its own,
    /// or any with `chats:admin`.
    pub fn sees_owner(&self, owner: &str) -> bool {
        self.sees_all || owner == self.subject
    }

    /// Refuses a turn that attaches files unless the caller may read them: an attachment
    /// puts a file's text before the model, so it needs `files:read` beside the completion's
    /// own scope.
    pub fn may_attach(&self, messages: &[crate::NewMessage]) -> Result<(), DomainError> {
        if self.reads_files || messages.iter().all(|m| m.attachments.is_empty()) {
            return Ok(());
        }
        Err(DomainError::Forbidden {
            code: "insufficient_scope",
            message: format!("attaching files needs the `{FILES_READ}` scope"),
        })
    }
}

/// The scope that reading the organization's files takes.
const FILES_READ: &str = "files:read";

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

    #[test]
    fn attaching_files_needs_files_read() {
        let attaching = |attachments: Vec<String>| crate::NewMessage {
            role: tessera_models::Role::User,
            content: "what does it say?".into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            attachments,
            images: Vec::new(),
        };
        let plain = [attaching(Vec::new())];
        let with_file = [attaching(Vec::new()), attaching(vec!["f1".into()])];
        let invoker = Caller::of(&principal("chats:invoke"));
        assert!(invoker.may_attach(&plain).is_ok());
        let refused = invoker.may_attach(&with_file).unwrap_err();
        assert!(matches!(
            refused,
            DomainError::Forbidden { code: "insufficient_scope", ref message }
                if message == "attaching files needs the `files:read` scope"
        ));
        let reader = Caller::of(&principal("chats:invoke files:read"));
        assert!(reader.may_attach(&with_file).is_ok());
        // `org:admin` holds every resource scope.
        assert!(
            Caller::of(&principal("org:admin"))
                .may_attach(&with_file)
                .is_ok()
        );
    }
}
