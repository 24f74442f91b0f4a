//! The batching tasks' own PostgreSQL connections (group-commit writers, client lookups).
//!
//! Each is opened on the thread whose batching tasks use it (see `tessera_kernel::PerThread`):
//! its I/O task then runs on that thread's runtime too, and a batch's statement goes out and
//! its reply comes back without waking another thread.
//!
//! Their statements are prepared once and planned once, for all parameters (a generic
//! plan). Left to choose, PostgreSQL prices a generic plan with ten elements per array
//! parameter and a custom plan with the real count, and may plan anew on many runs: in a
//! benchmark, the client lookup (`id = ANY($1)`) was planned on every one of 14 700 runs
//! (0.06 ms of planning to 0.014 of execution) and the finished turns' statement on 65-571
//! of 12 000 (0.3 ms each). A generic plan made while the tables were small (a fresh
//! database) would read `chats` whole (a hash join with the batch's rows) and keep doing so as
//! it grew, and `running_generations` stays small but churns (a row in and out per
//! completion), so a scan of it reads every dead row left since the last vacuum (measured: a
//! batch of one cost 4.9 ms of CPU instead of 1.5). So these connections, never shared with
//! other queries, also forbid whole-table scans and hash or merge joins: every plan is then a
//! lookup of the batch's keys (`runner_id = … AND chat_id = ANY(…)`, or an index probe per
//! unnested row), whatever the statistics.

use std::{sync::Mutex, time::Duration};

use deadpool::managed::Manager;
use diesel_async::{AsyncPgConnection, SimpleAsyncConnection, pooled_connection::deadpool::Pool};
use tessera_kernel::DomainError;

use crate::error::{pool_error, query_error};

/// Session settings of a batch connection: one plan per statement, no whole-table scans, no
/// hash or merge joins, and plain index scans rather than bitmap ones (a plain scan marks the
/// index entries of deleted leases dead as it passes them, so later scans skip them before
/// any vacuum).
const BATCH_SESSION: &str = "SET plan_cache_mode = force_generic_plan; \
                             SET enable_seqscan = off; SET enable_hashjoin = off; \
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
        conn.batch_execute(BATCH_SESSION)
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

#[cfg(all(test, feature = "testing"))]
mod tests {
    use diesel::{prelude::*, sql_types::BigInt};
    use diesel_async::RunQueryDsl;

    use super::*;
    use crate::{Database, schema::clients, testing::TestDatabase};

    #[derive(QueryableByName)]
    struct Plans {
        #[diesel(sql_type = BigInt)]
        generic_plans: i64,
        #[diesel(sql_type = BigInt)]
        custom_plans: i64,
    }

    /// Left to choose, PostgreSQL would plan a statement with an array parameter anew on
    /// every run (its generic plan, priced for ten elements, looks dearer than one made for
    /// the elements at hand): the batch connections make it plan once.
    #[tokio::test(flavor = "current_thread")]
    async fn a_statement_with_an_array_parameter_is_planned_once() {
        let test = TestDatabase::postgres().await;
        let Database::Postgres(pool) = &test.database else {
            panic!("a PostgreSQL database");
        };
        let connections = BatchConnections::new(pool.clone(), 1);
        let mut conn = connections.get().await.unwrap();
        for batch in 1..=8 {
            let ids: Vec<String> = (0..batch).map(|n| format!("cli_{n}")).collect();
            let found: Vec<String> = clients::table
                .filter(clients::id.eq_any(&ids))
                .select(clients::id)
                .load(&mut conn)
                .await
                .unwrap();
            assert!(found.is_empty());
        }
        let plans: Vec<Plans> = diesel::sql_query(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
             WHERE statement LIKE 'SELECT \"clients\".%'",
        )
        .load(&mut conn)
        .await
        .unwrap();
        assert_eq!(
            plans.len(),
            1,
            "one prepared statement for every batch size"
        );
        assert_eq!(
            (plans[0].generic_plans, plans[0].custom_plans),
            (8, 0),
            "planned once, run eight times on that plan"
        );
    }
}
