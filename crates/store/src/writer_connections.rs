//! The group-commit writers' own PostgreSQL connections. Their statements are prepared
//! once, and PostgreSQL plans them (after a few runs) once for all parameters, from the
//! statistics of that moment. Planned while the tables were small (a fresh database), the
//! finished chats' update read `chats` whole (a hash join with the batch's rows) and kept
//! doing so as it grew; `running_generations` stays small but churns (a row in and out per
//! completion), so a scan of it reads every dead row left since the last vacuum. Measured:
//! a batch of one cost PostgreSQL 4.9 ms of CPU instead of 1.5. So the statements name the
//! rows they touch by key (`chats.id = ANY(…)`, `runner_id = … AND chat_id = ANY(…)`), and
//! these connections, taken out of the pool for good, forbid whole-table scans and hash or
//! merge joins: every plan is then a lookup of the batch's keys, whatever the statistics.

use std::sync::Mutex;

use diesel_async::{AsyncPgConnection, SimpleAsyncConnection, pooled_connection::deadpool::Pool};
use tessera_kernel::DomainError;

use crate::error::{pool_error, query_error};

/// Session settings of a writer's connection: no whole-table scans, no hash or merge joins,
/// and plain index scans rather than bitmap ones (a plain scan marks the index entries of
/// deleted leases dead as it passes them, so later scans skip them before any vacuum).
const INDEX_LOOKUPS_ONLY: &str = "SET enable_seqscan = off; SET enable_hashjoin = off; \
                                  SET enable_mergejoin = off; SET enable_bitmapscan = off";

/// Idle connections kept for the writers (two writers, two batches in flight each).
const KEPT: usize = 4;

/// Connections for the writers, taken from the store's pool as needed.
pub(crate) struct WriterConnections {
    pool: Pool<AsyncPgConnection>,
    idle: Mutex<Vec<AsyncPgConnection>>,
}

impl WriterConnections {
    pub(crate) fn new(pool: Pool<AsyncPgConnection>) -> Self {
        Self {
            pool,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle writer connection, or a new one taken from the pool and set up.
    pub(crate) async fn get(&self) -> Result<AsyncPgConnection, DomainError> {
        if let Some(conn) = self.lock().pop() {
            return Ok(conn);
        }
        let pooled = self.pool.get().await.map_err(pool_error)?;
        // Out of the pool for good: its settings must not reach other queries.
        let mut conn = deadpool::managed::Object::take(pooled);
        conn.batch_execute(INDEX_LOOKUPS_ONLY)
            .await
            .map_err(query_error)?;
        Ok(conn)
    }

    /// Keeps `conn` for the next batch when what it did succeeded; after a failure it is
    /// closed (it may be broken, or inside a transaction that could not roll back).
    pub(crate) fn put_back<T>(&self, conn: AsyncPgConnection, outcome: &Result<T, DomainError>) {
        let mut idle = self.lock();
        if outcome.is_ok() && idle.len() < KEPT {
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
