//! Who is calling: the authenticated principal the `authorize` middleware put on the
//! request, as the extractor handlers take. It is the kernel's `Caller` every domain service
//! takes (handlers pass `&caller`), and keeps the principal for the services that store or
//! compare one (API keys and clients created with at most their creator's scopes, batches run
//! as their creator).

use std::ops::Deref;

use actix_web::{FromRequest, HttpMessage, HttpRequest, dev::Payload};
use tessera_kernel::Principal;

use crate::problem::ApiError;

/// The authenticated principal of the request (set by `authorize`).
#[derive(Debug, Clone)]
pub struct Caller {
    principal: Principal,
    domain: tessera_kernel::Caller,
}

impl Caller {
    /// The principal behind the request.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }
}

impl From<Principal> for Caller {
    fn from(principal: Principal) -> Self {
        Self {
            domain: tessera_kernel::Caller::of(principal.clone()),
            principal,
        }
    }
}

/// Handlers hand `&caller` to domain services as the kernel's caller.
impl Deref for Caller {
    type Target = tessera_kernel::Caller;

    fn deref(&self) -> &Self::Target {
        &self.domain
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
                .map(|principal| Caller::from(principal.with_origin(crate::origin::origin_of(req))))
                .ok_or_else(|| {
                    ApiError::unauthenticated(
                        "missing_token",
                        "this operation needs `Authorization: Bearer <access token>`",
                    )
                }),
        )
    }
}
