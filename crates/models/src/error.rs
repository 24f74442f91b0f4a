use tessera_kernel::{DomainError, FieldError};

use crate::ModelId;

/// Errors of model operations.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("model {0} was not found")]
    NotFound(ModelId),
    #[error("model {model} has reached its end of life{}", .replacement.as_ref().map(|r| format!("; use {r}")).unwrap_or_default())]
    EndOfLife {
        model: String,
        replacement: Option<String>,
    },
    /// A base-model id the catalog does not have.
    #[error("model {0} was not found")]
    UnknownBaseModel(String),
    #[error("model {0} is disabled")]
    Disabled(String),
    #[error("model {0} needs a pro or enterprise plan")]
    PlanRequired(String),
    /// No provider is configured for the base model (no key, or an engine not built in).
    #[error("no provider is configured for base model {0}")]
    ProviderUnavailable(String),
    #[error("invalid input")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl From<ModelError> for DomainError {
    fn from(error: ModelError) -> Self {
        match error {
            ModelError::NotFound(id) => DomainError::not_found("model", id),
            ModelError::UnknownBaseModel(id) => DomainError::not_found("model", id),
            ModelError::EndOfLife { .. } => DomainError::Gone {
                code: "model_end_of_life",
                message: error.to_string(),
            },
            ModelError::Disabled(_) => DomainError::Conflict {
                code: "model_disabled",
                message: error.to_string(),
            },
            ModelError::PlanRequired(_) => DomainError::Forbidden {
                code: "plan_required",
                message: error.to_string(),
            },
            ModelError::ProviderUnavailable(_) => DomainError::Unavailable {
                message: error.to_string(),
            },
            ModelError::Invalid(errors) => DomainError::Validation(errors),
            ModelError::Domain(error) => error,
        }
    }
}
