//! The external guardrail service: its settings as the policy holds them ([`HookSettings`]),
//! the port an HTTP adapter implements ([`GuardrailHook`]), what it answers
//! ([`HookVerdict`]) and how it fails ([`HookError`], recorded as a [`HookFailure`] without
//! its details). No HTTP here: the adapter posts the texts to the URL; this crate applies
//! the timeout and the fail mode, so every adapter behaves the same.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{AppliesTo, Direction};

/// What a hook's failure means for the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    /// The request passes, and the failure is recorded.
    Open,
    /// The request is refused, naming the hook.
    Closed,
}

/// The hook of a checked policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSettings {
    /// An http(s) URL the operator's target policy allows.
    pub url: String,
    pub timeout: Duration,
    pub fail_mode: FailMode,
    pub applies_to: AppliesTo,
}

/// What the hook is asked about: a request's input texts (after redaction and
/// pseudonymisation: the service sees what the provider would) or an answer.
#[derive(Debug, Clone, Copy)]
pub struct HookRequest<'a> {
    pub direction: Direction,
    pub texts: &'a [&'a str],
}

/// The service's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    Allow,
    /// Refuse, with the service's reason (shown to the client, at most
    /// [`HookVerdict::MAX_REASON_CHARS`] characters of it).
    Block {
        reason: String,
    },
}

impl HookVerdict {
    pub const MAX_REASON_CHARS: usize = 200;
}

/// Why the service gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    #[error("the guardrail service did not answer in time")]
    Timeout,
    #[error("the guardrail service could not be reached: {0}")]
    Unavailable(String),
    #[error("the guardrail service's answer is not a verdict: {0}")]
    InvalidAnswer(String),
    #[error("no guardrail service client is configured")]
    NotConfigured,
}

/// A hook failure as recorded: its kind, never the details (which may quote the texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookFailure {
    Timeout,
    Unavailable,
    InvalidAnswer,
    NotConfigured,
}

impl HookFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Unavailable => "unavailable",
            Self::InvalidAnswer => "invalid_answer",
            Self::NotConfigured => "not_configured",
        }
    }
}

impl From<&HookError> for HookFailure {
    fn from(error: &HookError) -> Self {
        match error {
            HookError::Timeout => Self::Timeout,
            HookError::Unavailable(_) => Self::Unavailable,
            HookError::InvalidAnswer(_) => Self::InvalidAnswer,
            HookError::NotConfigured => Self::NotConfigured,
        }
    }
}

/// Asks an external guardrail service for a verdict.
#[async_trait]
pub trait GuardrailHook: Send + Sync {
    /// Sends `request` to `settings.url`. An implementation should give up after
    /// `settings.timeout` itself (its connection is then closed); the caller stops waiting
    /// then in any case and counts it as [`HookError::Timeout`].
    async fn check(
        &self,
        settings: &HookSettings,
        request: HookRequest<'_>,
    ) -> Result<HookVerdict, HookError>;
}

/// The hook of a deployment without a client for it: every call fails with
/// [`HookError::NotConfigured`], so a policy naming a hook follows its fail mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHook;

#[async_trait]
impl GuardrailHook for NoHook {
    async fn check(
        &self,
        _settings: &HookSettings,
        _request: HookRequest<'_>,
    ) -> Result<HookVerdict, HookError> {
        Err(HookError::NotConfigured)
    }
}
