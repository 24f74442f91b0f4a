//! The sweep of lapsed runners. It starts from `generation_runners` (a row per process
//! started lately, a handful) and reads only the lapsed runners' leases, through the leases'
//! primary key. It never reads the whole of `running_generations`: that table is small in
//! live rows but churns (an insert and a delete per completion), and a read of all of it
//! between two vacuums walked ~100 000 dead index entries, 50-200 ms of one core per sweep
//! (decision 0022).
//!
//! That needs every lease's runner to have a row. A store renews its runner's lease before
//! it begins a generation (`recover_interrupted` runs before the service serves), and a
//! migration gave the leases written before this sweep existed a lapsed runner. A runner's
//! row is forgotten only after ten leases lapsed with no generation left, so a runner stalled
//! past its lease that wakes and begins a generation still has its row. What is left (a
//! runner forgotten while it wrote a lease, or a store that never renewed) is adopted by each
//! store's first sweep: a read of the whole table, once per process.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::{dsl::exists, prelude::*, sql_types::Timestamp};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use tessera_chats::ChatStatus;
use tessera_kernel::DomainError;

use super::RunnerId;
use crate::{
    Database,
    chat_status::failed_with,
    database::{SqliteConn, with_transaction},
    error::Rollback,
    schema::{chats, generation_runners, running_generations},
};

/// How many leases a runner stays lapsed, its generations failed, before a sweep forgets it.
const LEASES_BEFORE_FORGETTING: i32 = 10;

/// Whether a store's sweeps have adopted the leases whose runner has no row; shared by the
/// store's clones (one runner).
#[derive(Debug, Clone, Default)]
pub(crate) struct Adoption(Arc<AtomicBool>);

/// Fails the generating chats of every runner but `runner` not seen since `lapsed_before`,
/// deletes their leases, and forgets the runners lapsed for ten leases; the store's first
/// sweep also takes every lease whose runner has no row for lapsed. Returns how many chats
/// failed. Concurrent sweeps are harmless: on PostgreSQL each locks the runners it sweeps and
/// skips those another sweep holds, and a chat's status changes from `generating` once.
pub(crate) async fn fail_lapsed(
    db: &Database,
    runner: &RunnerId,
    adoption: &Adoption,
    error: &str,
    lapsed_before: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Result<u64, DomainError> {
    let adopt = !AtomicBool::load(&adoption.0, Ordering::Acquire);
    let forget_before = at
        .signed_duration_since(lapsed_before)
        .checked_mul(LEASES_BEFORE_FORGETTING - 1)
        .and_then(|leases| lapsed_before.checked_sub_signed(leases))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
        .naive_utc();
    let lapsed_before = lapsed_before.naive_utc();
    let at = at.naive_utc();
    let failed = with_transaction!(db, conn => {
        if adopt {
            // Every other runner holding a lease with no row gets one that lapsed long ago.
            let runnerless = running_generations::table
                .filter(running_generations::runner_id.ne(runner.as_str()))
                .filter(diesel::dsl::not(exists(
                    generation_runners::table
                        .filter(generation_runners::id.eq(running_generations::runner_id)),
                )))
                .select((
                    running_generations::runner_id,
                    long_ago().into_sql::<Timestamp>(),
                    long_ago().into_sql::<Timestamp>(),
                ))
                .distinct();
            diesel::insert_into(generation_runners::table)
                .values(runnerless)
                .into_columns((
                    generation_runners::id,
                    generation_runners::started_at,
                    generation_runners::seen_at,
                ))
                .on_conflict_do_nothing()
                .execute(conn)
                .await?;
        }
        let lapsed = conn.lock_lapsed_runners(runner, lapsed_before).await?;
        let mut failed = 0;
        if !lapsed.is_empty() {
            let interrupted = running_generations::table
                .filter(running_generations::runner_id.eq_any(&lapsed))
                .select(running_generations::chat_id);
            failed = diesel::update(
                chats::table
                    .filter(chats::status.eq(ChatStatus::Generating.as_str()))
                    .filter(chats::id.eq_any(interrupted)),
            )
            .set(failed_with!(error, at))
            .execute(conn)
            .await?;
            diesel::delete(
                running_generations::table.filter(running_generations::runner_id.eq_any(&lapsed)),
            )
            .execute(conn)
            .await?;
            diesel::delete(
                generation_runners::table
                    .filter(generation_runners::id.eq_any(&lapsed))
                    .filter(generation_runners::seen_at.lt(forget_before)),
            )
            .execute(conn)
            .await?;
        }
        Ok::<_, Rollback<_>>(u64::try_from(failed).unwrap_or(u64::MAX))
    })?;
    if adopt {
        AtomicBool::store(&adoption.0, true, Ordering::Release);
    }
    Ok(failed)
}

/// The start of the epoch: when an adopted runner was last seen (so it has lapsed).
fn long_ago() -> NaiveDateTime {
    DateTime::<Utc>::UNIX_EPOCH.naive_utc()
}

/// Reads the other runners not seen since a time, and on PostgreSQL locks their rows until
/// the transaction ends: the one place where the backends differ.
trait LockLapsedRunners {
    fn lock_lapsed_runners(
        &mut self,
        runner: &RunnerId,
        lapsed_before: NaiveDateTime,
    ) -> impl Future<Output = QueryResult<Vec<String>>> + Send;
}

type LapsedRunners<'a> = diesel::dsl::Select<
    diesel::dsl::Filter<
        diesel::dsl::Filter<
            generation_runners::table,
            diesel::dsl::Lt<generation_runners::seen_at, NaiveDateTime>,
        >,
        diesel::dsl::NotEq<generation_runners::id, &'a str>,
    >,
    generation_runners::id,
>;

/// The other runners not seen since `lapsed_before`.
fn lapsed_runners(runner: &RunnerId, lapsed_before: NaiveDateTime) -> LapsedRunners<'_> {
    generation_runners::table
        .filter(generation_runners::seen_at.lt(lapsed_before))
        .filter(generation_runners::id.ne(runner.as_str()))
        .select(generation_runners::id)
}

impl LockLapsedRunners for AsyncPgConnection {
    /// `FOR UPDATE`: a lapsed runner's renewal waits for the sweep's end (and then finds its
    /// generations failed, as it would have after), and `SKIP LOCKED`: two replicas' sweeps
    /// at once share the lapsed runners instead of waiting for each other.
    async fn lock_lapsed_runners(
        &mut self,
        runner: &RunnerId,
        lapsed_before: NaiveDateTime,
    ) -> QueryResult<Vec<String>> {
        lapsed_runners(runner, lapsed_before)
            .for_update()
            .skip_locked()
            .load(self)
            .await
    }
}

impl LockLapsedRunners for SqliteConn {
    /// No row locks: SQLite's write transactions run one at a time (`with_transaction!`).
    async fn lock_lapsed_runners(
        &mut self,
        runner: &RunnerId,
        lapsed_before: NaiveDateTime,
    ) -> QueryResult<Vec<String>> {
        lapsed_runners(runner, lapsed_before).load(self).await
    }
}
