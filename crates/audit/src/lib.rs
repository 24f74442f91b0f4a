//! The audit log of organizations: who changed what, when and from where, and which
//! credentials were refused. The records themselves (`tessera_kernel::AuditRecord`) are made
//! by the domain that makes each change and written by its store in the change's transaction;
//! this crate reads them back (`AuditService::list` for an organization, `list_all` for
//! operators, filtered by time, actor, resource and action, newest first, keyset-paginated),
//! writes the events that have no change to share a transaction with (refused credentials),
//! and deletes events older than the retention period. Its one port is `AuditEventStore`.
//! The `memory` feature has the port's in-memory reference implementation, the `contract`
//! feature its contract suite (`audit_store_contract!`) for any other.

#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod filter;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod service;
mod store;

pub use filter::{AuditFilter, AuditQuery};
pub use service::{AuditService, Retention};
#[cfg(any(test, feature = "mocks"))]
pub use store::MockAuditEventStore;
pub use store::{AuditEventStore, AuditScope};
