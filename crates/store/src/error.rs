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
        DieselError::DatabaseError(
            kind @ (DatabaseErrorKind::ClosedConnection
            | DatabaseErrorKind::UnableToSendCommand
            | DatabaseErrorKind::SerializationFailure),
            info,
        ) => DomainError::Unavailable {
            message: format!("database unavailable ({kind:?}): {}", info.message()),
        },
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
            if means_unavailable(info.message()) =>
        {
            DomainError::Unavailable {
                message: format!("database unavailable: {}", info.message()),
            }
        }
        // A connection that broke inside a transaction leaves its manager unusable.
        DieselError::BrokenTransactionManager => DomainError::Unavailable {
            message: "database connection broke inside a transaction".to_owned(),
        },
        other => DomainError::internal(format!("database query failed: {other}")),
    }
}

/// Server messages that mean "the database cannot answer now, retry" rather than a bug:
/// PostgreSQL terminating or refusing sessions (SQLSTATE class 57P, 08, 53, deadlocks) and
/// SQLite's busy or locked database. diesel keeps the message but not the SQLSTATE, so the
/// messages are matched; they are stable across PostgreSQL releases.
fn means_unavailable(message: &str) -> bool {
    const MARKERS: [&str; 11] = [
        "terminating connection",
        "the database system is shutting down",
        "the database system is starting up",
        "the database system is in recovery mode",
        "the database system is not yet accepting connections",
        "connection closed",
        "connection reset",
        "deadlock detected",
        "too many connections",
        "database is locked",
        "database table is locked",
    ];
    MARKERS.iter().any(|marker| message.contains(marker))
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
    #[cfg_attr(
        not(feature = "prompts"),
        expect(
            dead_code,
            reason = "only the prompts' stores return early with a value"
        )
    )]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn database_error(kind: DatabaseErrorKind, message: &str) -> DieselError {
        DieselError::DatabaseError(kind, Box::new(message.to_owned()))
    }

    #[test]
    fn outages_are_unavailable_and_bugs_internal() {
        let outages = [
            database_error(DatabaseErrorKind::UnableToSendCommand, "connection closed"),
            database_error(DatabaseErrorKind::ClosedConnection, "server closed"),
            database_error(
                DatabaseErrorKind::SerializationFailure,
                "could not serialize",
            ),
            database_error(
                DatabaseErrorKind::Unknown,
                "terminating connection due to administrator command",
            ),
            database_error(DatabaseErrorKind::Unknown, "database is locked"),
            DieselError::BrokenTransactionManager,
        ];
        for error in outages {
            let shown = error.to_string();
            assert!(
                matches!(query_error(error), DomainError::Unavailable { .. }),
                "{shown}"
            );
        }
        let bug = database_error(DatabaseErrorKind::Unknown, "syntax error at or near \"x\"");
        assert!(matches!(query_error(bug), DomainError::Internal { .. }));
    }
}
