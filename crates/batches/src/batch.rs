//! A batch as stored: its input, endpoint, window, status with the time of each change,
//! counts, and the files its answers went to.

use chrono::{DateTime, Duration, Utc};
use tessera_kernel::{Metadata, OrganizationId, Principal};

tessera_kernel::entity_id!(
    /// A batch, e.g. `batch_0190f5c1a3e27c3d9b1e4a0c5d6e7f80`.
    BatchId,
    "batch"
);

/// The only completion window OpenAI offers, and so the only one accepted.
pub const COMPLETION_WINDOW: &str = "24h";

/// How long [`COMPLETION_WINDOW`] is.
pub fn window_length() -> Duration {
    Duration::hours(24)
}

/// The endpoint every line of a batch calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchEndpoint {
    ChatCompletions,
    Embeddings,
    Responses,
}

impl BatchEndpoint {
    pub const ALL: [Self; 3] = [Self::ChatCompletions, Self::Embeddings, Self::Responses];

    /// The path as OpenAI names it (and as each line's `url` must).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ChatCompletions => "/v1/chat/completions",
            Self::Embeddings => "/v1/embeddings",
            Self::Responses => "/v1/responses",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|endpoint| endpoint.as_str() == text)
    }
}

/// Where a batch is (OpenAI's statuses; `validating` passes within the create request, so
/// a stored batch starts `in_progress`, or `failed` when its input was refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchStatus {
    Validating,
    Failed,
    InProgress,
    Finalizing,
    Completed,
    Expired,
    Cancelling,
    Cancelled,
}

impl BatchStatus {
    pub const ALL: [Self; 8] = [
        Self::Validating,
        Self::Failed,
        Self::InProgress,
        Self::Finalizing,
        Self::Completed,
        Self::Expired,
        Self::Cancelling,
        Self::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validating => "validating",
            Self::Failed => "failed",
            Self::InProgress => "in_progress",
            Self::Finalizing => "finalizing",
            Self::Completed => "completed",
            Self::Expired => "expired",
            Self::Cancelling => "cancelling",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == text)
    }

    /// Whether a runner still has work on it (what a claim takes).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            Self::Validating | Self::InProgress | Self::Finalizing | Self::Cancelling
        )
    }

    /// The statuses a runner claims, as stored.
    pub const ACTIVE: [Self; 4] = [
        Self::Validating,
        Self::InProgress,
        Self::Finalizing,
        Self::Cancelling,
    ];
}

/// How many of a batch's lines there are, answered and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    pub total: u32,
    pub completed: u32,
    pub failed: u32,
}

/// Why a batch's input was refused (OpenAI's `errors.data` items): a code, a message, and
/// where (the parameter, the line counted from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchProblem {
    pub code: String,
    pub message: String,
    pub param: Option<String>,
    pub line: Option<u32>,
}

impl BatchProblem {
    pub fn at_line(line: u32, code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
            param: None,
            line: Some(line),
        }
    }
}

/// A batch record.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub id: BatchId,
    pub organization: OrganizationId,
    /// Who created it: the lines run as this principal (its scopes and its budgets), as they
    /// would have over HTTP. Its request origin is not kept.
    pub owner: Principal,
    pub endpoint: BatchEndpoint,
    pub input_file_id: String,
    pub completion_window: String,
    pub metadata: Metadata,
    pub status: BatchStatus,
    /// Why the input was refused (`failed` only).
    pub errors: Vec<BatchProblem>,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub counts: RequestCounts,
    pub created_at: DateTime<Utc>,
    pub in_progress_at: Option<DateTime<Utc>>,
    pub expires_at: DateTime<Utc>,
    pub finalizing_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub failed_at: Option<DateTime<Utc>>,
    pub expired_at: Option<DateTime<Utc>>,
    pub cancelling_at: Option<DateTime<Utc>>,
    pub cancelled_at: Option<DateTime<Utc>>,
}

/// The answer to one line, kept as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub struct LineResult {
    /// The line's place in the input, from 0.
    pub line: u32,
    pub custom_id: String,
    /// The id the answer's output line carries (`batch_req_…`).
    pub request_id: String,
    /// The status the endpoint answered (2xx counts as completed), or `None` when the line
    /// never ran (the window ended or the batch was cancelled first).
    pub status_code: Option<u16>,
    /// The endpoint's response body, or the error (`{"code", "message"}`) when it never ran.
    pub body: serde_json::Value,
}

impl LineResult {
    pub fn succeeded(&self) -> bool {
        self.status_code
            .is_some_and(|status| (200..300).contains(&status))
    }
}

/// How a runner ends a batch: its last status and the files that hold its answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEnd {
    /// `completed`, `cancelled`, `expired` or `failed`.
    pub status: BatchStatus,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    /// Why it failed (`failed` only).
    pub errors: Vec<BatchProblem>,
    pub at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for status in BatchStatus::ALL {
            assert_eq!(BatchStatus::parse(status.as_str()), Some(status));
        }
        for endpoint in BatchEndpoint::ALL {
            assert_eq!(BatchEndpoint::parse(endpoint.as_str()), Some(endpoint));
        }
        assert_eq!(BatchEndpoint::parse("/v1/completions"), None);
        assert!(BatchStatus::ACTIVE.iter().all(|status| status.is_active()));
        assert!(!BatchStatus::Completed.is_active());
    }
}
