//! Group commit of chat writes on PostgreSQL. Concurrent completions' new chats and finished
//! turns queue for two writers (a `batch::Batcher` each; a pair per thread, on its runtime,
//! so a write and its answer never wake another thread), which write whatever is waiting as
//! one statement (data-modifying `WITH` parts over arrays, `unnest`) committed on its own:
//! no `BEGIN`/`COMMIT` round trips, one WAL flush, one plan reused per connection. Under
//! load one statement serves dozens of completions; on an idle server a write is a batch of
//! one and goes at once. A batch that fails (a taken key, an unknown chat) changes nothing,
//! and each of its writes is then made in a transaction of its own, so one bad write fails
//! only its own caller, with its own error. SQLite has one writer anyway and writes directly.

use std::{
    collections::BTreeMap,
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use diesel::{
    pg::Pg,
    query_builder::{AstPass, QueryFragment},
    sql_types::BigInt,
};
use diesel_async::{
    AsyncConnection, AsyncPgConnection, RunQueryDsl, pooled_connection::deadpool::Pool,
};
use futures_util::future::OptionFuture;
use tessera_kernel::{DomainError, PerThread};
use tracing::Instrument;

use crate::{
    batch::{Batcher, Limits, NotOnRuntime, Pending},
    batch_connections::BatchConnections,
    chats::{ChatRow, FinishChats, InsertChats, InsertMessages, TurnRows, finish_pipelined},
    error::{Rollback, query_error, settle},
    leases::{EndLeases, InsertLeases, LeaseRow},
    schema::{artifacts, chats, running_generations},
    unnest::static_query_id,
    usage::{HourlyKey, HourlyRow, InsertUsage, UpsertHourly, UsageRow, record_alone},
};

/// Two batches at a time per writer (one commits while the next is sent): fewer, larger
/// batches share the database's work better than many small ones. A batch inserts at most
/// 2 000 rows (each costs up to 16 bound values of PostgreSQL's 65 535); a single write
/// with more rows than this goes alone, row by row.
const LIMITS: Limits = Limits {
    in_flight: 2,
    max_weight: 2_000,
};

/// Idle connections kept per thread: two writers, two batches in flight each.
const KEPT_CONNECTIONS: usize = 4;

/// A new chat, without messages, and the lease of its generation.
pub(crate) struct NewChat {
    pub(crate) chat: ChatRow,
    pub(crate) lease: Option<LeaseRow>,
}

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

/// The writers of one store, a pair per thread that writes (see `tessera_kernel::PerThread`).
pub(crate) struct GroupCommit {
    writers: PerThread<Writers, NotOnRuntime>,
    counters: Arc<Counters>,
}

/// One thread's queues to its writers: new chats and finished turns batch apart, so a
/// completion's start does not wait behind a large batch of others' answers; usage records
/// of completions that keep no chat (stateless ones) batch on their own.
pub(crate) struct Writers {
    chats: Batcher<NewChat, ()>,
    turns: Batcher<TurnRows, ()>,
    usage: Batcher<UsageWrite, ()>,
}

impl Writers {
    fn running(&self) -> bool {
        self.chats.running() && self.turns.running() && self.usage.running()
    }
}

/// A usage record written on its own (no chat turn carries it).
pub(crate) struct UsageWrite(pub(crate) UsageRow);

impl GroupCommit {
    /// The writers of a store on `pool`; each thread's start on its runtime when it first
    /// writes, and stop when the store is dropped (or their runtime shuts down).
    pub(crate) fn new(pool: Pool<AsyncPgConnection>) -> Self {
        let counters = Arc::new(Counters::default());
        let counted = Arc::clone(&counters);
        let writers = PerThread::new(move || {
            let connections = Arc::new(BatchConnections::new(pool.clone(), KEPT_CONNECTIONS));
            Ok(Writers {
                chats: writer(&connections, &counted)?,
                turns: writer(&connections, &counted)?,
                usage: writer(&connections, &counted)?,
            })
        })
        .replacing_unless(Writers::running);
        Self { writers, counters }
    }

    /// This thread's writers; `None` outside a Tokio runtime (the store then writes
    /// directly).
    pub(crate) fn here(&self) -> Option<Arc<Writers>> {
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

impl Writers {
    /// Stores `chat` in the next batch; returns once that batch has committed (or the
    /// write has failed).
    pub(crate) async fn create(&self, chat: NewChat) -> Result<(), DomainError> {
        self.chats.call(chat).await
    }

    /// Stores a finished turn in the next batch, like [`Writers::create`].
    pub(crate) async fn finish(&self, turn: TurnRows) -> Result<(), DomainError> {
        self.turns.call(turn).await
    }

    /// Stores a usage record (and its hourly rollup) in the next batch.
    pub(crate) async fn record(&self, usage: UsageRow) -> Result<(), DomainError> {
        self.usage.call(UsageWrite(usage)).await
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

/// One kind of write the writers batch.
trait Grouped: Sized + Send + Sync + 'static {
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

fn writer<W: Grouped>(
    connections: &Arc<BatchConnections>,
    counters: &Arc<Counters>,
) -> Result<Batcher<W, ()>, NotOnRuntime> {
    let connections = connections.clone();
    let counters = counters.clone();
    Batcher::start(LIMITS, W::rows, move |batch| {
        let connections = connections.clone();
        let counters = counters.clone();
        async move { commit(&connections, batch, &counters).await }
    })
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

impl Grouped for NewChat {
    const OPERATION: &'static str = "insert chat";

    fn rows(&self) -> usize {
        2
    }

    async fn together(conn: &mut AsyncPgConnection, writes: &[&Self]) -> Result<(), DomainError> {
        let statement = CreateChats {
            chats: InsertChats::new(writes.iter().map(|write| &write.chat)),
            leases: InsertLeases::new(writes.iter().filter_map(|write| write.lease.as_ref())),
        };
        statement.execute(conn).await.map_err(query_error)?;
        Ok(())
    }

    async fn alone(conn: &mut AsyncPgConnection, write: &Self) -> Result<(), DomainError> {
        settle(
            conn.transaction(async |conn| {
                let mut shared: &AsyncPgConnection = conn;
                let chat = diesel::insert_into(chats::table)
                    .values(&write.chat)
                    .execute(&mut shared);
                let lease = OptionFuture::from(write.lease.as_ref().map(|lease| {
                    diesel::insert_into(running_generations::table)
                        .values(lease)
                        .execute(&mut shared)
                }));
                let (chat, lease) = futures_util::join!(chat, lease);
                chat?;
                lease.transpose()?;
                Ok::<_, Rollback<()>>(())
            })
            .await,
        )
    }
}

impl Grouped for TurnRows {
    const OPERATION: &'static str = "finish turn";

    fn rows(&self) -> usize {
        self.messages.len() + self.artifacts.len() + 2
    }

    /// One statement ends every generation of the batch (see [`FinishTurns`]); artifacts,
    /// which few answers have, are inserted beside it in a transaction.
    async fn together(conn: &mut AsyncPgConnection, turns: &[&Self]) -> Result<(), DomainError> {
        let hourly = rollups(turns.iter().map(|turn| turn.usage.hourly()));
        let statement = FinishTurns {
            chats: FinishChats::new(turns.iter().copied()),
            leases: EndLeases::new(turns)
                .ok_or_else(|| DomainError::internal("a batch of turns of several runners"))?,
            messages: InsertMessages::new(turns.iter().flat_map(|turn| &turn.messages)),
            usage: InsertUsage::new(turns.iter().map(|turn| &turn.usage)),
            hourly: UpsertHourly::new(&hourly),
            turns: turns.len() as i64,
        };
        let artifacts: Vec<_> = turns.iter().flat_map(|turn| &turn.artifacts).collect();
        if artifacts.is_empty() {
            statement.execute(conn).await.map_err(query_error)?;
            return Ok(());
        }
        settle(
            conn.transaction(async |conn| {
                let mut shared: &AsyncPgConnection = conn;
                let (finished, stored) = futures_util::join!(
                    statement.execute(&mut shared),
                    diesel::insert_into(artifacts::table)
                        .values(artifacts)
                        .execute(&mut shared)
                );
                finished?;
                stored?;
                Ok::<_, Rollback<()>>(())
            })
            .await,
        )
    }

    async fn alone(conn: &mut AsyncPgConnection, turn: &Self) -> Result<(), DomainError> {
        settle(
            conn.transaction(async |conn| finish_pipelined(conn, turn).await)
                .await,
        )
    }
}

/// New chats and their generations' leases, as one statement however many.
struct CreateChats<'a> {
    chats: InsertChats<'a>,
    leases: InsertLeases<'a>,
}

static_query_id!(CreateChats);

impl QueryFragment<Pg> for CreateChats<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> diesel::QueryResult<()> {
        out.push_sql("WITH created AS (");
        self.chats.walk_ast(out.reborrow())?;
        out.push_sql(") ");
        self.leases.walk_ast(out.reborrow())
    }
}

/// The end of finished generations, as one statement however many: each chat's status
/// change and the end of its lease, the turns' messages, usage records and the hourly
/// rollups' upsert. It fails whole (and so changes nothing) unless every chat was found:
/// the last part divides by zero when fewer chats changed than turns were given.
struct FinishTurns<'a> {
    chats: FinishChats<'a>,
    leases: EndLeases<'a>,
    messages: InsertMessages<'a>,
    usage: InsertUsage<'a>,
    hourly: UpsertHourly<'a>,
    turns: i64,
}

static_query_id!(FinishTurns);

impl QueryFragment<Pg> for FinishTurns<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> diesel::QueryResult<()> {
        out.push_sql("WITH done AS (");
        self.chats.walk_ast(out.reborrow())?;
        out.push_sql(" RETURNING 1), unleased AS (");
        self.leases.walk_ast(out.reborrow())?;
        out.push_sql("), appended AS (");
        self.messages.walk_ast(out.reborrow())?;
        out.push_sql("), recorded AS (");
        self.usage.walk_ast(out.reborrow())?;
        out.push_sql("), rolled_up AS (");
        self.hourly.walk_ast(out.reborrow())?;
        // A constant would be folded (and fail) when the statement is planned.
        out.push_sql(") SELECT 1 / (count(*) = ");
        out.push_bind_param::<BigInt, _>(&self.turns)?;
        out.push_sql(")::int FROM done");
        Ok(())
    }
}

impl Grouped for UsageWrite {
    const OPERATION: &'static str = "insert usage";

    fn rows(&self) -> usize {
        2
    }

    async fn together(conn: &mut AsyncPgConnection, writes: &[&Self]) -> Result<(), DomainError> {
        let hourly = rollups(writes.iter().map(|write| write.0.hourly()));
        let statement = RecordUsage {
            usage: InsertUsage::new(writes.iter().map(|write| &write.0)),
            hourly: UpsertHourly::new(&hourly),
        };
        statement.execute(conn).await.map_err(query_error)?;
        Ok(())
    }

    async fn alone(conn: &mut AsyncPgConnection, write: &Self) -> Result<(), DomainError> {
        record_alone(conn, &write.0).await
    }
}

/// One statement records a batch of usage records and upserts their hourly rollups.
struct RecordUsage<'a> {
    usage: InsertUsage<'a>,
    hourly: UpsertHourly<'a>,
}

static_query_id!(RecordUsage);

impl QueryFragment<Pg> for RecordUsage<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> diesel::QueryResult<()> {
        out.push_sql("WITH recorded AS (");
        self.usage.walk_ast(out.reborrow())?;
        out.push_sql(") ");
        self.hourly.walk_ast(out.reborrow())
    }
}

/// The batch's contributions to the hourly rollups, summed into one row per rollup (an
/// upsert may not touch a row twice; the first contribution's shard takes the sum), in key
/// order: concurrent batches then lock the rows they share in the same order and cannot
/// deadlock.
fn rollups(rows: impl Iterator<Item = HourlyRow>) -> Vec<HourlyRow> {
    let mut merged: BTreeMap<HourlyKey, HourlyRow> = BTreeMap::new();
    for row in rows {
        match merged.entry(row.key()) {
            std::collections::btree_map::Entry::Occupied(mut entry) => entry.get_mut().add(&row),
            std::collections::btree_map::Entry::Vacant(entry) => {
                entry.insert(row);
            }
        }
    }
    merged.into_values().collect()
}
