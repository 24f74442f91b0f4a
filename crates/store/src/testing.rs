//! Throwaway databases for tests: a fresh SQLite file in a temporary directory, or a fresh
//! PostgreSQL database created on the server at `TESSERA_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) and dropped when the guard is dropped.
//! A Postgres test fails, never skips, when the server cannot be reached.

// Test support: failing loudly is the point.
#![allow(clippy::panic)]

use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::{Backend, Database, DatabaseUrl, Part, PoolOptions};

/// Where tests find a PostgreSQL server they may create databases on.
pub const POSTGRES_URL_VAR: &str = "TESSERA_TEST_POSTGRES_URL";
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A migrated, empty database that disappears with this value.
pub struct TestDatabase {
    pub url: DatabaseUrl,
    pub database: Database,
    cleanup: Cleanup,
}

enum Cleanup {
    Directory(#[allow(dead_code)] tempfile::TempDir),
    Postgres { server_url: String, name: String },
}

impl TestDatabase {
    pub async fn sqlite() -> Self {
        Self::sqlite_with(&Part::ALL).await
    }

    pub async fn postgres() -> Self {
        Self::postgres_with(&Part::ALL).await
    }

    /// Both backends, for contract tests that must hold on each.
    pub async fn of(backend: Backend) -> Self {
        Self::with_parts(backend, &Part::ALL).await
    }

    /// A database migrated with `parts` (and what they need) only.
    pub async fn with_parts(backend: Backend, parts: &[Part]) -> Self {
        match backend {
            Backend::Sqlite => Self::sqlite_with(parts).await,
            Backend::Postgres => Self::postgres_with(parts).await,
        }
    }

    async fn sqlite_with(parts: &[Part]) -> Self {
        let dir = tempfile::tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"));
        let url = DatabaseUrl::Sqlite(dir.path().join("test.sqlite"));
        Self::migrated(url, Cleanup::Directory(dir), parts).await
    }

    async fn postgres_with(parts: &[Part]) -> Self {
        let server_url =
            std::env::var(POSTGRES_URL_VAR).unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
        let name = format!("tessera_test_{}", uuid::Uuid::now_v7().simple());
        let mut admin = AsyncPgConnection::establish(&server_url).await.unwrap_or_else(|e| {
            panic!("PostgreSQL is needed at {server_url} (set {POSTGRES_URL_VAR}); connecting failed: {e}")
        });
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        let url = DatabaseUrl::Postgres(database_url(&server_url, &name));
        Self::migrated(url, Cleanup::Postgres { server_url, name }, parts).await
    }

    /// Terminates every server connection to this PostgreSQL database (as a restart or a
    /// failover would), leaving the database in place; returns how many were cut.
    pub async fn terminate_connections(&self) -> usize {
        #[derive(diesel::QueryableByName)]
        struct Terminated {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            #[allow(dead_code)]
            done: bool,
        }
        let Cleanup::Postgres { server_url, name } = &self.cleanup else {
            return 0;
        };
        let mut admin = AsyncPgConnection::establish(server_url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {server_url}: {e}"));
        diesel::sql_query(
            "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind::<diesel::sql_types::Text, _>(name)
        .load::<Terminated>(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("terminating connections to {name}: {e}"))
        .len()
    }

    /// Drops a PostgreSQL database now, cutting its connections (to test outages).
    pub async fn destroy(&self) {
        if let Cleanup::Postgres { server_url, name } = &self.cleanup {
            let mut admin = AsyncPgConnection::establish(server_url)
                .await
                .unwrap_or_else(|e| panic!("connecting to {server_url}: {e}"));
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut admin)
                .await
                .unwrap_or_else(|e| panic!("dropping {name}: {e}"));
        }
    }

    async fn migrated(url: DatabaseUrl, cleanup: Cleanup, parts: &[Part]) -> Self {
        Database::migrate_parts(&url, parts)
            .await
            .unwrap_or_else(|e| panic!("migrating {url} failed: {e}"));
        let options = PoolOptions {
            max_connections: 4,
            ..PoolOptions::default()
        };
        let database = Database::connect(&url, options)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url} failed: {e}"));
        Self {
            url,
            database,
            cleanup,
        }
    }
}

/// The `value` column (text) of every row a raw `SELECT` returns, on either backend: for
/// tests that check what is really stored (e.g. that a secret is not).
pub async fn text_rows(database: &Database, sql: &str) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        value: String,
    }
    let rows = async {
        let rows: Vec<Row> = crate::database::with_connection!(database, conn => {
            diesel::sql_query(sql)
                .load::<Row>(conn)
                .await
                .map_err(crate::error::query_error)?
        });
        Ok::<_, tessera_kernel::DomainError>(rows)
    }
    .await
    .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter().map(|row| row.value).collect()
}

/// Stores an organization with this id (on the pro plan), for the contract suites' records
/// that refer to one.
pub async fn store_organization(
    database: &Database,
    id: &tessera_kernel::OrganizationId,
    name: &str,
) {
    use tessera_organizations::{Organization, OrganizationStore, Plan};
    let at = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let organization = Organization {
        id: id.clone(),
        name: name.to_owned(),
        plan: Plan::Pro,
        image_ocr: false,
        created_at: at,
        updated_at: at,
    };
    crate::SqlOrganizationStore::new(database.clone())
        .insert(&organization, &[])
        .await
        .unwrap_or_else(|e| panic!("storing organization {id}: {e}"));
}

/// Runs one raw statement on either backend; how many rows it changed (for tests that check
/// what the database itself refuses).
pub async fn execute(database: &Database, sql: &str) -> Result<usize, tessera_kernel::DomainError> {
    Ok(crate::database::with_connection!(database, conn => {
        diesel::sql_query(sql)
            .execute(conn)
            .await
            .map_err(crate::error::query_error)?
    }))
}

/// The URL of database `name` on the server of `server_url` (replaces the path).
fn database_url(server_url: &str, name: &str) -> String {
    let without_query = server_url.split('?').next().unwrap_or(server_url);
    let base = match without_query.find("://").map(|i| i + 3) {
        Some(start) => match without_query[start..].find('/') {
            Some(slash) => &without_query[..start + slash],
            None => without_query,
        },
        None => without_query,
    };
    format!("{base}/{name}")
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Cleanup::Postgres { server_url, name } = &self.cleanup {
            let (server_url, name) = (server_url.clone(), name.clone());
            // Drop runs inside the test's runtime; a helper thread with its own runtime
            // can block on the DROP without stalling it.
            let dropped = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                runtime.block_on(async {
                    let mut admin = AsyncPgConnection::establish(&server_url).await.ok()?;
                    diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut admin)
                        .await
                        .ok()
                })
            })
            .join();
            if !matches!(dropped, Ok(Some(_))) {
                eprintln!("note: could not drop test database; `just test` removes leftovers");
            }
        }
    }
}

/// Runs each listed `async fn name(backend: Backend)` once per database backend, as
/// `sqlite::name` and `postgres::name` tests (the contract suites and the HTTP tests use it).
#[macro_export]
macro_rules! on_both_databases {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() { super::$test($crate::Backend::Sqlite).await }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() { super::$test($crate::Backend::Postgres).await }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_url_replaces_the_path() {
        assert_eq!(
            database_url("postgres://u@h:5432/postgres", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            database_url("postgres://u@h:5432", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            database_url("postgres://u@h/db?sslmode=disable", "x"),
            "postgres://u@h/x"
        );
    }
}
