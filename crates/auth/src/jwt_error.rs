use jsonwebtoken::errors::{Error, ErrorKind};
use tessera_identity::TokenError;

/// What a failed JWT check means for the caller, for our own tokens and providers' alike.
pub(crate) fn token_error(error: &Error) -> TokenError {
    match error.kind() {
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer | ErrorKind::InvalidAudience => TokenError::WrongIssuerOrAudience,
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
            TokenError::DisallowedAlgorithm
        }
        _ => TokenError::Malformed,
    }
}
