//! The chats domain's errors (each one's status decided where it maps into a domain
//! error), the reasons recorded on chats whose generation stopped, and a spent budget.

use chrono::{DateTime, Utc};
use tessera_kernel::{DomainError, FieldError};
use tessera_models::{ModelError, ProviderError};
use tessera_usage::BudgetPeriod;

use crate::ChatId;

/// Recorded on chats a restart found `generating`.
pub const INTERRUPTED: &str = "the generation was interrupted: the server stopped while it ran";
/// Recorded on chats whose generation the caller cancelled.
pub const CANCELLED: &str = "the generation was cancelled";

/// Why an organization may not generate now: its monthly credits are spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetSpent {
    pub monthly_credits: u64,
    pub used_credits: u64,
    /// When the budget renews.
    pub resets_at: DateTime<Utc>,
}

/// Why a credential (an API key or a client) may not generate now: its own budget for the
/// current period is spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialBudgetSpent {
    /// The credential's id (`key_…`, `cli_…`).
    pub credential: String,
    pub credits: u64,
    pub period: BudgetPeriod,
    pub used_credits: u64,
    /// When the budget renews.
    pub resets_at: DateTime<Utc>,
}

/// Errors of chat operations.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChatError {
    #[error("chat {0} was not found")]
    NotFound(ChatId),
    /// A completion is already running on the chat.
    #[error("chat {0} is generating a completion; wait for it or re-attach to its stream")]
    Generating(ChatId),
    /// The chat is deleted; restore it to continue.
    #[error("chat {0} is deleted; restore it to continue")]
    Deleted(ChatId),
    #[error("invalid input")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The provider failed (unavailable, timeout, bad answer).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A strict `json_schema` answer that does not conform; each entry is one violation.
    #[error("the model's answer does not conform to the response schema: {}", .0.join("; "))]
    SchemaMismatch(Vec<String>),
    /// The organization's monthly credits are spent (see [`crate::Admission`]).
    #[error(
        "the organization has used {} of its {} credits this month; completions resume at {}",
        .0.used_credits, .0.monthly_credits, .0.resets_at.to_rfc3339()
    )]
    BudgetSpent(BudgetSpent),
    /// The caller's credential's budget is spent (see [`crate::Admission`]).
    #[error(
        "credential {} has used {} of its {} credits this {}; its completions resume at {}",
        .0.credential, .0.used_credits, .0.credits, .0.period.as_str(), .0.resets_at.to_rfc3339()
    )]
    CredentialBudgetSpent(CredentialBudgetSpent),
    /// The caller's credential may not use the model (its allow-list does not name it).
    #[error("this credential may not use model {0}: its model allow-list does not name it")]
    ModelNotAllowed(String),
    /// The caller stopped the generation (`ChatService::cancel`).
    #[error("{}", CANCELLED)]
    Cancelled,
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl ChatError {
    pub(crate) fn invalid(error: FieldError) -> Self {
        Self::Invalid(vec![error])
    }

    /// A short, bounded name of the error's kind (a trace's `error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "not_found",
            Self::Generating(_) => "chat_generating",
            Self::Deleted(_) => "chat_deleted",
            Self::Invalid(_) => "invalid",
            Self::Model(_) => "model",
            Self::Provider(ProviderError::Timeout) => "provider_timeout",
            Self::Provider(ProviderError::Unavailable { .. }) => "provider_unavailable",
            Self::Provider(_) => "provider",
            Self::SchemaMismatch(_) => "schema_mismatch",
            Self::BudgetSpent(_) => "credit_budget_exhausted",
            Self::CredentialBudgetSpent(_) => "credential_budget_exhausted",
            Self::ModelNotAllowed(_) => "model_not_allowed",
            Self::Cancelled => "cancelled",
            Self::Domain(_) => "internal",
        }
    }
}

impl From<ChatError> for DomainError {
    fn from(error: ChatError) -> Self {
        match error {
            ChatError::NotFound(id) => DomainError::not_found("chat", id),
            ChatError::Generating(_) => DomainError::Conflict {
                code: "chat_generating",
                message: error.to_string(),
            },
            ChatError::Deleted(_) => DomainError::Conflict {
                code: "chat_deleted",
                message: error.to_string(),
            },
            ChatError::Invalid(errors) => DomainError::Validation(errors),
            ChatError::Model(error) => error.into(),
            ChatError::Provider(error) => DomainError::Unavailable {
                message: error.to_string(),
            },
            ChatError::SchemaMismatch(_) => DomainError::Internal {
                message: error.to_string(),
            },
            ChatError::BudgetSpent(_) => DomainError::Forbidden {
                code: "credit_budget_exhausted",
                message: error.to_string(),
            },
            ChatError::CredentialBudgetSpent(_) => DomainError::Forbidden {
                code: "credential_budget_exhausted",
                message: error.to_string(),
            },
            ChatError::ModelNotAllowed(_) => DomainError::Forbidden {
                code: "model_not_allowed",
                message: error.to_string(),
            },
            ChatError::Cancelled => DomainError::Conflict {
                code: "generation_cancelled",
                message: error.to_string(),
            },
            ChatError::Domain(error) => error,
        }
    }
}
