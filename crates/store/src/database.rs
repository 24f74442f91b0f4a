use std::{path::PathBuf, str::FromStr, time::Duration};

use diesel::{Connection, SqliteConnection};
use diesel_async::{
    AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection,
    async_connection_wrapper::AsyncConnectionWrapper,
    pooled_connection::{
        AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod, deadpool::Pool,
    },
    sync_connection_wrapper::SyncConnectionWrapper,
};
use diesel_migrations::MigrationHarness;
use futures_util::FutureExt;
use tessera_kernel::DomainError;

use crate::{
    Backend, Part,
    error::{StoreError, query_error},
};

/// Serializes concurrent `migrate` runs of several replicas (an arbitrary fixed key).
const MIGRATION_LOCK_KEY: i64 = 0x7e55_e7a0;

/// Applied to every SQLite connection: concurrent readers with one writer, waits instead
/// of failing while another connection writes, and enforced foreign keys.
/// The busy timeout comes first so that the journal-mode switch itself waits for locks.
const SQLITE_PRAGMAS: &str = "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; \
    PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;";

pub(crate) type SqliteConn = SyncConnectionWrapper<SqliteConnection>;

/// Why a database URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected postgres://…, postgresql://… or sqlite://<path>, got `{0}`")]
pub struct DatabaseUrlError(String);

/// A database location: a PostgreSQL connection URL or an SQLite file path.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Postgres(String),
    Sqlite(PathBuf),
}

impl DatabaseUrl {
    pub fn backend(&self) -> Backend {
        match self {
            DatabaseUrl::Postgres(_) => Backend::Postgres,
            DatabaseUrl::Sqlite(_) => Backend::Sqlite,
        }
    }
}

impl FromStr for DatabaseUrl {
    type Err = DatabaseUrlError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Ok(DatabaseUrl::Postgres(text.to_owned()))
        } else if let Some(path) = text.strip_prefix("sqlite://").filter(|p| !p.is_empty()) {
            Ok(DatabaseUrl::Sqlite(PathBuf::from(path)))
        } else {
            Err(DatabaseUrlError(redact(text)))
        }
    }
}

/// Hides a password in a URL before it reaches a message or a log line.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatabaseUrl::Postgres(url) => write!(f, "Postgres({})", redact(url)),
            DatabaseUrl::Sqlite(path) => write!(f, "Sqlite({})", path.display()),
        }
    }
}

impl std::fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatabaseUrl::Postgres(url) => f.write_str(&redact(url)),
            DatabaseUrl::Sqlite(path) => write!(f, "sqlite://{}", path.display()),
        }
    }
}

/// Pool sizing and timeouts.
#[derive(Debug, Clone, Copy)]
pub struct PoolOptions {
    pub max_connections: usize,
    pub acquire_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
        }
    }
}

/// A pool of connections to one database. Cheap to clone.
#[derive(Clone)]
pub enum Database {
    Postgres(Pool<AsyncPgConnection>),
    Sqlite(Pool<SqliteConn>),
}

/// Runs `$body` with `$conn` bound to a pooled connection of whichever backend `$db` is.
/// The body is compiled once per backend, so one query serves both databases.
macro_rules! with_connection {
    ($db:expr, $conn:ident => $body:expr) => {
        match $db {
            $crate::Database::Postgres(pool) => {
                let mut pooled =
                    $crate::metrics::timed_checkout($crate::metrics::POSTGRESQL, pool.get())
                        .await
                        .map_err($crate::error::pool_error)?;
                let $conn = &mut *pooled;
                $body
            }
            $crate::Database::Sqlite(pool) => {
                let mut pooled =
                    $crate::metrics::timed_checkout($crate::metrics::SQLITE, pool.get())
                        .await
                        .map_err($crate::error::pool_error)?;
                let $conn = &mut *pooled;
                $body
            }
        }
    };
}
pub(crate) use with_connection;

/// Runs `$body` in a write transaction with `$conn` bound to its connection, and settles the
/// outcome into `Result<_, DomainError>`. The body returns `Result<T, Rollback<T>>`: `Ok`
/// commits; `Err` rolls back and then returns `Rollback::Return`'s value or fails with
/// `Rollback::Fail`'s error (query errors convert with `?`). The body is compiled once per
/// backend. SQLite transactions begin IMMEDIATE: they take the write lock up front, so a
/// transaction that reads before it writes waits for other writers instead of failing on
/// the lock upgrade. PostgreSQL ones run at READ COMMITTED and lock the rows they rely on.
macro_rules! with_transaction {
    ($db:expr, $conn:ident => $body:expr) => {
        $crate::error::settle(match $db {
            $crate::Database::Postgres(pool) => {
                let mut pooled =
                    $crate::metrics::timed_checkout($crate::metrics::POSTGRESQL, pool.get())
                        .await
                        .map_err($crate::error::pool_error)?;
                diesel_async::AsyncConnection::transaction(
                    &mut *pooled,
                    async |$conn| -> Result<_, $crate::error::Rollback<_>> { $body },
                )
                .await
            }
            $crate::Database::Sqlite(pool) => {
                let mut pooled =
                    $crate::metrics::timed_checkout($crate::metrics::SQLITE, pool.get())
                        .await
                        .map_err($crate::error::pool_error)?;
                pooled
                    .immediate_transaction(async |$conn| -> Result<_, $crate::error::Rollback<_>> {
                        $body
                    })
                    .await
            }
        })
    };
}
pub(crate) use with_transaction;

impl Database {
    /// Opens a pool; the first connection is made here so a bad URL fails at start-up.
    pub async fn connect(url: &DatabaseUrl, options: PoolOptions) -> Result<Self, StoreError> {
        let database = match url {
            DatabaseUrl::Postgres(url) => {
                // No `SELECT 1` before every checkout (the default): it was a third of the
                // round trips of a completion. A connection whose server went away is seen
                // closed and replaced without a query; one that breaks mid-flight fails
                // that one query, and the pool drops it as broken.
                let mut config = ManagerConfig::<AsyncPgConnection>::default();
                config.recycling_method = RecyclingMethod::Fast;
                let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(
                    url.clone(),
                    config,
                );
                let pool = Pool::builder(manager)
                    .max_size(options.max_connections)
                    .wait_timeout(Some(options.acquire_timeout))
                    .create_timeout(Some(options.acquire_timeout))
                    .runtime(deadpool::Runtime::Tokio1)
                    .build()
                    .map_err(|e| StoreError::Connect(e.to_string()))?;
                Database::Postgres(pool)
            }
            DatabaseUrl::Sqlite(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|source| StoreError::Directory {
                        path: parent.display().to_string(),
                        source,
                    })?;
                }
                let mut config = ManagerConfig::<SqliteConn>::default();
                // A SQLite connection is a file handle: nothing to verify per checkout.
                config.recycling_method = RecyclingMethod::Fast;
                config.custom_setup = Box::new(|path| {
                    async move {
                        let mut conn = SqliteConn::establish(path).await?;
                        conn.batch_execute(SQLITE_PRAGMAS)
                            .await
                            .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
                        Ok(conn)
                    }
                    .boxed()
                });
                let manager = AsyncDieselConnectionManager::<SqliteConn>::new_with_config(
                    path.display().to_string(),
                    config,
                );
                let pool = Pool::builder(manager)
                    // SQLite has one writer; a few connections serve concurrent reads.
                    .max_size(options.max_connections.min(8))
                    .wait_timeout(Some(options.acquire_timeout))
                    .create_timeout(Some(options.acquire_timeout))
                    .runtime(deadpool::Runtime::Tokio1)
                    .build()
                    .map_err(|e| StoreError::Connect(e.to_string()))?;
                Database::Sqlite(pool)
            }
        };
        database
            .ping()
            .await
            .map_err(|e| StoreError::Connect(format!("{url}: {e}")))?;
        Ok(database)
    }

    pub fn backend(&self) -> Backend {
        match self {
            Database::Postgres(_) => Backend::Postgres,
            Database::Sqlite(_) => Backend::Sqlite,
        }
    }

    /// Checks that the database answers a query (readiness).
    pub async fn ping(&self) -> Result<(), DomainError> {
        with_connection!(self, conn => {
            diesel::sql_query("SELECT 1").execute(conn).await.map_err(query_error)?;
        });
        Ok(())
    }

    /// Applies the pending migrations of every part and returns the versions applied. On
    /// PostgreSQL an advisory lock makes replicas starting together migrate one after
    /// another.
    pub async fn migrate(url: &DatabaseUrl) -> Result<Vec<String>, StoreError> {
        Self::migrate_parts(url, &Part::ALL).await
    }

    /// Applies the pending migrations of `parts` and of the parts they need (`Part::needs`),
    /// part by part in `Part::ALL`'s order; returns the versions applied.
    pub async fn migrate_parts(
        url: &DatabaseUrl,
        parts: &[Part],
    ) -> Result<Vec<String>, StoreError> {
        let url = url.clone();
        let parts = Part::with_needs(parts);
        tokio::task::spawn_blocking(move || match &url {
            DatabaseUrl::Postgres(postgres) => {
                let mut conn =
                    <AsyncConnectionWrapper<AsyncPgConnection> as Connection>::establish(postgres)
                        .map_err(|e| StoreError::Connect(format!("{url}: {e}")))?;
                lock_and_migrate(&mut conn, &parts)
            }
            DatabaseUrl::Sqlite(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|source| StoreError::Directory {
                        path: parent.display().to_string(),
                        source,
                    })?;
                }
                let mut conn = SqliteConnection::establish(&path.display().to_string())
                    .map_err(|e| StoreError::Connect(format!("{url}: {e}")))?;
                diesel::connection::SimpleConnection::batch_execute(&mut conn, SQLITE_PRAGMAS)
                    .map_err(|e| StoreError::Migrate(e.to_string()))?;
                run_migrations(&mut conn, Backend::Sqlite, &parts)
            }
        })
        .await
        .map_err(|e| StoreError::Migrate(format!("migration task failed: {e}")))?
    }
}

fn lock_and_migrate(
    conn: &mut AsyncConnectionWrapper<AsyncPgConnection>,
    parts: &[Part],
) -> Result<Vec<String>, StoreError> {
    let advisory = |conn: &mut AsyncConnectionWrapper<AsyncPgConnection>, function: &str| {
        let query = diesel::sql_query(format!("SELECT {function}($1)"))
            .bind::<diesel::sql_types::BigInt, _>(MIGRATION_LOCK_KEY);
        diesel::RunQueryDsl::execute(query, conn)
            .map(drop)
            .map_err(|e| StoreError::Migrate(e.to_string()))
    };
    advisory(conn, "pg_advisory_lock")?;
    let result = run_migrations(conn, Backend::Postgres, parts);
    let unlock = advisory(conn, "pg_advisory_unlock");
    let applied = result?;
    unlock?;
    Ok(applied)
}

fn run_migrations<C>(
    conn: &mut C,
    backend: Backend,
    parts: &[Part],
) -> Result<Vec<String>, StoreError>
where
    C: MigrationHarness<C::Backend> + Connection,
{
    let mut applied = Vec::new();
    for part in parts {
        let versions = conn
            .run_pending_migrations(part.migrations(backend))
            .map_err(|e| StoreError::Migrate(format!("{part}: {e}")))?;
        applied.extend(versions.into_iter().map(|v| v.to_string()));
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_backend() {
        assert_eq!(
            "postgres://u@h/db"
                .parse::<DatabaseUrl>()
                .map(|u| u.backend()),
            Ok(Backend::Postgres)
        );
        assert_eq!(
            "postgresql://u@h/db"
                .parse::<DatabaseUrl>()
                .map(|u| u.backend()),
            Ok(Backend::Postgres)
        );
        assert_eq!(
            "sqlite:///tmp/x.db".parse::<DatabaseUrl>(),
            Ok(DatabaseUrl::Sqlite("/tmp/x.db".into()))
        );
        assert!("mysql://h/db".parse::<DatabaseUrl>().is_err());
        assert!("sqlite://".parse::<DatabaseUrl>().is_err());
    }

    #[test]
    fn passwords_never_reach_messages() {
        let url: DatabaseUrl = "postgres://app:s3cret@db:5432/tessera".parse().unwrap();
        assert_eq!(url.to_string(), "postgres://app:***@db:5432/tessera");
        assert!(!format!("{url:?}").contains("s3cret"));
        let error = "mysql://app:s3cret@db/x"
            .parse::<DatabaseUrl>()
            .unwrap_err();
        assert!(!error.to_string().contains("s3cret"));
    }
}
