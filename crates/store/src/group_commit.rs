//! Group commit of chat writes on PostgreSQL. Concurrent completions' new chats and finished
//! turns queue for two writers (a `batch::Batcher` each), which commit whatever is waiting in
//! one transaction of a few batch statements and answer each caller once that
//! transaction has committed. Under load one commit serves dozens of completions (one WAL flush and a
//! handful of round trips instead of about eight per completion); on an idle server a write
//! is a batch of one and goes at once. A batch that fails (a taken key, an unknown chat)
//! rolls back whole and each of its writes is then made in a transaction of its own, so one
//! bad write fails only its own caller. SQLite has one writer anyway and writes directly.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use diesel_async::{AsyncPgConnection, RunQueryDsl, pooled_connection::deadpool::Pool};
use futures_util::future::OptionFuture;
use tessera_kernel::DomainError;

use crate::{
    batch::{Batcher, Limits, Pending},
    chats::{ChatRow, FinishChats, InsertChats, InsertMessages, TurnRows, finish_pipelined},
    error::{Rollback, pool_error, settle},
    leases::{EndLeases, InsertLeases, LeaseRow},
    schema::{artifacts, chats, running_generations},
    usage::{HourlyKey, HourlyRow, InsertUsage, UpsertHourly},
};

/// Two batches at a time per writer (one commits while the next is sent): fewer, larger
/// batches share the database's work better than many small ones. A batch inserts at most
/// 2 000 rows (each costs up to 16 bound values of PostgreSQL's 65 535); a single write
/// with more rows than this goes alone, row by row.
const LIMITS: Limits = Limits {
    in_flight: 2,
    max_weight: 2_000,
};

/// One write the writer makes for a caller.
pub(crate) enum Write {
    /// A new chat, without messages, and the lease of its generation.
    Chat(ChatRow, Option<LeaseRow>),
    /// A finished generation: its messages, usage and artifacts, the chat's status and the
    /// end of the generation's lease.
    Turn(TurnRows),
}

impl Write {
    /// Rows the write inserts (what a batch's size is counted in).
    fn rows(&self) -> usize {
        match self {
            Write::Chat(..) => 2,
            Write::Turn(turn) => turn.messages.len() + turn.artifacts.len() + 2,
        }
    }
}

/// How much batching the writer has done (for tests and diagnostics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Transactions committed or attempted for two writes or more.
    pub batches: u64,
    /// Writes those transactions carried.
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

/// The queues to the writers of one store: new chats and finished turns batch apart, so a
/// completion's start does not wait behind a large batch of others' answers.
pub(crate) struct GroupCommit {
    chats: Batcher<Write, ()>,
    turns: Batcher<Write, ()>,
    counters: Arc<Counters>,
}

impl GroupCommit {
    /// Starts the writer on the current Tokio runtime; `None` outside of one (the store then
    /// writes directly). The writer stops when the store is dropped.
    pub(crate) fn start(pool: Pool<AsyncPgConnection>) -> Option<Self> {
        let counters = Arc::new(Counters::default());
        let writer = || {
            let pool = pool.clone();
            let counters = counters.clone();
            Batcher::start(LIMITS, Write::rows, move |batch| {
                let pool = pool.clone();
                let counters = counters.clone();
                async move { commit(&pool, batch, &counters).await }
            })
        };
        Some(Self {
            chats: writer()?,
            turns: writer()?,
            counters,
        })
    }

    /// Makes `write` in the next batch and returns once that batch has committed (or the
    /// write has failed).
    pub(crate) async fn submit(&self, write: Write) -> Result<(), DomainError> {
        match write {
            Write::Chat(..) => self.chats.call(write).await,
            Write::Turn(_) => self.turns.call(write).await,
        }
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

/// Commits one batch and answers its callers.
async fn commit(
    pool: &Pool<AsyncPgConnection>,
    batch: Vec<Pending<Write, ()>>,
    counters: &Counters,
) {
    if batch.len() == 1 {
        for pending in batch {
            let outcome = write_alone(pool, &pending.request).await;
            pending.answer(outcome);
        }
        return;
    }
    counters.batches.fetch_add(1, Ordering::Relaxed);
    counters
        .batched_writes
        .fetch_add(batch.len() as u64, Ordering::Relaxed);
    let writes: Vec<&Write> = batch.iter().map(|pending| &pending.request).collect();
    let outcome = match pool.get().await {
        Ok(mut conn) => settle(
            diesel_async::AsyncConnection::transaction(&mut *conn, async |conn| {
                write_together(conn, &writes).await
            })
            .await,
        ),
        Err(error) => Err(pool_error(error)),
    };
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
            counters.retried_batches.fetch_add(1, Ordering::Relaxed);
            for pending in batch {
                let outcome = write_alone(pool, &pending.request).await;
                pending.answer(outcome);
            }
        }
    }
}

/// One write in a transaction of its own (what a batch of one is, and how a failed batch is
/// retried).
async fn write_alone(pool: &Pool<AsyncPgConnection>, write: &Write) -> Result<(), DomainError> {
    let mut conn = pool.get().await.map_err(pool_error)?;
    match write {
        Write::Chat(row, lease) => settle(
            diesel_async::AsyncConnection::transaction(&mut *conn, async |conn| {
                let mut shared: &AsyncPgConnection = conn;
                let chat = diesel::insert_into(chats::table)
                    .values(row)
                    .execute(&mut shared);
                let lease = OptionFuture::from(lease.as_ref().map(|lease| {
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
        ),
        Write::Turn(turn) => settle(
            diesel_async::AsyncConnection::transaction(&mut *conn, async |conn| {
                finish_pipelined(conn, turn).await
            })
            .await,
        ),
    }
}

/// Every write of a batch, inside the caller's transaction, as one pipeline: the new chats
/// and their generations' leases in one insert each, every finished chat's status change in
/// one update and the end of their leases in one delete, then every message, usage record,
/// hourly rollup and artifact in one insert per table (all but the artifacts' fixed
/// statements over arrays, `unnest`). Any failure, or a turn whose chat is not there,
/// rolls the whole batch back.
async fn write_together(
    conn: &mut AsyncPgConnection,
    writes: &[&Write],
) -> Result<(), Rollback<()>> {
    let mut new_chats = Vec::new();
    let mut leases = Vec::new();
    let mut turns = Vec::new();
    for write in writes {
        match write {
            Write::Chat(row, lease) => {
                new_chats.push(row);
                leases.extend(lease);
            }
            Write::Turn(turn) => turns.push(turn),
        }
    }
    let messages = InsertMessages::new(turns.iter().flat_map(|turn| &turn.messages));
    let usage = InsertUsage::new(turns.iter().map(|turn| &turn.usage));
    let artifacts: Vec<_> = turns.iter().flat_map(|turn| &turn.artifacts).collect();
    let hourly = rollups(turns.iter().map(|turn| turn.usage.hourly()));
    let hourly = UpsertHourly::new(&hourly);
    // A chat finishes at most once per batch (a second generation on it waits for this one
    // to be stored), so the update's row count says whether every chat was found.
    let finishing = FinishChats::new(turns.iter().copied());
    let ending = EndLeases::new(turns.iter().copied());

    let mut shared: &AsyncPgConnection = conn;
    let inserted = OptionFuture::from(
        (!new_chats.is_empty()).then(|| InsertChats::new(new_chats).execute(&mut shared)),
    );
    let leased = OptionFuture::from(
        (!leases.is_empty()).then(|| InsertLeases::new(leases).execute(&mut shared)),
    );
    let finished = OptionFuture::from((!turns.is_empty()).then(|| finishing.execute(&mut shared)));
    let ended = OptionFuture::from((!turns.is_empty()).then(|| ending.execute(&mut shared)));
    let messages = OptionFuture::from((!turns.is_empty()).then(|| messages.execute(&mut shared)));
    let records = OptionFuture::from((!turns.is_empty()).then(|| usage.execute(&mut shared)));
    let rolled_up = OptionFuture::from((!turns.is_empty()).then(|| hourly.execute(&mut shared)));
    let stored = OptionFuture::from((!artifacts.is_empty()).then(|| {
        diesel::insert_into(artifacts::table)
            .values(artifacts)
            .execute(&mut shared)
    }));
    let (inserted, leased, finished, ended, messages, records, rolled_up, stored) = futures_util::join!(
        inserted, leased, finished, ended, messages, records, rolled_up, stored
    );
    if finished.transpose()?.unwrap_or(0) != turns.len() {
        return Err(Rollback::Fail(DomainError::internal(
            "a finished turn's chat is missing (retried alone)",
        )));
    }
    for result in [
        inserted, leased, ended, messages, records, rolled_up, stored,
    ]
    .into_iter()
    .flatten()
    {
        result?;
    }
    Ok(())
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
