use tessera_kernel::{DomainError, FieldError};

use crate::{AssociationId, ParticleId, SystemPromptId};

/// Errors of prompt operations.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("particle {0} was not found")]
    ParticleNotFound(ParticleId),
    #[error("version {number} of particle {particle} was not found")]
    VersionNotFound { particle: ParticleId, number: u32 },
    #[error("system prompt {0} was not found")]
    SystemPromptNotFound(SystemPromptId),
    #[error("particle placement {0} was not found")]
    AssociationNotFound(AssociationId),
    /// System profiles and their particles are read-only.
    #[error("{0} is system-managed and cannot be changed")]
    SystemManaged(String),
    #[error("particle {particle} is used by system prompts {}; remove it from them first", .prompts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    ParticleInUse {
        particle: ParticleId,
        prompts: Vec<SystemPromptId>,
    },
    /// Another request changed the record at the same moment; retrying is safe.
    #[error("particle {0} was changed concurrently; retry")]
    ConcurrentChange(ParticleId),
    #[error("invalid input")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl From<PromptError> for DomainError {
    fn from(error: PromptError) -> Self {
        match error {
            PromptError::ParticleNotFound(id) => DomainError::not_found("particle", id),
            PromptError::VersionNotFound { particle, number } => {
                DomainError::not_found("particle version", format!("{particle}/versions/{number}"))
            }
            PromptError::SystemPromptNotFound(id) => DomainError::not_found("system prompt", id),
            PromptError::AssociationNotFound(id) => {
                DomainError::not_found("particle placement", id)
            }
            PromptError::SystemManaged(_) => DomainError::Forbidden {
                code: "system_managed",
                message: error.to_string(),
            },
            PromptError::ParticleInUse { .. } => DomainError::Conflict {
                code: "particle_in_use",
                message: error.to_string(),
            },
            PromptError::ConcurrentChange(_) => DomainError::Conflict {
                code: "concurrent_change",
                message: error.to_string(),
            },
            PromptError::Invalid(errors) => DomainError::Validation(errors),
            PromptError::Domain(error) => error,
        }
    }
}
