//! Organizations, the tenants every record belongs to: their plan (which decides access to
//! premium models and, later, quotas), their settings (`image_ocr`: whether uploaded images
//! are read by OCR), the `OrganizationStore` port that persists them and the
//! `OrganizationService` that creates, reads, lists and changes them (each change audited).
//! Pure domain: no database, no HTTP; adapters implement the port. The `memory` feature has
//! the port's reference implementation, the `contract` feature its contract suite for any
//! other.

#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod organization;
mod service;
mod store;

pub use organization::{
    NewOrganization, Organization, OrganizationChange, OrganizationName, OrganizationNameError,
    Plan, PlanError,
};
pub use service::{OrganizationError, OrganizationService};
#[cfg(any(test, feature = "mocks"))]
pub use store::MockOrganizationStore;
pub use store::OrganizationStore;
