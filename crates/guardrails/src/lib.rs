//! Guardrails on what is sent to a model and what comes back, as a pure domain: policies as
//! data ([`PolicySpec`], checked into a [`GuardrailPolicy`]), the PII detectors
//! ([`detect`]: emails, phone numbers, payment cards, IBANs, IP addresses, secrets, and
//! national ids of eight countries), deny and allow lists of words and bounded regular
//! expressions, a maximum input size, and an external hook as a port ([`GuardrailHook`]).
//! The actions are text transformations: `block` (a [`Blocked`] naming the rule, never the
//! value), `redact` (`[REDACTED:EMAIL]`) and `pseudonymise` (`⟦EMAIL_1⟧`, kept in the
//! request's own [`Pseudonyms`] vault and restored in the answer, streamed or whole, by a
//! [`StreamRestorer`]). What happened is a [`GuardrailRecord`] of rule ids, kinds, effects
//! and counts, never values. [`Guardrails`] starts one [`GuardedRequest`] per request.
//! Policies are kept per organization and per model ([`StoredPolicy`], behind the
//! [`GuardrailPolicyStore`] port) and served by [`GuardrailService`], whose `effective` gives
//! a completion its compiled policy. The `memory` feature has the store port's in-memory
//! reference implementation, the `contract` feature its contract suite
//! (`guardrail_policy_store_contract!`) for any other.
//! No HTTP, storage or framework: the API, the stores, metrics and the hook's HTTP client
//! are adapters.

mod blocked;
#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
pub mod detect;
mod hook;
mod kind;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
pub mod policy;
mod pseudonyms;
mod record;
mod request;
mod restore;
mod rule;
mod scan;
mod service;
mod store;

pub use blocked::Blocked;
pub use hook::{
    FailMode, GuardrailHook, HookError, HookFailure, HookRequest, HookSettings, HookVerdict, NoHook,
};
pub use kind::{CheckKind, PiiKind, UnknownKind};
pub use policy::{DenyRuleSpec, GuardrailPolicy, HookSpec, ListSpec, PiiRuleSpec, PolicySpec};
pub use pseudonyms::{CLOSE, CLOSE_ESCAPED, OPEN, OPEN_ESCAPED, Pseudonyms, escape_brackets};
pub use record::{Effect, GuardrailRecord, RuleOutcome};
pub use request::{GuardedRequest, Guardrails};
pub use restore::StreamRestorer;
pub use rule::{Action, AppliesTo, Direction, RuleId, RuleIdError};
pub use scan::{Finding, Scan};
pub use service::{
    CACHE_CAPACITY, CACHE_TTL_SECS, GuardedModels, GuardrailPorts, GuardrailService,
};
pub use store::{GuardrailPolicyStore, PolicyScope, StoredPolicy};
