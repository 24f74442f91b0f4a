//! What the store tells an operator about itself: how long requests wait for a pooled
//! connection (recorded through the `metrics` facade, a no-op until the binary installs a
//! recorder), the pools' occupancy and the background work waiting in the database, read
//! when metrics are scraped. Names follow the OpenTelemetry database semantic conventions
//! (`db.client.connection.*`) in their Prometheus spelling.

use std::{future::Future, time::Instant};

use crate::Database;

/// `db.client.connection.wait_time`: seconds spent waiting for a pooled connection.
pub const CONNECTION_WAIT_TIME: &str = "db_client_connection_wait_time_seconds";
/// The pool label's values: one pool per process, named by its database system.
pub const POSTGRESQL: &str = "postgresql";
pub const SQLITE: &str = "sqlite";

/// Awaits a pool checkout and records how long it took (failed checkouts too: a timeout is
/// the longest wait of all).
pub(crate) async fn timed_checkout<T>(pool: &'static str, checkout: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let result = checkout.await;
    metrics::histogram!(CONNECTION_WAIT_TIME, "db_client_connection_pool_name" => pool)
        .record(started.elapsed().as_secs_f64());
    result
}

/// A pool's occupancy at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// The pool's name in metrics: its database system.
    pub pool: &'static str,
    /// Connections open, in use or idle.
    pub open: usize,
    /// Connections idle in the pool.
    pub idle: usize,
    /// The most connections the pool opens.
    pub max: usize,
    /// Requests waiting for a connection.
    pub pending: usize,
}

/// Background work waiting in the database, across every organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// File-processing jobs no worker holds.
    pub file_jobs_queued: u64,
    /// File-processing jobs a worker holds under a live lease.
    pub file_jobs_processing: u64,
    /// Webhook deliveries still to be attempted (the outbox's depth).
    pub webhook_deliveries_pending: u64,
}

impl Database {
    /// The connection pool's occupancy now.
    pub fn pool_status(&self) -> PoolStatus {
        let (pool, status) = match self {
            Database::Postgres(pool) => (POSTGRESQL, pool.status()),
            Database::Sqlite(pool) => (SQLITE, pool.status()),
        };
        PoolStatus {
            pool,
            open: status.size,
            idle: status.available,
            max: status.max_size,
            pending: status.waiting,
        }
    }

    /// Counts the queued file jobs and pending webhook deliveries (three indexed counts).
    #[cfg(feature = "knowledge")]
    pub async fn backlog(&self) -> Result<Backlog, tessera_kernel::DomainError> {
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;

        use crate::{
            database::with_connection,
            error::query_error,
            schema::{file_jobs, webhook_deliveries},
        };

        let now = chrono::Utc::now().naive_utc();
        let count = |n: i64| u64::try_from(n).unwrap_or_default();
        let (jobs, leased, pending): (i64, i64, i64) = with_connection!(self, conn => {
            let jobs = file_jobs::table
                .count()
                .get_result::<i64>(conn)
                .await
                .map_err(query_error)?;
            let leased = file_jobs::table
                .filter(file_jobs::leased_until.gt(now))
                .count()
                .get_result::<i64>(conn)
                .await
                .map_err(query_error)?;
            let pending = webhook_deliveries::table
                .filter(webhook_deliveries::status.eq(tessera_webhooks::DeliveryStatus::Pending.as_str()))
                .count()
                .get_result::<i64>(conn)
                .await
                .map_err(query_error)?;
            (jobs, leased, pending)
        });
        Ok(Backlog {
            file_jobs_queued: count(jobs - leased),
            file_jobs_processing: count(leased),
            webhook_deliveries_pending: count(pending),
        })
    }
}
