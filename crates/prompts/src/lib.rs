//! Prompt engineering as data: particles (reusable system-prompt components in five
//! categories) with immutable, numbered versions; system prompts that arrange particles,
//! pinned to a version or following the latest; and the deterministic composition of a
//! system prompt into one string, now or as of any past moment. Token counts come through
//! the `TokenCounter` port, persistence through `ParticleStore` and `SystemPromptStore`.
//! Size guidance is reported as warnings, never enforced. System profiles are read-only
//! templates seeded from `profiles.toml`. Pure domain: no I/O, no framework. The `memory`
//! feature has the store ports' reference implementation, the `contract` feature their
//! contract suite (`prompt_store_contract!`) for any other.

mod category;
mod compose;
#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod error;
mod guidance;
mod ids;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod particle;
mod ports;
mod profiles;
mod service;
mod system_prompt;
mod text;

pub use category::Category;
pub use compose::{ComposedParticle, Composition, compose};
pub use error::PromptError;
pub use guidance::{Warning, composition_warnings, particle_warnings};
pub use ids::{AssociationId, ParticleId, ParticleVersionId, SystemPromptId};
pub use particle::{
    NewParticle, Owner, Particle, ParticleChanges, ParticleDeletion, ParticleVersion,
};
#[cfg(any(test, feature = "mocks"))]
pub use ports::{MockParticleStore, MockSystemPromptStore, MockTokenCounter};
pub use ports::{ParticleStore, SystemPromptStore, TokenCounter};
pub use profiles::{ProfileParticle, SystemProfile, SystemProfiles};
pub use service::PromptService;
pub use system_prompt::{
    Association, AssociationChanges, Layout, NewAssociation, NewSystemPrompt, Pin,
    ResolvedAssociation, SystemPrompt, SystemPromptChanges, SystemPromptView,
};
pub use text::{Content, Description, Name, TextError};
