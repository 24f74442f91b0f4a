//! The batching tasks' own PostgreSQL connections (group-commit writers, client lookups).
//!
//! Each is opened on the thread whose batching tasks use it (see `per_thread`): its I/O task
//! then runs on that thread's runtime too, and a batch's statement goes out and its reply
//! comes back without waking another thread.
//!
//! Their statements are prepared once, and PostgreSQL plans them (after a few runs) once for
//! all parameters, from the statistics of that moment. Planned while the tables were small
//! (a fresh database), the finished chats' update read `chats` whole (a hash join with the
//! batch's rows) and kept doing so as it grew; `running_generations` stays small but churns
//! (a row in and out per completion), so a scan of it reads every dead row left since the
//! last vacuum. Measured: a batch of one cost PostgreSQL 4.9 ms of CPU instead of 1.5. So
//! the statements name the rows they touch by key (`chats.id = ANY(…)`, `runner_id = … AND
//! chat_id = ANY(…)`), and these connections, never shared with other queries, forbid
//! whole-table scans and hash or merge joins: every plan is then a lookup of the batch's
//! keys, whatever the statistics.

use std::{sync::Mutex, time::Duration};

use deadpool::managed::Manager;
use diesel_async::{AsyncPgConnection, SimpleAsyncConnection, pooled_connection::deadpool::Pool};
use tessera_kernel::DomainError;

use crate::error::{pool_error, query_error};

/// Session settings of a batch connection: no whole-table scans, no hash or merge joins,
/// and plain index scans rather than bitmap ones (a plain scan marks the index entries of
/// deleted leases dead as it passes them, so later scans skip them before any vacuum).
const INDEX_LOOKUPS_ONLY: &str = "SET enable_seqscan = off; SET enable_hashjoin = off; \
                                  SET enable_mergejoin = off; SET enable_bitmapscan = off";

/// How long opening a connection may take when the pool sets no limit.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections for one thread's batching tasks, opened as needed with the pool's settings
/// (its URL and connect timeout) but outside it: their session settings must not reach
/// other queries.
pub(crate) struct BatchConnections {
    pool: Pool<AsyncPgConnection>,
    idle: Mutex<Vec<AsyncPgConnection>>,
    kept: usize,
}

impl BatchConnections {
    /// Keeps up to `kept` idle connections (as many as the tasks have batches in flight).
    pub(crate) fn new(pool: Pool<AsyncPgConnection>, kept: usize) -> Self {
        Self {
            pool,
            idle: Mutex::new(Vec::new()),
            kept,
        }
    }

    /// An idle connection, or a new one opened on this thread and set up.
    pub(crate) async fn get(&self) -> Result<AsyncPgConnection, DomainError> {
        if let Some(conn) = self.lock().pop() {
            return Ok(conn);
        }
        let timeout = self
            .pool
            .timeouts()
            .create
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let mut conn = tokio::time::timeout(timeout, self.pool.manager().create())
            .await
            .map_err(|_| pool_error(format!("no connection within {timeout:?}")))?
            .map_err(pool_error)?;
        conn.batch_execute(INDEX_LOOKUPS_ONLY)
            .await
            .map_err(query_error)?;
        Ok(conn)
    }

    /// Keeps `conn` for the next batch when what it did succeeded; after a failure it is
    /// closed (it may be broken, or inside a transaction that could not roll back).
    pub(crate) fn put_back<T>(&self, conn: AsyncPgConnection, outcome: &Result<T, DomainError>) {
        let mut idle = self.lock();
        if outcome.is_ok() && idle.len() < self.kept {
            idle.push(conn);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<AsyncPgConnection>> {
        // Every update is one push or pop: a panic elsewhere leaves the list consistent.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
