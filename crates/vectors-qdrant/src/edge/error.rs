//! qdrant-edge's errors as the port's.

use qdrant_edge::OperationError;
use tessera_knowledge::IndexError;

/// Requests the engine refuses are `Invalid`; everything else (storage, internal state) is
/// `Unavailable`.
pub(crate) fn index_error(error: OperationError) -> IndexError {
    match error {
        OperationError::WrongVectorDimension { .. }
        | OperationError::VectorNameNotExists { .. }
        | OperationError::TypeError { .. }
        | OperationError::TypeInferenceError { .. }
        | OperationError::ValidationError { .. }
        | OperationError::WrongSparse
        | OperationError::WrongMulti => IndexError::Invalid(error.to_string()),
        other => IndexError::Unavailable(other.to_string()),
    }
}
