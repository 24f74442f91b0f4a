//! `UsageStore` on PostgreSQL or SQLite: one row per completion in `usage_records`, and
//! reports computed by the database in one statement. Local periods come from `created_at`
//! shifted by the report's UTC offset for the span the record falls in (a `CASE` over the
//! offset spans the domain computed), truncated as text (`YYYY-MM-DD HH:MM:SS`), so both
//! databases group by the same keys without time-zone support of their own. The statement
//! groups once (a CTE), then answers the totals, the number of groups and one page of
//! groups after the cursor key, in byte order of the keys. On PostgreSQL, records written on
//! their own go through the store's group commit (`group_commit`, `UsageWriters`).

use std::{collections::BTreeMap, sync::Arc};

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Timelike, Utc};
use diesel::{
    backend::Backend,
    pg::Pg,
    prelude::*,
    query_builder::{AstPass, BoxedSqlQuery, QueryFragment, SqlQuery},
    serialize::ToSql,
    sql_types::{BigInt, Bool, HasSqlType, Nullable, SmallInt, Text, Timestamp},
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use tessera_kernel::DomainError;
use tessera_usage::{
    Aggregate, GroupKey, GroupQuery, Period, UsageGroup, UsageRecord, UsageStore, UsageTotals,
};

use crate::{
    Backend as DatabaseBackend, Database,
    batch::NotOnRuntime,
    database::with_transaction,
    error::{pool_error, query_error},
    group_commit::{GroupCommit, GroupCommitStats, Grouped, Writer, WriterStart, Writers},
    schema::{usage_hourly, usage_records},
    unnest::{static_query_id, unnest_statement},
};

/// `work_mem` of a report's transaction on PostgreSQL (see `aggregate`).
const REPORT_WORK_MEM: &str = "SET LOCAL work_mem = '64MB'";

/// How local periods are written as keys.
const PERIOD_FORMAT: &str = "%Y-%m-%d %H:%M:%S";

/// `UsageStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlUsageStore {
    db: Database,
    /// PostgreSQL's writers: records from many requests share a statement (absent on
    /// SQLite; a write made outside a Tokio runtime goes directly).
    commits: Option<Arc<GroupCommit<UsageWriters>>>,
}

impl SqlUsageStore {
    pub fn new(db: Database) -> Self {
        let commits = match &db {
            Database::Postgres(pool) => Some(Arc::new(GroupCommit::new(pool.clone()))),
            Database::Sqlite(_) => None,
        };
        Self { db, commits }
    }

    /// How much the group commit has batched so far (`None` when writes go directly).
    pub fn group_commit_stats(&self) -> Option<GroupCommitStats> {
        self.commits.as_ref().map(|commits| commits.stats())
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = usage_records)]
pub(crate) struct UsageRow {
    id: String,
    organization_id: String,
    principal: String,
    principal_kind: String,
    chat_id: String,
    message_id: String,
    model_id: String,
    parent_model_id: String,
    provider: String,
    input_tokens: i64,
    output_tokens: i64,
    reasoning_tokens: i64,
    credits: i64,
    latency_ms: i64,
    finish_reason: String,
    created_at: NaiveDateTime,
    cached_input_tokens: i64,
    cached: bool,
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl From<&UsageRecord> for UsageRow {
    fn from(record: &UsageRecord) -> Self {
        Self {
            id: record.id.to_string(),
            organization_id: record.organization_id.as_str().to_owned(),
            principal: record.principal.clone(),
            principal_kind: record.principal_kind.as_str().to_owned(),
            chat_id: record.chat_id.clone(),
            message_id: record.message_id.clone(),
            model_id: record.model_id.clone(),
            parent_model_id: record.parent_model_id.clone(),
            provider: record.provider.clone(),
            input_tokens: signed(record.tokens.input),
            output_tokens: signed(record.tokens.output),
            reasoning_tokens: signed(record.tokens.reasoning),
            credits: signed(record.credits),
            latency_ms: signed(record.latency_ms),
            finish_reason: record.finish_reason.clone(),
            created_at: record.created_at.naive_utc(),
            cached_input_tokens: signed(record.tokens.cached_input),
            cached: record.cached,
        }
    }
}

/// A record's contribution to its UTC hour's rollup (`usage_hourly`).
#[derive(Debug, Insertable)]
#[diesel(table_name = usage_hourly)]
pub(crate) struct HourlyRow {
    organization_id: String,
    hour: NaiveDateTime,
    model_id: String,
    input_tokens: i64,
    output_tokens: i64,
    reasoning_tokens: i64,
    credits: i64,
    requests: i64,
    shard: i16,
    cached_input_tokens: i64,
    cached_requests: i64,
}

/// Rows each hour's rollup of an organization and model is spread over, so concurrent
/// completions rarely wait for one another's row lock (migration `usage_hourly_shards`).
const HOURLY_SHARDS: u64 = 32;

impl UsageRow {
    pub(crate) fn hourly(&self) -> HourlyRow {
        let at = self.created_at;
        HourlyRow {
            organization_id: self.organization_id.clone(),
            hour: at.date().and_hms_opt(at.hour(), 0, 0).unwrap_or(at),
            model_id: self.model_id.clone(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_tokens,
            credits: self.credits,
            requests: 1,
            shard: self.shard(),
            cached_input_tokens: self.cached_input_tokens,
            cached_requests: i64::from(self.cached),
        }
    }
}

/// The rollup an `HourlyRow` adds to, whatever its shard.
type HourlyKey = (String, NaiveDateTime, String);

impl HourlyRow {
    fn key(&self) -> HourlyKey {
        (
            self.organization_id.clone(),
            self.hour,
            self.model_id.clone(),
        )
    }

    /// Adds another contribution to the same rollup (into this row's shard: the shards of
    /// a rollup are summed when it is read).
    fn add(&mut self, other: &HourlyRow) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.credits = self.credits.saturating_add(other.credits);
        self.requests = self.requests.saturating_add(other.requests);
        self.cached_requests = self.cached_requests.saturating_add(other.cached_requests);
    }
}

impl UsageRow {
    /// The rollup row this record is added to: a hash of its (random) id.
    fn shard(&self) -> i16 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.id.hash(&mut hasher);
        i16::try_from(hasher.finish() % HOURLY_SHARDS).unwrap_or(0)
    }
}

unnest_statement! {
    /// Usage records, as one statement however many (group commit).
    struct InsertUsage<'a> for |row: &UsageRow| {
        id: Text as String = &row.id,
        organization_id: Text as String = &row.organization_id,
        principal: Text as String = &row.principal,
        principal_kind: Text as String = &row.principal_kind,
        chat_id: Text as String = &row.chat_id,
        message_id: Text as String = &row.message_id,
        model_id: Text as String = &row.model_id,
        parent_model_id: Text as String = &row.parent_model_id,
        provider: Text as String = &row.provider,
        input_tokens: BigInt as i64 = &row.input_tokens,
        output_tokens: BigInt as i64 = &row.output_tokens,
        reasoning_tokens: BigInt as i64 = &row.reasoning_tokens,
        credits: BigInt as i64 = &row.credits,
        latency_ms: BigInt as i64 = &row.latency_ms,
        finish_reason: Text as String = &row.finish_reason,
        created_at: Timestamp as NaiveDateTime = &row.created_at,
        cached_input_tokens: BigInt as i64 = &row.cached_input_tokens,
        cached: Bool as bool = &row.cached,
    }
    insert into "usage_records" then "";
}

unnest_statement! {
    /// Additions to hourly rollups (what `hourly_upsert!` does), as one statement however
    /// many rows: each row once (an upsert may not touch a row twice).
    struct UpsertHourly<'a> for |row: &HourlyRow| {
        organization_id: Text as String = &row.organization_id,
        hour: Timestamp as NaiveDateTime = &row.hour,
        model_id: Text as String = &row.model_id,
        input_tokens: BigInt as i64 = &row.input_tokens,
        output_tokens: BigInt as i64 = &row.output_tokens,
        reasoning_tokens: BigInt as i64 = &row.reasoning_tokens,
        credits: BigInt as i64 = &row.credits,
        requests: BigInt as i64 = &row.requests,
        shard: SmallInt as i16 = &row.shard,
        cached_input_tokens: BigInt as i64 = &row.cached_input_tokens,
        cached_requests: BigInt as i64 = &row.cached_requests,
    }
    insert into "usage_hourly" then
        " ON CONFLICT (organization_id, hour, model_id, shard) DO UPDATE SET \
         input_tokens = usage_hourly.input_tokens + excluded.input_tokens, \
         output_tokens = usage_hourly.output_tokens + excluded.output_tokens, \
         reasoning_tokens = usage_hourly.reasoning_tokens + excluded.reasoning_tokens, \
         cached_input_tokens = usage_hourly.cached_input_tokens + excluded.cached_input_tokens, \
         credits = usage_hourly.credits + excluded.credits, \
         requests = usage_hourly.requests + excluded.requests, \
         cached_requests = usage_hourly.cached_requests + excluded.cached_requests";
}

/// The statement adding `$hourly` (a `HourlyRow`) to its hour's rollup row.
macro_rules! hourly_upsert {
    ($hourly:expr) => {{
        use diesel::upsert::excluded;
        use $crate::schema::usage_hourly as h;
        diesel::insert_into(h::table)
            .values($hourly)
            .on_conflict((h::organization_id, h::hour, h::model_id, h::shard))
            .do_update()
            .set((
                h::input_tokens.eq(h::input_tokens + excluded(h::input_tokens)),
                h::output_tokens.eq(h::output_tokens + excluded(h::output_tokens)),
                h::reasoning_tokens.eq(h::reasoning_tokens + excluded(h::reasoning_tokens)),
                h::cached_input_tokens
                    .eq(h::cached_input_tokens + excluded(h::cached_input_tokens)),
                h::credits.eq(h::credits + excluded(h::credits)),
                h::requests.eq(h::requests + excluded(h::requests)),
                h::cached_requests.eq(h::cached_requests + excluded(h::cached_requests)),
            ))
    }};
}
pub(crate) use hourly_upsert;

/// Inserts a usage record and adds it to its hour's rollup, on `$conn` inside a transaction
/// (`?` rolls both back).
macro_rules! insert_usage {
    ($conn:ident, $row:expr) => {{
        let row: &$crate::usage::UsageRow = $row;
        diesel::insert_into($crate::schema::usage_records::table)
            .values(row)
            .execute($conn)
            .await?;
        $crate::usage::hourly_upsert!(row.hourly())
            .execute($conn)
            .await?;
    }};
}
pub(crate) use insert_usage;

/// One record and its rollup on PostgreSQL, in a transaction of its own (how a failed
/// batch of records is retried).
async fn record_alone(conn: &mut AsyncPgConnection, row: &UsageRow) -> Result<(), DomainError> {
    use diesel_async::AsyncConnection;
    crate::error::settle(
        conn.transaction(async |conn| {
            insert_usage!(conn, row);
            Ok::<_, crate::error::Rollback<()>>(())
        })
        .await,
    )
}

/// One thread's writer of a usage store on PostgreSQL (`group_commit`): the records of
/// completions that keep no chat (stateless ones), a chat's turns carrying their own.
pub(crate) struct UsageWriters {
    usage: Writer<UsageWrite>,
}

impl Writers for UsageWriters {
    fn start(start: &WriterStart) -> Result<Self, NotOnRuntime> {
        Ok(Self {
            usage: start.writer()?,
        })
    }

    fn running(&self) -> bool {
        self.usage.running()
    }
}

/// A usage record written on its own (no chat turn carries it).
pub(crate) struct UsageWrite(UsageRow);

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

/// A batch's contributions to the hourly rollups, summed into one row per rollup (an upsert
/// may not touch a row twice; the first contribution's shard takes the sum), in key order:
/// concurrent batches then lock the rows they share in the same order and cannot deadlock.
pub(crate) fn rollups(rows: impl Iterator<Item = HourlyRow>) -> Vec<HourlyRow> {
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

/// A value bound into the report statement.
enum Bind {
    Text(String),
    BigInt(i64),
    Timestamp(NaiveDateTime),
}

/// The report statement's text for one backend and its values, in placeholder order.
struct Statement {
    backend: DatabaseBackend,
    sql: String,
    binds: Vec<Bind>,
    /// Where the report reads: `usage_records`, or the hourly rollup when it gives the
    /// same answer (see `reads_rollup`).
    source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Records,
    Hourly,
}

impl Source {
    fn table(self) -> &'static str {
        match self {
            Self::Records => "usage_records",
            Self::Hourly => "usage_hourly",
        }
    }

    fn time(self) -> &'static str {
        match self {
            Self::Records => "created_at",
            Self::Hourly => "hour",
        }
    }

    fn requests(self) -> &'static str {
        match self {
            Self::Records => "COUNT(*)",
            Self::Hourly => "CAST(SUM(requests) AS BIGINT)",
        }
    }

    /// How many of the requests were answered from the response cache.
    fn cached_requests(self) -> &'static str {
        match self {
            Self::Records => "CAST(SUM(CASE WHEN cached THEN 1 ELSE 0 END) AS BIGINT)",
            Self::Hourly => "CAST(SUM(cached_requests) AS BIGINT)",
        }
    }
}

fn whole_hour(at: &DateTime<Utc>) -> bool {
    at.timestamp().rem_euclid(3600) == 0 && at.timestamp_subsec_nanos() == 0
}

/// Whether the hourly rollup answers `query` exactly: no user or chat in it, a range of
/// whole UTC hours, and a time zone whose offsets are whole hours changing on whole hours
/// (then every record's local period is its UTC hour's).
fn reads_rollup(query: &GroupQuery) -> bool {
    let filter = &query.filter;
    !query.grouping.user
        && filter.user_id.is_none()
        && filter.chat_id.is_none()
        && whole_hour(&filter.from)
        && whole_hour(&filter.to)
        && query
            .offsets
            .iter()
            .all(|span| span.offset_seconds % 3600 == 0 && whole_hour(&span.since))
}

impl Statement {
    fn bind(&mut self, value: Bind) -> String {
        self.binds.push(value);
        match self.backend {
            DatabaseBackend::Postgres => format!("${}", self.binds.len()),
            DatabaseBackend::Sqlite => "?".to_owned(),
        }
    }

    /// `created_at` in the report's local time.
    fn local_time(&mut self, query: &GroupQuery) -> String {
        let spans = &query.offsets;
        let time = self.source.time();
        if spans.iter().all(|span| span.offset_seconds == 0) {
            return time.to_owned();
        }
        let last = spans.last().map_or(0, |span| span.offset_seconds);
        let offset = if spans.len() < 2 {
            self.bind(Bind::BigInt(last.into()))
        } else {
            let mut offset = "CASE".to_owned();
            for pair in spans.windows(2) {
                let until = self.bind(Bind::Timestamp(pair[1].since.naive_utc()));
                let seconds = self.bind(Bind::BigInt(pair[0].offset_seconds.into()));
                let time = self.source.time();
                offset.push_str(&format!(" WHEN {time} < {until} THEN {seconds}"));
            }
            let seconds = self.bind(Bind::BigInt(last.into()));
            offset.push_str(&format!(" ELSE {seconds} END"));
            offset
        };
        match self.backend {
            DatabaseBackend::Postgres => {
                format!("({time} + CAST({offset} AS DOUBLE PRECISION) * INTERVAL '1 second')")
            }
            DatabaseBackend::Sqlite => format!("datetime({time}, ({offset}) || ' seconds')"),
        }
    }

    /// The local period start (a timestamp on PostgreSQL, text on SQLite), or '' when not
    /// grouped by period: what records are grouped by.
    fn period(&mut self, query: &GroupQuery) -> String {
        let Some(period) = query.grouping.period else {
            return "''".to_owned();
        };
        let local = self.local_time(query);
        match self.backend {
            DatabaseBackend::Postgres => {
                let unit = match period {
                    Period::Hour => "hour",
                    Period::Day => "day",
                    Period::Month => "month",
                };
                format!("date_trunc('{unit}', {local})")
            }
            DatabaseBackend::Sqlite => {
                let format = match period {
                    Period::Hour => "%Y-%m-%d %H:00:00",
                    Period::Day => "%Y-%m-%d 00:00:00",
                    Period::Month => "%Y-%m-01 00:00:00",
                };
                format!("strftime('{format}', {local})")
            }
        }
    }

    /// A grouped period as the text key of the report (formatted once per group).
    fn period_key(&self, query: &GroupQuery) -> String {
        match (self.backend, query.grouping.period) {
            (DatabaseBackend::Postgres, Some(_)) => {
                self.key("to_char(period_at, 'YYYY-MM-DD HH24:MI:SS')")
            }
            _ => self.key("period_at"),
        }
    }

    /// A group key column: text compared byte by byte on both databases.
    fn key(&self, expression: &str) -> String {
        match self.backend {
            DatabaseBackend::Postgres => format!("CAST({expression} AS TEXT) COLLATE \"C\""),
            DatabaseBackend::Sqlite => format!("CAST({expression} AS TEXT)"),
        }
    }

    fn build(backend: DatabaseBackend, query: &GroupQuery) -> Self {
        let mut statement = Statement {
            backend,
            sql: String::new(),
            binds: Vec::new(),
            source: if reads_rollup(query) {
                Source::Hourly
            } else {
                Source::Records
            },
        };
        let filter = &query.filter;
        // Records are grouped by the raw expressions (no per-record formatting or collation);
        // the groups' keys become byte-ordered text afterwards.
        let period = statement.period(query);
        let model = if query.grouping.model {
            "model_id"
        } else {
            "''"
        };
        let user = if query.grouping.user {
            "principal"
        } else {
            "''"
        };
        let period_key = statement.period_key(query);
        let (model_key, user_key) = (statement.key("model_at"), statement.key("user_at"));
        let organization = statement.bind(Bind::Text(filter.organization.as_str().to_owned()));
        let from = statement.bind(Bind::Timestamp(filter.from.naive_utc()));
        let to = statement.bind(Bind::Timestamp(filter.to.naive_utc()));
        let time = statement.source.time();
        let mut conditions =
            format!("organization_id = {organization} AND {time} >= {from} AND {time} < {to}");
        for (column, value) in [
            ("model_id", &filter.model_id),
            ("principal", &filter.user_id),
            ("chat_id", &filter.chat_id),
        ] {
            if let Some(value) = value {
                let value = statement.bind(Bind::Text(value.clone()));
                conditions.push_str(&format!(" AND {column} = {value}"));
            }
        }
        let after = match &query.after {
            Some(key) => {
                let period = statement.bind(Bind::Text(
                    key.period
                        .map(|p| p.format(PERIOD_FORMAT).to_string())
                        .unwrap_or_default(),
                ));
                let model = statement.bind(Bind::Text(key.model_id.clone().unwrap_or_default()));
                let user = statement.bind(Bind::Text(key.user_id.clone().unwrap_or_default()));
                format!("WHERE (period, model_key, user_key) > ({period}, {model}, {user})")
            }
            None => String::new(),
        };
        let limit = statement.bind(Bind::BigInt(query.limit.into()));
        let sum = |column: &str| format!("CAST(SUM({column}) AS BIGINT) AS {column}");
        let total =
            |column: &str| format!("CAST(COALESCE(SUM({column}), 0) AS BIGINT) AS total_{column}");
        let columns = [
            "input_tokens",
            "output_tokens",
            "reasoning_tokens",
            "cached_input_tokens",
            "credits",
            "requests",
            "cached_requests",
        ];
        let (table, requests) = (statement.source.table(), statement.source.requests());
        let cached_requests = statement.source.cached_requests();
        statement.sql = format!(
            "WITH r AS (\
               SELECT {period} AS period_at, {model} AS model_at, {user} AS user_at, \
                 {}, {}, {}, {}, {}, {requests} AS requests, \
                 {cached_requests} AS cached_requests \
               FROM {table} WHERE {conditions} GROUP BY 1, 2, 3), \
             g AS (SELECT {period_key} AS period, {model_key} AS model_key, \
               {user_key} AS user_key, input_tokens, output_tokens, reasoning_tokens, \
               cached_input_tokens, credits, requests, cached_requests FROM r) \
             SELECT t.*, p.* FROM \
               (SELECT COUNT(*) AS group_count, {} FROM g) t \
             LEFT JOIN \
               (SELECT * FROM g {after} ORDER BY period, model_key, user_key LIMIT {limit}) p \
             ON 1 = 1 \
             ORDER BY p.period, p.model_key, p.user_key",
            sum("input_tokens"),
            sum("output_tokens"),
            sum("reasoning_tokens"),
            sum("cached_input_tokens"),
            sum("credits"),
            columns.map(total).join(", "),
        );
        statement
    }
}

/// One row of the report statement: the totals, then one group (absent when the page is
/// empty).
#[derive(QueryableByName)]
struct ReportRow {
    #[diesel(sql_type = BigInt)]
    group_count: i64,
    #[diesel(sql_type = BigInt)]
    total_input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    total_output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    total_reasoning_tokens: i64,
    #[diesel(sql_type = BigInt)]
    total_cached_input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    total_credits: i64,
    #[diesel(sql_type = BigInt)]
    total_requests: i64,
    #[diesel(sql_type = BigInt)]
    total_cached_requests: i64,
    #[diesel(sql_type = Nullable<Text>)]
    period: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    model_key: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    user_key: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    input_tokens: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    output_tokens: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    reasoning_tokens: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    cached_input_tokens: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    credits: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    requests: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    cached_requests: Option<i64>,
}

fn totals(
    input: i64,
    output: i64,
    reasoning: i64,
    cached_input: i64,
    credits: i64,
    requests: i64,
    cached_requests: i64,
) -> UsageTotals {
    UsageTotals {
        input_tokens: unsigned(input),
        output_tokens: unsigned(output),
        reasoning_tokens: unsigned(reasoning),
        cached_input_tokens: unsigned(cached_input),
        total_tokens: unsigned(input) + unsigned(output),
        credits: unsigned(credits),
        requests: unsigned(requests),
        cached_requests: unsigned(cached_requests),
    }
}

impl ReportRow {
    fn group(&self, query: &GroupQuery) -> Result<Option<UsageGroup>, DomainError> {
        let (Some(period), Some(model), Some(user)) =
            (&self.period, &self.model_key, &self.user_key)
        else {
            return Ok(None);
        };
        let period = match query.grouping.period {
            Some(_) => Some(
                NaiveDateTime::parse_from_str(period, PERIOD_FORMAT).map_err(|e| {
                    DomainError::internal(format!("usage report period `{period}`: {e}"))
                })?,
            ),
            None => None,
        };
        Ok(Some(UsageGroup {
            key: GroupKey {
                period,
                model_id: query.grouping.model.then(|| model.clone()),
                user_id: query.grouping.user.then(|| user.clone()),
            },
            totals: totals(
                self.input_tokens.unwrap_or(0),
                self.output_tokens.unwrap_or(0),
                self.reasoning_tokens.unwrap_or(0),
                self.cached_input_tokens.unwrap_or(0),
                self.credits.unwrap_or(0),
                self.requests.unwrap_or(0),
                self.cached_requests.unwrap_or(0),
            ),
        }))
    }
}

fn bind_all<'f, DB>(
    mut query: BoxedSqlQuery<'f, DB, SqlQuery>,
    binds: Vec<Bind>,
) -> BoxedSqlQuery<'f, DB, SqlQuery>
where
    DB: Backend + HasSqlType<Text> + HasSqlType<BigInt> + HasSqlType<Timestamp>,
    String: ToSql<Text, DB>,
    i64: ToSql<BigInt, DB>,
    NaiveDateTime: ToSql<Timestamp, DB>,
{
    for bind in binds {
        query = match bind {
            Bind::Text(value) => query.bind::<Text, _>(value),
            Bind::BigInt(value) => query.bind::<BigInt, _>(value),
            Bind::Timestamp(value) => query.bind::<Timestamp, _>(value),
        };
    }
    query
}

#[async_trait]
impl UsageStore for SqlUsageStore {
    async fn record(&self, record: &UsageRecord) -> Result<(), DomainError> {
        let row = UsageRow::from(record);
        if let Some(writers) = self.commits.as_ref().and_then(|commits| commits.here()) {
            return writers.usage.write(UsageWrite(row)).await;
        }
        with_transaction!(&self.db, conn => {
            insert_usage!(conn, &row);
            Ok(())
        })
    }

    async fn aggregate(&self, query: &GroupQuery) -> Result<Aggregate, DomainError> {
        let Statement { sql, binds, .. } = Statement::build(self.db.backend(), query);
        let rows: Vec<ReportRow> = match &self.db {
            Database::Postgres(pool) => {
                let mut conn = pool.get().await.map_err(pool_error)?;
                // The planner expects about one group per record (it cannot see that a day
                // holds thousands); with the default 4 MB `work_mem` it then sorts on disk
                // instead of hashing the few real groups. Raised for this statement only.
                diesel_async::AsyncConnection::transaction(&mut *conn, async |conn| {
                    diesel::sql_query(REPORT_WORK_MEM).execute(conn).await?;
                    bind_all::<diesel::pg::Pg>(diesel::sql_query(sql).into_boxed(), binds)
                        .load(conn)
                        .await
                })
                .await
            }
            Database::Sqlite(pool) => {
                let mut conn = pool.get().await.map_err(pool_error)?;
                bind_all::<diesel::sqlite::Sqlite>(diesel::sql_query(sql).into_boxed(), binds)
                    .load(&mut *conn)
                    .await
            }
        }
        .map_err(crate::error::query_error)?;
        let Some(first) = <[ReportRow]>::first(&rows) else {
            return Err(DomainError::internal(
                "the usage report returned no totals row",
            ));
        };
        let totals = totals(
            first.total_input_tokens,
            first.total_output_tokens,
            first.total_reasoning_tokens,
            first.total_cached_input_tokens,
            first.total_credits,
            first.total_requests,
            first.total_cached_requests,
        );
        let groups = rows
            .iter()
            .filter_map(|row| row.group(query).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Aggregate {
            totals,
            group_count: unsigned(first.group_count),
            groups,
        })
    }
}
