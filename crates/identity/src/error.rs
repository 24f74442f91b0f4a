//! The identity domain's errors, and what each is as a domain error (its status decided
//! there).

use tessera_kernel::{DomainError, FieldError};

use crate::{ApiKeyId, ClientId, TokenError};

/// Errors of identity operations.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Unknown client, wrong secret, or revoked client (deliberately indistinguishable).
    #[error("client authentication failed")]
    InvalidClient,
    #[error("{0}")]
    InvalidScope(String),
    #[error("{0}")]
    InvalidToken(TokenError),
    #[error("client {0} was not found")]
    ClientNotFound(ClientId),
    #[error("API key {0} was not found")]
    ApiKeyNotFound(ApiKeyId),
    /// Invalid input, each entry located (`["body", "scopes", 1]`).
    #[error("invalid input")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl From<IdentityError> for DomainError {
    fn from(error: IdentityError) -> Self {
        match error {
            IdentityError::InvalidClient => DomainError::Unauthenticated {
                code: "invalid_client",
                message: error.to_string(),
            },
            IdentityError::InvalidToken(TokenError::Unavailable) => DomainError::Unavailable {
                message: "token check unavailable".into(),
            },
            IdentityError::InvalidToken(reason) => DomainError::Unauthenticated {
                code: "invalid_token",
                message: reason.to_string(),
            },
            IdentityError::InvalidScope(message) => {
                DomainError::invalid(["body".into(), "scope".into()], message, "invalid_scope")
            }
            IdentityError::ClientNotFound(id) => DomainError::not_found("client", id),
            IdentityError::ApiKeyNotFound(id) => DomainError::not_found("API key", id),
            IdentityError::Invalid(errors) => DomainError::Validation(errors),
            IdentityError::Domain(error) => error,
        }
    }
}
