//! `ChatStore` on PostgreSQL or SQLite: one row per chat in `chats` (its model snapshot
//! flattened into columns) and one per message in `chat_messages`, numbered per chat.
//! Tool calls and sources are serialized JSON arrays; a message's usage is four columns set
//! together. A generation starts with one conditional `UPDATE` (of concurrent starts, one
//! changes the row) and its lease (`leases`), and finishes in one transaction (messages,
//! status and lease together, or none: a taken sequence number rolls everything back). On
//! PostgreSQL, new chats and finished turns go through the store's group commit
//! (`group_commit`), as writes of their own kinds declared here (`ChatWriters`). A turn's
//! usage record is written in the turn's transaction when the database has the usage part;
//! a database with the chats part alone hands it to another `UsageStore` first
//! (`SqlChatStore::with_usage_store`).

use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::{
    dsl,
    pg::Pg,
    prelude::*,
    query_builder::{AstPass, QueryFragment},
    sql_types::{BigInt, Integer, Nullable, Text, Timestamp},
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures_util::future::OptionFuture;
use tessera_chats::{
    Attachment, Chat, ChatFilter, ChatId, ChatStatus, ChatStore, FinishedTurn, GenerationLeases,
    Message, MessageUsage, ModelSnapshot, Source,
};
use tessera_kernel::{DomainError, OrganizationId, PageRequest};
use tessera_models::{FinishReason, Role, ToolCall, Usage};
use tessera_usage::{UsageRecord, UsageStore};

use crate::time::utc;
use crate::{
    Database,
    artifacts::ArtifactRow,
    batch::NotOnRuntime,
    chat_status::{failed_with, finished_at},
    database::{with_connection, with_transaction},
    error::{Rollback, pool_error, query_error, settle},
    group_commit::{GroupCommit, GroupCommitStats, Grouped, Writer, WriterStart, Writers},
    leases::{self, BeginGenerations, EndLeases, InsertLeases, LeaseRow, RunnerId, lease_of},
    schema::{artifacts, chat_messages, chats, running_generations},
    unnest::{static_query_id, unnest_statement},
    usage::{InsertUsage, UpsertHourly, UsageRow, rollups},
};

/// `ChatStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlChatStore {
    db: Database,
    /// PostgreSQL's writers of new chats and finished turns (absent on SQLite; a write made
    /// outside a Tokio runtime goes directly).
    commits: Option<Arc<GroupCommit<ChatWriters>>>,
    /// The runner the generations this store starts are leased to: one per store, so each
    /// process (replica) is its own.
    runner: RunnerId,
    /// Whether this runner's sweeps have adopted the leases of runners with no row.
    adoption: leases::Adoption,
    usage: UsageRecording,
}

/// Where the usage records of finished and failed turns go.
#[derive(Clone)]
enum UsageRecording {
    /// Into the usage part's tables, in the turn's own transaction.
    WithTheTurn,
    /// To another store, before the turn is written: the tokens were spent whether or not
    /// the turn is then stored, and a record already there for the answer (a retry, or the
    /// failure written after a turn that could not be) counts as recorded.
    Before(Arc<dyn UsageStore>),
}

impl UsageRecording {
    fn with_the_turn(&self) -> bool {
        matches!(self, UsageRecording::WithTheTurn)
    }

    /// Records `usage` now unless it goes with the turn.
    async fn before_the_turn(&self, usage: Option<&UsageRecord>) -> Result<(), DomainError> {
        let (UsageRecording::Before(store), Some(usage)) = (self, usage) else {
            return Ok(());
        };
        match store.record(usage).await {
            Err(DomainError::Conflict {
                code: "already_exists",
                ..
            })
            | Ok(()) => Ok(()),
            Err(other) => Err(other),
        }
    }
}

impl SqlChatStore {
    /// The store, a new runner, over a database with the chats and usage parts (usage
    /// records are written with their turns); on PostgreSQL each thread's group-commit
    /// writers start on its Tokio runtime when it first writes, and stop when the last clone
    /// of the store is dropped.
    pub fn new(db: Database) -> Self {
        Self::recording_usage(db, UsageRecording::WithTheTurn)
    }

    /// The store over a database with the chats part alone ([`crate::Part::Chats`]): each
    /// turn's usage record goes to `usage` just before the turn is written. Finished turns
    /// then take a transaction each rather than PostgreSQL's group commit, whose one
    /// statement writes the usage tables.
    pub fn with_usage_store(db: Database, usage: Arc<dyn UsageStore>) -> Self {
        Self::recording_usage(db, UsageRecording::Before(usage))
    }

    fn recording_usage(db: Database, usage: UsageRecording) -> Self {
        let commits = match &db {
            Database::Postgres(pool) => Some(Arc::new(GroupCommit::new(pool.clone()))),
            Database::Sqlite(_) => None,
        };
        Self {
            db,
            commits,
            runner: RunnerId::generate(),
            adoption: leases::Adoption::default(),
            usage,
        }
    }

    /// How much the group commit has batched so far (`None` when writes go directly).
    pub fn group_commit_stats(&self) -> Option<GroupCommitStats> {
        self.commits.as_ref().map(|commits| commits.stats())
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = chats, treat_none_as_default_value = false)]
pub(crate) struct ChatRow {
    id: String,
    organization_id: String,
    owner: String,
    model_id: String,
    base_model_id: String,
    system_prompt: Option<String>,
    system_prompt_id: Option<String>,
    title: Option<String>,
    status: Option<String>,
    error: Option<String>,
    deleted_at: Option<NaiveDateTime>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = chat_messages, treat_none_as_default_value = false)]
pub(crate) struct MessageRow {
    id: String,
    chat_id: String,
    organization_id: String,
    sequence: i32,
    role: String,
    content: String,
    reasoning: Option<String>,
    tool_calls: String,
    tool_call_id: Option<String>,
    sources: String,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    reasoning_tokens: Option<i64>,
    finish_reason: Option<String>,
    created_at: NaiveDateTime,
    attachments: String,
    /// JSON of the answer's `Route`, for routed models.
    route: Option<String>,
    /// 0 without usage.
    cached_input_tokens: i64,
    /// JSON of what the completion's guardrails did, when a policy applied.
    guardrails: Option<String>,
}

unnest_statement! {
    /// New chats, as one statement however many (group commit).
    struct InsertChats<'a> for |row: &ChatRow| {
        id: Text as String = &row.id,
        organization_id: Text as String = &row.organization_id,
        owner: Text as String = &row.owner,
        model_id: Text as String = &row.model_id,
        base_model_id: Text as String = &row.base_model_id,
        system_prompt: Nullable<Text> as Option<String> = &row.system_prompt,
        system_prompt_id: Nullable<Text> as Option<String> = &row.system_prompt_id,
        title: Nullable<Text> as Option<String> = &row.title,
        status: Nullable<Text> as Option<String> = &row.status,
        error: Nullable<Text> as Option<String> = &row.error,
        deleted_at: Nullable<Timestamp> as Option<NaiveDateTime> = &row.deleted_at,
        created_at: Timestamp as NaiveDateTime = &row.created_at,
        updated_at: Timestamp as NaiveDateTime = &row.updated_at,
    }
    insert into "chats" then "";
}

unnest_statement! {
    /// Messages, as one statement however many (group commit).
    struct InsertMessages<'a> for |row: &MessageRow| {
        id: Text as String = &row.id,
        chat_id: Text as String = &row.chat_id,
        organization_id: Text as String = &row.organization_id,
        sequence: Integer as i32 = &row.sequence,
        role: Text as String = &row.role,
        content: Text as String = &row.content,
        reasoning: Nullable<Text> as Option<String> = &row.reasoning,
        tool_calls: Text as String = &row.tool_calls,
        tool_call_id: Nullable<Text> as Option<String> = &row.tool_call_id,
        sources: Text as String = &row.sources,
        input_tokens: Nullable<BigInt> as Option<i64> = &row.input_tokens,
        output_tokens: Nullable<BigInt> as Option<i64> = &row.output_tokens,
        reasoning_tokens: Nullable<BigInt> as Option<i64> = &row.reasoning_tokens,
        finish_reason: Nullable<Text> as Option<String> = &row.finish_reason,
        created_at: Timestamp as NaiveDateTime = &row.created_at,
        attachments: Text as String = &row.attachments,
        route: Nullable<Text> as Option<String> = &row.route,
        cached_input_tokens: BigInt as i64 = &row.cached_input_tokens,
        guardrails: Nullable<Text> as Option<String> = &row.guardrails,
    }
    insert into "chat_messages" then "";
}

unnest_statement! {
    /// The status change of finished generations (what `finished_at!` sets for one chat),
    /// as one statement however many chats finish. Its row count is how many of them exist.
    struct FinishChats<'a> for |turn: &TurnRows| {
        organization_id: Text as str = turn.organization.as_str(),
        id: Text as str = turn.chat.as_str(),
        at: Timestamp as NaiveDateTime = &turn.at,
    }
    sql (
        "UPDATE chats SET status = NULL, error = NULL, updated_at = finished.at FROM unnest(",
        ") AS finished(organization_id, id, at) \
         WHERE chats.organization_id = finished.organization_id AND chats.id = finished.id"
    );
}

/// Builds the error for a row that does not read back as a domain value.
fn corrupt(table: &str, id: &str, what: impl std::fmt::Display) -> DomainError {
    DomainError::internal(format!("{table} row {id}: {what}"))
}

impl From<&Chat> for ChatRow {
    fn from(chat: &Chat) -> Self {
        Self {
            id: chat.id.to_string(),
            organization_id: chat.organization_id.as_str().to_owned(),
            owner: chat.owner.clone(),
            model_id: chat.model.model_id.clone(),
            base_model_id: chat.model.base_model_id.clone(),
            system_prompt: chat.model.system_prompt.clone(),
            system_prompt_id: chat
                .model
                .system_prompt_id
                .as_ref()
                .map(|id| id.to_string()),
            title: chat.title.clone(),
            status: chat.status.map(|status| status.as_str().to_owned()),
            error: chat.error.clone(),
            deleted_at: chat.deleted_at.map(|at| at.naive_utc()),
            created_at: chat.created_at.naive_utc(),
            updated_at: chat.updated_at.naive_utc(),
        }
    }
}

impl TryFrom<ChatRow> for Chat {
    type Error = DomainError;

    fn try_from(row: ChatRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| corrupt("chats", &row.id, what);
        let status = row
            .status
            .as_deref()
            .map(|text| ChatStatus::parse(text).ok_or_else(|| corrupt(format!("status {text}"))))
            .transpose()?;
        Ok(Chat {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            organization_id: row
                .organization_id
                .parse()
                .map_err(|e| corrupt(format!("organization_id: {e}")))?,
            model: ModelSnapshot {
                system_prompt_id: row
                    .system_prompt_id
                    .as_deref()
                    .map(str::parse)
                    .transpose()
                    .map_err(|e| corrupt(format!("system_prompt_id: {e}")))?,
                model_id: row.model_id,
                base_model_id: row.base_model_id,
                system_prompt: row.system_prompt,
            },
            owner: row.owner,
            title: row.title,
            status,
            error: row.error,
            deleted_at: row.deleted_at.map(utc),
            created_at: utc(row.created_at),
            updated_at: utc(row.updated_at),
        })
    }
}

impl MessageRow {
    /// The row of a message appended to chat `chat` of `organization`.
    fn new(
        organization: &OrganizationId,
        chat: &ChatId,
        message: &Message,
    ) -> Result<Self, DomainError> {
        let refused =
            |what: String| DomainError::internal(format!("message {}: {what}", message.id));
        if &message.chat_id != chat {
            return Err(refused(format!(
                "belongs to chat {}, not {chat}",
                message.chat_id
            )));
        }
        let sequence = i32::try_from(message.sequence).map_err(|_| {
            refused(format!(
                "sequence {} exceeds the column's range",
                message.sequence
            ))
        })?;
        // serde_json writes a non-finite number as `null`, which would not read back.
        if let Some(source) = message.sources.iter().find(|s| !s.score.is_finite()) {
            return Err(refused(format!(
                "source {} has the score {}",
                source.id, source.score
            )));
        }
        let tool_calls = serde_json::to_string(&message.tool_calls)
            .map_err(|e| refused(format!("tool calls: {e}")))?;
        let sources = serde_json::to_string(&message.sources)
            .map_err(|e| refused(format!("sources: {e}")))?;
        let attachments = serde_json::to_string(&message.attachments)
            .map_err(|e| refused(format!("attachments: {e}")))?;
        let usage = message.usage.as_ref();
        let route = usage
            .and_then(|u| u.route.as_ref())
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| refused(format!("route: {e}")))?;
        let guardrails = usage
            .map(|u| &u.guardrails)
            .filter(|record| !record.is_empty())
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| refused(format!("guardrails: {e}")))?;
        Ok(Self {
            id: message.id.to_string(),
            chat_id: chat.to_string(),
            organization_id: organization.as_str().to_owned(),
            sequence,
            role: message.role.as_str().to_owned(),
            content: message.content.clone(),
            reasoning: message.reasoning.clone(),
            tool_calls,
            tool_call_id: message.tool_call_id.clone(),
            sources,
            input_tokens: usage.map(|u| i64::from(u.usage.input_tokens)),
            output_tokens: usage.map(|u| i64::from(u.usage.output_tokens)),
            reasoning_tokens: usage.map(|u| i64::from(u.usage.reasoning_tokens)),
            finish_reason: usage.map(|u| u.finish_reason.as_str().to_owned()),
            created_at: message.created_at.naive_utc(),
            attachments,
            route,
            cached_input_tokens: usage.map_or(0, |u| i64::from(u.usage.cached_input_tokens)),
            guardrails,
        })
    }
}

impl TryFrom<MessageRow> for Message {
    type Error = DomainError;

    fn try_from(row: MessageRow) -> Result<Self, Self::Error> {
        let corrupt = |what: String| corrupt("chat_messages", &row.id, what);
        let tokens = |column: &str, value: i64| {
            u32::try_from(value).map_err(|e| corrupt(format!("{column} {value}: {e}")))
        };
        let usage = match (
            row.input_tokens,
            row.output_tokens,
            row.reasoning_tokens,
            row.finish_reason,
        ) {
            (Some(input), Some(output), Some(reasoning), Some(reason)) => Some(MessageUsage {
                usage: Usage {
                    input_tokens: tokens("input_tokens", input)?,
                    output_tokens: tokens("output_tokens", output)?,
                    reasoning_tokens: tokens("reasoning_tokens", reasoning)?,
                    cached_input_tokens: tokens("cached_input_tokens", row.cached_input_tokens)?,
                },
                finish_reason: FinishReason::parse(reason),
                route: row
                    .route
                    .as_deref()
                    .map(serde_json::from_str)
                    .transpose()
                    .map_err(|e| corrupt(format!("route: {e}")))?,
                guardrails: (row.guardrails.as_deref())
                    .map(serde_json::from_str)
                    .transpose()
                    .map_err(|e| corrupt(format!("guardrails: {e}")))?
                    .unwrap_or_default(),
            }),
            (None, None, None, None) => None,
            _ => return Err(corrupt("part of a usage".to_owned())),
        };
        let tool_calls: Vec<ToolCall> = serde_json::from_str(&row.tool_calls)
            .map_err(|e| corrupt(format!("tool_calls: {e}")))?;
        let sources: Vec<Source> =
            serde_json::from_str(&row.sources).map_err(|e| corrupt(format!("sources: {e}")))?;
        let attachments: Vec<Attachment> = serde_json::from_str(&row.attachments)
            .map_err(|e| corrupt(format!("attachments: {e}")))?;
        Ok(Message {
            id: row.id.parse().map_err(|e| corrupt(format!("{e}")))?,
            chat_id: row
                .chat_id
                .parse()
                .map_err(|e| corrupt(format!("chat_id: {e}")))?,
            sequence: u32::try_from(row.sequence)
                .map_err(|e| corrupt(format!("sequence {}: {e}", row.sequence)))?,
            role: Role::parse(&row.role).ok_or_else(|| corrupt(format!("role {}", row.role)))?,
            content: row.content,
            reasoning: row.reasoning,
            tool_calls,
            tool_call_id: row.tool_call_id,
            sources,
            attachments,
            usage,
            created_at: utc(row.created_at),
        })
    }
}

pub(crate) type OneChat<'a> = dsl::Filter<
    dsl::Filter<chats::table, dsl::Eq<chats::organization_id, &'a str>>,
    dsl::Eq<chats::id, &'a str>,
>;

/// What a finished generation writes, as rows.
pub(crate) struct TurnRows {
    pub(crate) organization: OrganizationId,
    pub(crate) chat: ChatId,
    /// Whose lease on the generation ends.
    pub(crate) runner: RunnerId,
    pub(crate) at: NaiveDateTime,
    pub(crate) messages: Vec<MessageRow>,
    pub(crate) usage: UsageRow,
    pub(crate) artifacts: Vec<ArtifactRow>,
}

impl TurnRows {
    fn new(
        organization: &OrganizationId,
        id: &ChatId,
        runner: &RunnerId,
        turn: &FinishedTurn,
        at: DateTime<Utc>,
    ) -> Result<Self, DomainError> {
        let messages = (turn.messages.iter())
            .map(|message| MessageRow::new(organization, id, message))
            .collect::<Result<Vec<_>, _>>()?;
        if turn.artifacts.iter().any(|a| &a.chat_id != id) {
            return Err(DomainError::Conflict {
                code: "already_exists",
                message: format!("an artifact of another chat cannot be stored with chat {id}"),
            });
        }
        Ok(Self {
            organization: organization.clone(),
            chat: id.clone(),
            runner: runner.clone(),
            at: at.naive_utc(),
            messages,
            usage: UsageRow::from(&turn.usage),
            artifacts: turn.artifacts.iter().map(ArtifactRow::from).collect(),
        })
    }
}

/// Writes a finished turn on PostgreSQL inside the caller's transaction, as one pipeline:
/// the chat's update and every insert are sent together and the server runs them in order,
/// so the transaction costs three round trips (`BEGIN`, the statements, `COMMIT`) instead of
/// one per statement. No changed chat, or any failed statement (a taken sequence number,
/// say), rolls the whole transaction back.
async fn finish_pipelined(
    conn: &mut AsyncPgConnection,
    turn: &TurnRows,
) -> Result<(), Rollback<()>> {
    use futures_util::future::join_all;
    let TurnRows {
        organization,
        chat: id,
        runner,
        at,
        messages: rows,
        usage,
        artifacts,
    } = turn;
    let mut shared: &AsyncPgConnection = conn;
    let update = diesel::update(one_chat(organization, id))
        .set(finished_at!(*at))
        .execute(&mut shared);
    let lease = diesel::delete(lease_of(runner, id.as_str())).execute(&mut shared);
    // Row by row, as on SQLite: each insert is one cached prepared statement.
    let messages: Vec<_> = (rows.iter())
        .map(|row| {
            diesel::insert_into(chat_messages::table)
                .values(row)
                .execute(&mut shared)
        })
        .collect();
    let record = diesel::insert_into(crate::schema::usage_records::table)
        .values(usage)
        .execute(&mut shared);
    let hourly = crate::usage::hourly_upsert!(usage.hourly()).execute(&mut shared);
    let stored: Vec<_> = (artifacts.iter())
        .map(|artifact| {
            diesel::insert_into(artifacts::table)
                .values(artifact)
                .execute(&mut shared)
        })
        .collect();
    let (changed, lease, messages, record, hourly, stored) = futures_util::join!(
        update,
        lease,
        join_all(messages),
        record,
        hourly,
        join_all(stored)
    );
    // The update's outcome first: an unknown chat is `not_found`, whatever the inserts
    // that followed it in the pipeline then reported.
    if changed? == 0 {
        return Err(Rollback::Fail(DomainError::not_found("chat", id)));
    }
    for result in messages
        .into_iter()
        .chain([lease, record, hourly])
        .chain(stored)
    {
        result?;
    }
    Ok(())
}

/// One thread's writers of a chat store on PostgreSQL (`group_commit`): new chats and
/// finished turns batch apart, so a completion's start does not wait behind a large batch of
/// others' answers.
pub(crate) struct ChatWriters {
    chats: Writer<NewChat>,
    turns: Writer<TurnRows>,
}

impl Writers for ChatWriters {
    fn start(start: &WriterStart) -> Result<Self, NotOnRuntime> {
        Ok(Self {
            chats: start.writer()?,
            turns: start.writer()?,
        })
    }

    fn running(&self) -> bool {
        self.chats.running() && self.turns.running()
    }
}

/// A new chat, without messages, and the lease of its generation.
pub(crate) struct NewChat {
    chat: ChatRow,
    lease: Option<LeaseRow>,
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
            leases: EndLeases::new(turns.iter().map(|turn| (&turn.runner, turn.chat.as_str())))
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

/// The chat `id` if it is the organization's.
pub(crate) fn one_chat<'a>(organization: &'a OrganizationId, id: &'a ChatId) -> OneChat<'a> {
    chats::table
        .filter(chats::organization_id.eq(organization.as_str()))
        .filter(chats::id.eq(id.as_str()))
}

/// The chats `$filter` (a `&ChatFilter`) shows, as a boxed query.
macro_rules! shown_by {
    ($filter:expr) => {{
        let filter: &ChatFilter = $filter;
        let mut query = chats::table
            .filter(chats::organization_id.eq(filter.organization.as_str()))
            .into_boxed();
        if let Some(owner) = &filter.owner {
            query = query.filter(chats::owner.eq(owner.as_str()));
        }
        if !filter.include_deleted {
            query = query.filter(chats::deleted_at.is_null());
        }
        query
    }};
}

#[async_trait]
impl ChatStore for SqlChatStore {
    async fn insert(&self, chat: &Chat) -> Result<(), DomainError> {
        let row = ChatRow::from(chat);
        let lease = (chat.status == Some(ChatStatus::Generating))
            .then(|| LeaseRow::new(&self.runner, &row.organization_id, &row.id, row.updated_at));
        if let Some(writers) = self.commits.as_ref().and_then(|commits| commits.here()) {
            return writers.chats.write(NewChat { chat: row, lease }).await;
        }
        with_transaction!(&self.db, conn => {
            diesel::insert_into(chats::table).values(&row).execute(conn).await?;
            if let Some(lease) = &lease {
                diesel::insert_into(running_generations::table)
                    .values(lease)
                    .execute(conn)
                    .await?;
            }
            Ok(())
        })
    }

    async fn get(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<Option<Chat>, DomainError> {
        let row: Option<ChatRow> = with_connection!(&self.db, conn => {
            one_chat(organization, id)
                .select(ChatRow::as_select())
                .first(conn)
                .await
                .optional()
                .map_err(query_error)?
        });
        row.map(Chat::try_from).transpose()
    }

    async fn messages(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<Vec<Message>, DomainError> {
        // A message's organization is its chat's (the composite foreign key sees to it).
        let rows: Vec<MessageRow> = with_connection!(&self.db, conn => {
            chat_messages::table
                .filter(chat_messages::chat_id.eq(id.as_str()))
                .filter(chat_messages::organization_id.eq(organization.as_str()))
                .order(chat_messages::sequence.asc())
                .select(MessageRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Message::try_from).collect()
    }

    async fn list(
        &self,
        filter: &ChatFilter,
        page: &PageRequest<ChatId>,
    ) -> Result<Vec<Chat>, DomainError> {
        let rows: Vec<ChatRow> = with_connection!(&self.db, conn => {
            let mut query = shown_by!(filter);
            if let Some(after) = &page.after {
                query = query.filter(chats::id.lt(after.as_str()));
            }
            query
                .order(chats::id.desc())
                .limit(page.limit.overfetch())
                .select(ChatRow::as_select())
                .load(conn)
                .await
                .map_err(query_error)?
        });
        rows.into_iter().map(Chat::try_from).collect()
    }

    async fn count(&self, filter: &ChatFilter) -> Result<u64, DomainError> {
        let count: i64 = with_connection!(&self.db, conn => {
            shown_by!(filter).count().get_result(conn).await.map_err(query_error)?
        });
        Ok(u64::try_from(count).unwrap_or_default())
    }

    async fn begin_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        at: DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        let generating = ChatStatus::Generating.as_str();
        let at = at.naive_utc();
        let lease = LeaseRow::new(&self.runner, organization.as_str(), id.as_str(), at);
        // One conditional update: on PostgreSQL a concurrent start waits for the row lock and
        // then re-checks the condition against the committed row; SQLite has a single writer.
        if let Database::Postgres(pool) = &self.db {
            let mut conn = pool.get().await.map_err(pool_error)?;
            let began = BeginGenerations::new([&lease])
                .execute(&mut *conn)
                .await
                .map_err(query_error)?;
            return Ok(began > 0);
        }
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(
                one_chat(organization, id)
                    .filter(chats::deleted_at.is_null())
                    .filter(chats::status.is_null().or(chats::status.ne(generating))),
            )
            .set((
                chats::status.eq(generating),
                chats::error.eq(None::<String>),
                chats::updated_at.eq(at),
            ))
            .execute(conn)
            .await?;
            if changed == 0 {
                return Ok(false);
            }
            diesel::insert_into(running_generations::table)
                .values(&lease)
                .execute(conn)
                .await?;
            Ok(true)
        })
    }

    async fn finish_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        turn: &FinishedTurn,
        at: DateTime<Utc>,
    ) -> Result<(), DomainError> {
        let failure = turn.error.as_deref();
        let rows = TurnRows::new(organization, id, &self.runner, turn, at)?;
        self.usage.before_the_turn(Some(&turn.usage)).await?;
        let with_usage = self.usage.with_the_turn();
        let turn = rows;
        // A failed turn is rare: it takes its own transaction rather than the group commit's
        // batched status update.
        if let Some(writers) = self.commits.as_ref().and_then(|commits| commits.here())
            && failure.is_none()
            && with_usage
        {
            return writers.turns.write(turn).await;
        }
        let TurnRows {
            at,
            messages: rows,
            usage,
            artifacts,
            ..
        } = &turn;
        with_transaction!(&self.db, conn => {
            let changed = match failure {
                None => diesel::update(one_chat(organization, id))
                    .set(finished_at!(*at))
                    .execute(conn)
                    .await?,
                Some(error) => diesel::update(one_chat(organization, id))
                    .set(failed_with!(error, *at))
                    .execute(conn)
                    .await?,
            };
            if changed == 0 {
                return Err(Rollback::Fail(DomainError::not_found("chat", id)));
            }
            diesel::delete(lease_of(&self.runner, id.as_str())).execute(conn).await?;
            // A taken sequence number (or message id) fails here and rolls back the update.
            // One statement per row: diesel-async's SQLite connection has no batch insert.
            for row in rows {
                diesel::insert_into(chat_messages::table)
                    .values(row)
                    .execute(conn)
                    .await?;
            }
            if with_usage {
                crate::usage::insert_usage!(conn, usage);
            }
            for artifact in artifacts {
                diesel::insert_into(artifacts::table)
                    .values(artifact)
                    .execute(conn)
                    .await?;
            }
            Ok(())
        })
    }

    async fn fail_generation(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
        error: &str,
        usage: Option<UsageRecord>,
        at: DateTime<Utc>,
    ) -> Result<(), DomainError> {
        let at = at.naive_utc();
        self.usage.before_the_turn(usage.as_ref()).await?;
        let usage = (usage.as_ref())
            .filter(|_| self.usage.with_the_turn())
            .map(UsageRow::from);
        with_transaction!(&self.db, conn => {
            let changed = diesel::update(one_chat(organization, id))
                .set(failed_with!(error, at))
                .execute(conn)
                .await?;
            if changed == 0 {
                return Err(Rollback::Fail(DomainError::not_found("chat", id)));
            }
            diesel::delete(lease_of(&self.runner, id.as_str())).execute(conn).await?;
            if let Some(usage) = &usage {
                crate::usage::insert_usage!(conn, usage);
            }
            Ok(())
        })
    }

    async fn artifact_versions(
        &self,
        organization: &OrganizationId,
        id: &ChatId,
    ) -> Result<HashMap<String, u32>, DomainError> {
        let rows: Vec<(String, Option<i32>)> = with_connection!(&self.db, conn => {
            artifacts::table
                .filter(artifacts::organization_id.eq(organization.as_str()))
                .filter(artifacts::chat_id.eq(id.as_str()))
                .group_by(artifacts::identifier)
                .select((artifacts::identifier, dsl::max(artifacts::version)))
                .load(conn)
                .await
                .map_err(query_error)?
        });
        Ok(rows
            .into_iter()
            .map(|(identifier, version)| {
                (
                    identifier,
                    version.and_then(|v| u32::try_from(v).ok()).unwrap_or(0),
                )
            })
            .collect())
    }

    async fn update(&self, chat: &Chat) -> Result<bool, DomainError> {
        let row = ChatRow::from(chat);
        let changed: usize = with_connection!(&self.db, conn => {
            diesel::update(one_chat(&chat.organization_id, &chat.id))
                .set((
                    chats::title.eq(&row.title),
                    chats::deleted_at.eq(row.deleted_at),
                    chats::updated_at.eq(row.updated_at),
                ))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(changed > 0)
    }
}

#[async_trait]
impl GenerationLeases for SqlChatStore {
    async fn keep_alive(&self, at: DateTime<Utc>) -> Result<(), DomainError> {
        leases::keep_alive(&self.db, &self.runner, at).await
    }

    async fn fail_interrupted(
        &self,
        error: &str,
        lapsed_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<u64, DomainError> {
        leases::fail_lapsed(
            &self.db,
            &self.runner,
            &self.adoption,
            error,
            lapsed_before,
            at,
        )
        .await
    }

    async fn retire(&self) -> Result<bool, DomainError> {
        leases::retire(&self.db, &self.runner).await
    }
}
