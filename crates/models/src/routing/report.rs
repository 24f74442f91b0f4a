//! What routing reports about one answer: which deployment gave it, and which attempts
//! failed before it.

use serde::{Deserialize, Serialize};

/// How an answer was obtained. Kept with the answer message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// The deployment that answered.
    pub deployment: String,
    /// Its provider (the catalog's key): usage is recorded against it. Empty in routes
    /// stored before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// The attempts that failed before it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_attempts: Vec<FailedAttempt>,
}

/// An attempt that failed before its first token. No adapter reports tokens for such an
/// attempt (OpenAI-compatible and Anthropic APIs send usage with the last chunk only), so a
/// failed attempt bills nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedAttempt {
    pub deployment: String,
    /// Why it failed, as the provider error reads.
    pub error: String,
}
