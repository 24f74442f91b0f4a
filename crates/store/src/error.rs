use diesel::result::{DatabaseErrorKind, Error as DieselError};
use tessera_kernel::DomainError;

/// Failures of opening or migrating a database (start-up and `admin migrate`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    #[error("cannot run database migrations: {0}")]
    Migrate(String),
    #[error("cannot create the database directory {path}: {source}")]
    Directory {
        path: String,
        source: std::io::Error,
    },
}

impl From<StoreError> for DomainError {
    fn from(error: StoreError) -> Self {
        DomainError::Unavailable {
            message: error.to_string(),
        }
    }
}

/// Maps a query failure into the domain's error kinds.
pub(crate) fn query_error(error: DieselError) -> DomainError {
    match error {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            DomainError::Conflict {
                code: "already_exists",
                message: format!("a record with this key already exists ({})", info.message()),
            }
        }
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, info) => {
            DomainError::Conflict {
                code: "missing_reference",
                message: format!(
                    "a record this one refers to does not exist ({})",
                    info.message()
                ),
            }
        }
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, info) => {
            DomainError::Unavailable {
                message: format!("database connection closed: {}", info.message()),
            }
        }
        other => DomainError::internal(format!("database query failed: {other}")),
    }
}

/// Maps a failure to get a pooled connection: the database is unreachable or saturated.
pub(crate) fn pool_error(error: impl std::fmt::Display) -> DomainError {
    DomainError::Unavailable {
        message: format!("database unavailable: {error}"),
    }
}

/// How a transaction body (`with_transaction!`) ends early: its changes roll back, then the
/// store method returns `Return`'s value or fails with `Fail`'s error.
pub(crate) enum Rollback<T> {
    Return(T),
    Fail(DomainError),
}

impl<T> From<DieselError> for Rollback<T> {
    fn from(error: DieselError) -> Self {
        Rollback::Fail(query_error(error))
    }
}

/// The result of a transaction, rolled back or not.
pub(crate) fn settle<T>(result: Result<T, Rollback<T>>) -> Result<T, DomainError> {
    match result {
        Ok(value) | Err(Rollback::Return(value)) => Ok(value),
        Err(Rollback::Fail(error)) => Err(error),
    }
}
