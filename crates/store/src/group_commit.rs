//! Group commit on PostgreSQL: the layer the per-domain stores batch their writes through.
//! A store's writes of one kind (a [`Grouped`] type its domain's file declares: new chats,
//! finished turns, usage records) queue for a writer (a `batch::Batcher`), which writes
//! whatever is waiting as one statement (data-modifying `WITH` parts over arrays, `unnest`)
//! committed on its own: no `BEGIN`/`COMMIT` round trips, one WAL flush, one plan reused per
//! connection. Each thread that writes has its own set of a store's writers ([`Writers`]),
//! started on its runtime, so a write and its answer never wake another thread. Under load
//! one statement serves dozens of completions; on an idle server a write is a batch of one
//! and goes at once. A batch that fails (a taken key, an unknown chat) changes nothing, and
//! each of its writes is then made in a transaction of its own, so one bad write fails only
//! its own caller, with its own error. SQLite has one writer anyway and writes directly.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use diesel_async::{AsyncPgConnection, pooled_connection::deadpool::Pool};
use tessera_kernel::{DomainError, PerThread};
use tracing::Instrument;

use crate::{
    batch::{Batcher, Limits, NotOnRuntime, Pending},
    batch_connections::BatchConnections,
};

/// Two batches at a time per writer (one commits while the next is sent): fewer, larger
/// batches share the database's work better than many small ones. A batch inserts at most
/// 2 000 rows (each costs up to 16 bound values of PostgreSQL's 65 535); a single write
/// with more rows than this goes alone, row by row.
const LIMITS: Limits = Limits {
    in_flight: 2,
    max_weight: 2_000,
};

/// Idle connections kept per thread: up to two writers (a chat store's), two batches in
/// flight each.
const KEPT_CONNECTIONS: usize = 4;

/// How much batching the writer has done (for tests and diagnostics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Statements (or, with artifacts, transactions) made for two writes or more.
    pub batches: u64,
    /// Writes those batches carried.
    pub batched_writes: u64,
    /// Batches that failed and were retried write by write.
    pub retried_batches: u64,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    batched_writes: AtomicU64,
    retried_batches: AtomicU64,
}

/// The writers of one store, a set per thread that writes (see `tessera_kernel::PerThread`).
pub(crate) struct GroupCommit<S> {
    writers: PerThread<S, NotOnRuntime>,
    counters: Arc<Counters>,
}

/// One thread's writers of a store: a [`Writer`] per kind of write it batches, started
/// together (see [`WriterStart`]).
pub(crate) trait Writers: Sized + Send + Sync + 'static {
    /// Starts each writer on the calling thread's runtime.
    fn start(start: &WriterStart) -> Result<Self, NotOnRuntime>;

    /// Whether every writer still takes writes (they stop with their runtime, and the set
    /// is then replaced).
    fn running(&self) -> bool;
}

/// What one thread's writers share: the connections they write on and the store's counters.
pub(crate) struct WriterStart {
    connections: Arc<BatchConnections>,
    counters: Arc<Counters>,
}

impl WriterStart {
    /// A writer of `W`s, started on the calling thread's runtime.
    pub(crate) fn writer<W: Grouped>(&self) -> Result<Writer<W>, NotOnRuntime> {
        let connections = self.connections.clone();
        let counters = self.counters.clone();
        Batcher::start(LIMITS, W::rows, move |batch| {
            let connections = connections.clone();
            let counters = counters.clone();
            async move { commit(&connections, batch, &counters).await }
        })
        .map(Writer)
    }
}

/// The queue to one writer of `W`s.
pub(crate) struct Writer<W>(Batcher<W, ()>);

impl<W: Grouped> Writer<W> {
    /// Stores `write` in the next batch; returns once that batch has committed (or the
    /// write has failed).
    pub(crate) async fn write(&self, write: W) -> Result<(), DomainError> {
        self.0.call(write).await
    }
}

impl<W> Writer<W> {
    /// Whether the writer still takes writes.
    pub(crate) fn running(&self) -> bool {
        self.0.running()
    }
}

impl<S: Writers> GroupCommit<S> {
    /// The writers of a store on `pool`; each thread's start on its runtime when it first
    /// writes, and stop when the store is dropped (or their runtime shuts down).
    pub(crate) fn new(pool: Pool<AsyncPgConnection>) -> Self {
        let counters = Arc::new(Counters::default());
        let counted = Arc::clone(&counters);
        let writers = PerThread::new(move || {
            S::start(&WriterStart {
                connections: Arc::new(BatchConnections::new(pool.clone(), KEPT_CONNECTIONS)),
                counters: Arc::clone(&counted),
            })
        })
        .replacing_unless(S::running);
        Self { writers, counters }
    }

    /// This thread's writers; `None` outside a Tokio runtime (the store then writes
    /// directly).
    pub(crate) fn here(&self) -> Option<Arc<S>> {
        self.writers.get().ok()
    }

    pub(crate) fn stats(&self) -> GroupCommitStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        GroupCommitStats {
            batches: read(&self.counters.batches),
            batched_writes: read(&self.counters.batched_writes),
            retried_batches: read(&self.counters.retried_batches),
        }
    }
}

/// The span of one batch's statement: a trace of its own, since it serves many completions
/// (one span per batch rather than one per waiting write keeps tracing's cost per completion
/// small under load: issue 32). `db.operation.batch.size` only for two writes or more, as
/// the conventions ask.
fn batch_span(operation: &'static str, writes: usize) -> tracing::Span {
    let span = tracing::info_span!(
        parent: None,
        "group commit",
        "otel.name" = operation,
        "otel.kind" = "client",
        "db.system.name" = "postgresql",
        "db.operation.name" = operation,
        "db.operation.batch.size" = tracing::field::Empty,
    );
    if writes > 1 {
        span.record("db.operation.batch.size", writes as i64);
    }
    span
}

/// One kind of write the writers batch, declared by the domain that writes it.
pub(crate) trait Grouped: Sized + Send + Sync + 'static {
    /// What a batch of these does, as its span names it.
    const OPERATION: &'static str;

    /// Rows the write inserts (what a batch's size is counted in).
    fn rows(&self) -> usize;

    /// Every write of a batch, atomically: all of them or none.
    fn together<'a>(
        conn: &'a mut AsyncPgConnection,
        writes: &'a [&'a Self],
    ) -> impl Future<Output = Result<(), DomainError>> + Send + 'a;

    /// One write in a transaction of its own (how a failed batch is retried: each write
    /// gets its own, precise, error).
    fn alone<'a>(
        conn: &'a mut AsyncPgConnection,
        write: &'a Self,
    ) -> impl Future<Output = Result<(), DomainError>> + Send + 'a;
}

/// Writes one batch and answers its callers.
async fn commit<W: Grouped>(
    connections: &BatchConnections,
    batch: Vec<Pending<W, ()>>,
    counters: &Counters,
) {
    let batched = batch.len() > 1;
    if batched {
        counters.batches.fetch_add(1, Ordering::Relaxed);
        counters
            .batched_writes
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
    let writes: Vec<&W> = batch.iter().map(|pending| &pending.request).collect();
    let outcome = async {
        match connections.get().await {
            Ok(mut conn) => {
                let outcome = W::together(&mut conn, &writes).await;
                connections.put_back(conn, &outcome);
                outcome
            }
            Err(error) => Err(error),
        }
    }
    .instrument(batch_span(W::OPERATION, writes.len()))
    .await;
    match outcome {
        Ok(()) => {
            for pending in batch {
                pending.answer(Ok(()));
            }
        }
        // Nothing to retry against: every write would wait for the same database.
        Err(error @ DomainError::Unavailable { .. }) => {
            for pending in batch {
                pending.answer(Err(error.clone()));
            }
        }
        Err(_) => {
            if batched {
                counters.retried_batches.fetch_add(1, Ordering::Relaxed);
            }
            for pending in batch {
                let outcome = match connections.get().await {
                    Ok(mut conn) => {
                        let outcome = W::alone(&mut conn, &pending.request).await;
                        connections.put_back(conn, &outcome);
                        outcome
                    }
                    Err(error) => Err(error),
                };
                pending.answer(outcome);
            }
        }
    }
}
