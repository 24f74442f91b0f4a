//! Idempotency keys (IETF httpapi `Idempotency-Key` semantics): the first request with a key
//! claims it and its response is stored; a retry with the same key and the same request
//! replays that response; the same key with a different request is refused; a retry while
//! the first is still running is refused as a conflict. Keys belong to one principal of one
//! organization and expire after a retention period (24 h by default). Responses that must
//! not be stored (they carry secrets) are recorded without their body and are not replayed.
//! The `IdempotencyStore` port persists claims; this crate holds the rules, no I/O. The
//! `memory` feature has the port's in-memory reference implementation, the `contract`
//! feature its contract suite (`idempotency_store_contract!`) for any other.

#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod key;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod service;
mod store;

pub use key::{Fingerprint, IdempotencyKey, KeyError};
pub use service::{Begin, IdempotencyService, Refusal};
#[cfg(any(test, feature = "mocks"))]
pub use store::MockIdempotencyStore;
pub use store::{Claim, IdempotencyStore, KeyOwner, StoredRecord, StoredResponse};
