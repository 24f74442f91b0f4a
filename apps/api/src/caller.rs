//! Who is calling: the authenticated principal the `authorize` middleware put on the
//! request, as the extractor handlers take, with the checks a handler makes beyond the route
//! table's (a second scope some requests need).

use actix_web::{FromRequest, HttpMessage, HttpRequest, dev::Payload};
use tessera_chats::Caller as ChatCaller;
use tessera_kernel::Principal;
use tessera_knowledge::KnowledgeCaller;

use crate::problem::ApiError;

/// The authenticated principal of the request (set by `authorize`).
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl Caller {
    /// Who the audit records of this request's changes name.
    pub fn actor(&self) -> tessera_kernel::Actor {
        tessera_kernel::Actor::Principal(self.0.clone())
    }

    /// 403 `insufficient_scope` unless the caller holds `scope`, for an operation that
    /// needs a second scope in some requests only (the route table names the first).
    pub fn require(&self, scope: &'static str) -> Result<(), ApiError> {
        let allowed = scope
            .parse::<tessera_kernel::Scope>()
            .is_ok_and(|needed| self.0.can(&needed));
        if allowed {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "insufficient_scope",
                format!("this request also needs the `{scope}` scope"),
            ))
        }
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        // Absent only if a handler needing a caller was declared public: fail closed. The
        // principal carries the request's origin, for the audit records of its changes.
        std::future::ready(
            req.extensions()
                .get::<Principal>()
                .cloned()
                .map(|principal| Caller(principal.with_origin(crate::origin::origin_of(req))))
                .ok_or_else(|| {
                    ApiError::unauthenticated(
                        "missing_token",
                        "this operation needs `Authorization: Bearer <access token>`",
                    )
                }),
        )
    }
}

/// The caller as the chats domain sees them: organization, subject, admin or not.
pub fn chat_caller(caller: &Caller) -> ChatCaller {
    ChatCaller::of(&caller.0)
}

/// The caller as the knowledge domain sees them: organization, subject, and who its audit
/// records name.
pub fn knowledge_caller(caller: &Caller) -> KnowledgeCaller {
    KnowledgeCaller {
        organization: caller.0.organization_id.clone(),
        subject: caller.0.subject.clone(),
        actor: caller.actor(),
    }
}
