//! The response cache as a pure domain: an organization opts a model in with a
//! [`CachePolicySpec`] (time to live, semantic matching and its threshold, the highest
//! temperature cached), and completions of that model are answered from earlier answers
//! when their request is the same ([`ExactKey`]: the normalised request the provider would
//! read) or, with semantic matching, when everything but the last user message is the same
//! ([`Partition`]) and that message's embedding is close enough to a cached one. Answers are
//! kept as the provider's events ([`CachedAnswer`]) so a hit replays through the same
//! pipeline as a live answer. The [`ResponseCacheStore`] port keeps them;
//! [`InMemoryResponseCache`] is the embedded one (bounded, least recently used evicted).
//! Policies are kept per organization and model ([`StoredCachePolicy`], behind the
//! [`CachePolicyStore`] port) and served by [`CachePolicyService`], whose `effective` gives
//! a completion its model's policy (kept 30 s, forgotten on change); the `memory` feature
//! has the store port's in-memory reference implementation, the `contract` feature its
//! contract suite (`cache_policy_store_contract!`) for any other.
//! No HTTP, storage or framework.

#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod entries;
mod key;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod memory_entries;
pub mod policy;
mod service;
mod store;

pub use entries::{CachedAnswer, Lookup, Question, ResponseCacheStore, normalised};
pub use key::{CacheScope, ExactKey, Partition};
pub use memory_entries::InMemoryResponseCache;
pub use policy::{CachePolicySpec, SemanticSpec};
pub use service::{
    AUDIT_RESOURCE, CachePolicyPorts, CachePolicyService, CacheableModels, POLICY_CACHE_CAPACITY,
    POLICY_CACHE_TTL_SECS,
};
pub use store::{CachePolicyStore, StoredCachePolicy};
