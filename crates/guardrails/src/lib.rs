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
//! No HTTP, storage or framework: the API, the stores, metrics and the hook's HTTP client
//! are adapters.

mod blocked;
pub mod detect;
mod hook;
mod kind;
pub mod policy;
mod pseudonyms;
mod record;
mod request;
mod restore;
mod rule;
mod scan;

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
