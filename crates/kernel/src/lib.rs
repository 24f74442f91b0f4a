//! The shared vocabulary of Tessera's crates: typed identifiers (`OrganizationId` and the
//! sortable entity ids), the authenticated `Principal` with its `Scope`s, the `Caller` domain
//! services take, keyset pagination
//! (`Page`, `PageRequest` and tamper-evident `Cursor`s), the `Clock` port, and the
//! `DomainError` kinds every other crate maps its errors into, and `PerThread`, the
//! per-thread values adapters keep next to a thread's runtime, and the rule for storable text
//! (no NUL character, on any database), and `AuditRecord`, the audit event each domain hands
//! its store together with the change it records, and `TraceHeaders`, how adapters carry the
//! current trace to the services they call, and `TargetPolicy`, which hosts outbound calls made
//! for tenants may reach. It does no I/O and depends on
//! no framework, so every domain crate (and other teams' services) can use it.

mod audit;
mod caller;
mod clock;
mod contract;
mod cursor;
mod error;
mod ids;
pub mod metadata;
mod organization_id;
mod outbound;
mod page;
mod per_thread;
mod principal;
pub mod text;
mod trace_headers;

pub use audit::{Actor, ActorKind, AuditEventId, AuditRecord, FAILED_AUTHENTICATION};
pub use caller::Caller;
pub use clock::{Clock, ManualClock, SystemClock};
pub use cursor::{Cursor, CursorCodec, CursorError};
pub use error::{DomainError, FieldError, Loc, LocSegment};
pub use ids::IdError;
pub use metadata::Metadata;
pub use organization_id::{OrganizationId, OrganizationIdError};
pub use outbound::{TargetPolicy, embedded_ipv4, is_private_address, same_origin};
pub use page::{Limit, LimitError, Page, PageRequest};
pub use per_thread::PerThread;
pub use principal::{Action, Origin, Principal, PrincipalKind, Scope, ScopeError, ScopeSet};
pub use trace_headers::TraceHeaders;

#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use uuid;
}
