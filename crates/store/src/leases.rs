//! Generation leases: which runner (the process a `SqlChatStore` belongs to, by a random id
//! taken when the store is made) runs each generation, in `running_generations`, and when
//! each runner last renewed its lease, in `generation_runners`. A generation's lease row is
//! written and deleted in the transactions that set and clear the chat's `generating`
//! status, so recovery finds the generations of a stopped runner through that small table's
//! primary key, and no index of `chats` names `status` (a generation's end is then a HOT
//! update on PostgreSQL).

use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::{prelude::*, sql_types::Text, upsert::excluded};
use diesel_async::RunQueryDsl;
use tessera_kernel::DomainError;

use crate::{
    Database,
    database::{with_connection, with_transaction},
    error::query_error,
    schema::{generation_runners, running_generations},
    unnest::{static_query_id, unnest_statement},
};

mod sweep;

pub(crate) use sweep::{Adoption, fail_lapsed};

tessera_kernel::entity_id!(
    /// A process running generations (one per `SqlChatStore`), e.g.
    /// `run_0190f5c1a3e27c3d9b1e4a0c5d6e7f80`.
    RunnerId,
    "run"
);

/// A generation that is running: its chat and its runner.
#[derive(Debug, Insertable)]
#[diesel(table_name = running_generations)]
pub(crate) struct LeaseRow {
    runner_id: String,
    chat_id: String,
    organization_id: String,
    started_at: NaiveDateTime,
}

impl LeaseRow {
    pub(crate) fn new(
        runner: &RunnerId,
        organization: &str,
        chat: &str,
        started_at: NaiveDateTime,
    ) -> Self {
        Self {
            runner_id: runner.as_str().to_owned(),
            chat_id: chat.to_owned(),
            organization_id: organization.to_owned(),
            started_at,
        }
    }
}

unnest_statement! {
    /// The leases of new generating chats, as one statement however many (group commit).
    struct InsertLeases<'a> for |row: &LeaseRow| {
        runner_id: Text as String = &row.runner_id,
        chat_id: Text as String = &row.chat_id,
        organization_id: Text as String = &row.organization_id,
        started_at: diesel::sql_types::Timestamp as NaiveDateTime = &row.started_at,
    }
    insert into "running_generations" then "";
}

/// The end of one runner's finished generations' leases, as one statement however many:
/// `runner_id = $1 AND chat_id = ANY($2)`, read through the primary key, both columns in the
/// index condition (the table is small but churns: a scan would read every dead row; see
/// decision 0020 on the batch connections' generic plans).
pub(crate) struct EndLeases<'a> {
    runner: &'a str,
    chats: Vec<&'a str>,
}

impl<'a> EndLeases<'a> {
    /// The leases of `(runner, chat)` pairs; `None` when they are not all of one runner (a
    /// store's writer only batches the turns of that store's runner), or there are none.
    pub(crate) fn new(leases: impl IntoIterator<Item = (&'a RunnerId, &'a str)>) -> Option<Self> {
        let mut leases = leases.into_iter();
        let (first, chat) = leases.next()?;
        let runner = first.as_str();
        let mut chats = vec![chat];
        for (other, chat) in leases {
            if other.as_str() != runner {
                return None;
            }
            chats.push(chat);
        }
        Some(Self { runner, chats })
    }
}

static_query_id!(EndLeases);

impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for EndLeases<'_> {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> QueryResult<()> {
        out.push_sql("DELETE FROM running_generations WHERE runner_id = ");
        out.push_bind_param::<Text, _>(self.runner)?;
        out.push_sql(" AND chat_id = ANY(");
        out.push_bind_param::<diesel::sql_types::Array<Text>, _>(&self.chats)?;
        out.push_sql(")");
        Ok(())
    }
}

pub(crate) type OneLease<'a> = diesel::dsl::Filter<
    diesel::dsl::Filter<
        running_generations::table,
        diesel::dsl::Eq<running_generations::runner_id, &'a str>,
    >,
    diesel::dsl::Eq<running_generations::chat_id, &'a str>,
>;

unnest_statement! {
    /// Starts generations on PostgreSQL as one statement: the chat's conditional status
    /// change and its lease's insert (one round trip, atomic). Its row count is how many
    /// generations began: a chat that is generating, deleted or not the organization's does
    /// not change, and gets no lease.
    struct BeginGenerations<'a> for |row: &LeaseRow| {
        organization_id: Text as String = &row.organization_id,
        chat_id: Text as String = &row.chat_id,
        runner_id: Text as String = &row.runner_id,
        started_at: diesel::sql_types::Timestamp as NaiveDateTime = &row.started_at,
    }
    sql (
        "WITH began AS (UPDATE chats SET status = 'generating', error = NULL, \
         updated_at = starting.started_at FROM unnest(",
        ") AS starting(organization_id, chat_id, runner_id, started_at) \
         WHERE chats.organization_id = starting.organization_id AND chats.id = starting.chat_id \
         AND chats.deleted_at IS NULL AND (chats.status IS NULL OR chats.status <> 'generating') \
         RETURNING starting.runner_id, chats.id, chats.organization_id, starting.started_at) \
         INSERT INTO running_generations (runner_id, chat_id, organization_id, started_at) \
         SELECT * FROM began"
    );
}

/// The lease of `runner`'s generation on `chat`.
pub(crate) fn lease_of<'a>(runner: &'a RunnerId, chat: &'a str) -> OneLease<'a> {
    running_generations::table
        .filter(running_generations::runner_id.eq(runner.as_str()))
        .filter(running_generations::chat_id.eq(chat))
}

/// Forgets `runner` unless it holds a lease (see `GenerationLeases::retire`); whether it did.
pub(crate) async fn retire(db: &Database, runner: &RunnerId) -> Result<bool, DomainError> {
    let forgotten = with_connection!(db, conn => {
        diesel::delete(
            generation_runners::table
                .filter(generation_runners::id.eq(runner.as_str()))
                .filter(diesel::dsl::not(diesel::dsl::exists(
                    running_generations::table
                        .filter(running_generations::runner_id.eq(runner.as_str())),
                ))),
        )
        .execute(conn)
        .await
        .map_err(query_error)?
    });
    Ok(forgotten > 0)
}

/// Records that `runner` is alive at `at`.
pub(crate) async fn keep_alive(
    db: &Database,
    runner: &RunnerId,
    at: DateTime<Utc>,
) -> Result<(), DomainError> {
    let at = at.naive_utc();
    with_transaction!(db, conn => {
        diesel::insert_into(generation_runners::table)
            .values((
                generation_runners::id.eq(runner.as_str()),
                generation_runners::started_at.eq(at),
                generation_runners::seen_at.eq(at),
            ))
            .on_conflict(generation_runners::id)
            .do_update()
            .set(generation_runners::seen_at.eq(excluded(generation_runners::seen_at)))
            .execute(conn)
            .await?;
        Ok(())
    })
}
