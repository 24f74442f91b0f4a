//! What the chats domain asks of its caller (the kernel's `Caller`): whose chats it sees, and
//! whether it may attach files.

use tessera_kernel::{Caller, DomainError, Scope};

/// Whether the caller sees every chat of its organization (`chats:admin`), not only its own.
pub(crate) fn sees_all(caller: &Caller) -> bool {
    caller.holds(&Scope::CHATS_ADMIN)
}

/// Whether the caller sees a chat (or an artifact) of its organization owned by `owner`.
pub(crate) fn sees_owner(caller: &Caller, owner: &str) -> bool {
    caller.sees_owner(owner, &Scope::CHATS_ADMIN)
}

/// The owner a list is narrowed to: the caller's own records, unless it sees all.
pub(crate) fn listed_owner(caller: &Caller) -> Option<String> {
    (!sees_all(caller)).then(|| caller.subject().to_owned())
}

/// Refuses a turn that attaches files unless the caller may read them: an attachment puts a
/// file's text before the model, so it needs `files:read` beside the completion's own scope.
pub(crate) fn may_attach(
    caller: &Caller,
    messages: &[crate::NewMessage],
) -> Result<(), DomainError> {
    if messages.iter().all(|m| m.attachments.is_empty()) || caller.holds(&Scope::FILES_READ) {
        return Ok(());
    }
    Err(DomainError::Forbidden {
        code: "insufficient_scope",
        message: format!("attaching files needs the `{}` scope", Scope::FILES_READ),
    })
}

#[cfg(test)]
mod tests {
    use tessera_kernel::{OrganizationId, Principal, PrincipalKind, ScopeSet};

    use super::*;

    fn caller(scopes: &str) -> Caller {
        Caller::of(Principal {
            organization_id: OrganizationId::generate(),
            subject: "ann".into(),
            kind: PrincipalKind::User,
            scopes: ScopeSet::parse_list(scopes).unwrap(),
            origin: None,
        })
    }

    #[test]
    fn chats_admin_sees_every_chat_of_the_organization() {
        assert!(!sees_all(&caller("chats:invoke chats:read")));
        assert!(sees_all(&caller("chats:admin")));
        assert_eq!(listed_owner(&caller("chats:read")).as_deref(), Some("ann"));
        assert_eq!(listed_owner(&caller("chats:admin")), None);
        assert!(sees_owner(&caller("chats:read"), "ann"));
        assert!(!sees_owner(&caller("chats:read"), "bob"));
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
        let invoker = caller("chats:invoke");
        assert!(may_attach(&invoker, &plain).is_ok());
        let refused = may_attach(&invoker, &with_file).unwrap_err();
        assert!(matches!(
            refused,
            DomainError::Forbidden { code: "insufficient_scope", ref message }
                if message == "attaching files needs the `files:read` scope"
        ));
        assert!(may_attach(&caller("chats:invoke files:read"), &with_file).is_ok());
        // `org:admin` holds every resource scope.
        assert!(may_attach(&caller("org:admin"), &with_file).is_ok());
    }
}
