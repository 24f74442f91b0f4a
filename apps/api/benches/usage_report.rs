//! Usage reports (issue 8): `GET /v1/usage` latency over 1 000 000 usage records on
//! PostgreSQL, against the cheapest query any report over the same range must at least run.
//!
//! Set-up: a throwaway PostgreSQL database on the server of `TESSERA_BENCH_POSTGRES_URL`
//! (dropped at the end), migrated by the real `Application::build` (which then serves HTTPS
//! in this process), four organizations and a `usage:read` client of the first, and
//! `RECORDS` usage records inserted with `INSERT … SELECT … FROM generate_series` (seeded
//! `random()`, so every run loads the same data): spread evenly over the 365 days ending now,
//! 80 % in the benchmarked organization and 20 % in three others, across 5 models, 50
//! principals and 20 000 chats. Then `VACUUM ANALYZE usage_records`, so index-only scans
//! work as they would on a settled production table.
//!
//! Targets, one after another, each at 1 and then `CLIENTS` concurrent clients, with
//! `WARM_UP` then `BENCH_SECONDS` (default 5) measured; every request's latency is recorded:
//!
//! 1. `baseline`: `SELECT COUNT(*), SUM(input_tokens) FROM usage_records WHERE
//!    organization_id = $1 AND created_at >= $2 AND created_at < $3` over the last full
//!    month (UTC), on plain PostgreSQL connections of this benchmark (one per client: a
//!    minimal client of the wire protocol below, extended query protocol, unnamed statement,
//!    text parameters; no pool, no ORM).
//! 2. `store`: `SqlUsageStore::aggregate` for that month grouped by day and model (UTC,
//!    one page of 100 groups), called directly (diesel-async pool, no HTTP).
//! 3. `http month day+model UTC`: `GET /v1/usage?from=…&to=…&groupBy=day&groupBy=model
//!    &limit=100` through the real application (TLS, authentication, rate limiting).
//! 4. `http month day+model Berlin`: the same with `timeZone=Europe/Berlin` (the local
//!    period goes through the offset `CASE`; that month has a DST change).
//! 5. `http year by month`: the 12 months of data grouped by month (informative).
//!
//! Nothing here asserts on timings; it prints a table and whether the goal (p99 < 50 ms for
//! a month by day and model, at `CLIENTS` concurrent clients) was met. It fails only when a
//! target answers wrongly (an error, or totals that disagree with the baseline's count).
//!
//! Run with `just bench` or `cargo bench -p tessera-api --bench usage_report`.
//! Environment: `BENCH_SECONDS`; `TESSERA_BENCH_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`: the server the throwaway database is created
//! on; the benchmark's own connections need `trust` or password authentication);
//! `TESSERA_BENCH_KEEP_DATABASE=1` keeps the database (its URL is printed) for `EXPLAIN`.

use std::{
    net::SocketAddr,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, anyhow, bail};
use chrono::{DateTime, Datelike, Days, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use tessera_api::{config::Settings, startup::Application, tls::dev_certificate_paths};
use tessera_identity::{ClientName, NewClient};
use tessera_kernel::{OrganizationId, ScopeSet};
use tessera_organizations::{NewOrganization, OrganizationName, Plan};
use tessera_store::{DatabaseUrl, SqlUsageStore};
use tessera_usage::{GroupQuery, Grouping, OffsetSpan, Period, UsageFilter, UsageStore};

/// Usage records loaded.
const RECORDS: i64 = 1_000_000;
/// Records per `INSERT … SELECT` statement.
const BATCH: i64 = 250_000;
/// Days of data, ending now.
const DAYS: u64 = 365;
/// Share of the records in the benchmarked organization (the rest in `OTHER_ORGS` others).
const SHARE: f64 = 0.8;
const OTHER_ORGS: usize = 3;
/// Model ids, their providers and credit multipliers.
const MODELS: [(&str, &str, i64); 5] = [
    ("openai/gpt-4o-mini", "openai", 3),
    ("openai/gpt-4o", "openai", 5),
    ("anthropic/claude-sonnet-4", "anthropic", 5),
    ("mistral/mistral-small", "mistral", 2),
    ("local/smollm2-135m", "local", 1),
];
/// Distinct principals (the last 10 are clients, the others users).
const PRINCIPALS: i64 = 50;
/// Distinct chats.
const CHATS: i64 = 20_000;
/// Concurrent clients of the loaded run (a run with one client comes first).
const CLIENTS: usize = 4;
const CONCURRENCY: [usize; 2] = [1, CLIENTS];
/// Unmeasured time before each measurement (connections open, caches warm).
const WARM_UP: Duration = Duration::from_secs(1);
/// Measured time per run unless `BENCH_SECONDS` says otherwise.
const DEFAULT_SECONDS: f64 = 5.0;
/// The issue's goal for a month grouped by day and model.
const GOAL_P99_MS: f64 = 50.0;
/// Groups per page (the API's maximum).
const PAGE: u32 = 100;

// ---------------------------------------------------------------------------------------
// A minimal PostgreSQL client (wire protocol 3.0, trust or cleartext password
// authentication, text formats): the baseline's plain connection, and the set-up.

mod pg {
    use anyhow::{Context, anyhow, bail};
    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt, BufReader},
        net::TcpStream,
    };

    /// One row, text format; `None` is SQL NULL.
    pub type Row = Vec<Option<String>>;

    /// The parts of a `postgres://user[:password]@host[:port]/database` URL.
    pub struct Target {
        pub user: String,
        pub password: Option<String>,
        pub host: String,
        pub port: u16,
        pub database: String,
    }

    impl Target {
        pub fn parse(url: &str) -> anyhow::Result<Self> {
            let rest = url
                .strip_prefix("postgres://")
                .or_else(|| url.strip_prefix("postgresql://"))
                .ok_or_else(|| anyhow!("not a postgres:// URL: {url}"))?;
            let rest = rest.split('?').next().unwrap_or(rest);
            let (authority, database) = rest.split_once('/').unwrap_or((rest, "postgres"));
            let (credentials, host_port) = match authority.rsplit_once('@') {
                Some((credentials, host_port)) => (Some(credentials), host_port),
                None => (None, authority),
            };
            let (user, password) = match credentials {
                Some(credentials) => match credentials.split_once(':') {
                    Some((user, password)) => (user.to_owned(), Some(password.to_owned())),
                    None => (credentials.to_owned(), None),
                },
                None => ("postgres".to_owned(), None),
            };
            let (host, port) = match host_port.rsplit_once(':') {
                Some((host, port)) => (
                    host.to_owned(),
                    port.parse().with_context(|| format!("bad port in {url}"))?,
                ),
                None => (host_port.to_owned(), 5432),
            };
            Ok(Self {
                user,
                password,
                host: if host.is_empty() {
                    "127.0.0.1".to_owned()
                } else {
                    host
                },
                port,
                database: if database.is_empty() {
                    "postgres".to_owned()
                } else {
                    database.to_owned()
                },
            })
        }
    }

    pub struct Connection {
        stream: BufReader<TcpStream>,
        out: Vec<u8>,
        body: Vec<u8>,
    }

    fn put_cstr(out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(text.as_bytes());
        out.push(0);
    }

    fn len32(len: usize) -> anyhow::Result<[u8; 4]> {
        Ok(i32::try_from(len)
            .context("message too long")?
            .to_be_bytes())
    }

    /// Appends a message: tag, length, body.
    fn message(out: &mut Vec<u8>, tag: u8, body: impl FnOnce(&mut Vec<u8>)) -> anyhow::Result<()> {
        out.push(tag);
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        body(out);
        let len = len32(out.len() - at)?;
        out[at..at + 4].copy_from_slice(&len);
        Ok(())
    }

    /// The message of an `ErrorResponse` body.
    fn error_text(body: &[u8]) -> String {
        let mut severity = "";
        let mut code = "";
        let mut text = String::new();
        for field in body.split(|b| *b == 0) {
            let Some((&kind, value)) = field.split_first() else {
                continue;
            };
            let value = std::str::from_utf8(value).unwrap_or("?");
            match kind {
                b'S' => severity = value,
                b'C' => code = value,
                b'M' => text = value.to_owned(),
                _ => {}
            }
        }
        format!("{severity} {code}: {text}")
    }

    fn data_row(body: &[u8]) -> anyhow::Result<Row> {
        let short = || anyhow!("truncated DataRow");
        let columns = u16::from_be_bytes(body.get(0..2).ok_or_else(short)?.try_into()?);
        let mut at = 2;
        let mut row = Vec::with_capacity(columns.into());
        for _ in 0..columns {
            let len = i32::from_be_bytes(body.get(at..at + 4).ok_or_else(short)?.try_into()?);
            at += 4;
            if len < 0 {
                row.push(None);
            } else {
                let len = usize::try_from(len)?;
                let value = body.get(at..at + len).ok_or_else(short)?;
                row.push(Some(String::from_utf8_lossy(value).into_owned()));
                at += len;
            }
        }
        Ok(row)
    }

    impl Connection {
        pub async fn connect(url: &str) -> anyhow::Result<Self> {
            let target = Target::parse(url)?;
            let stream = TcpStream::connect((target.host.as_str(), target.port))
                .await
                .with_context(|| format!("cannot connect to {}:{}", target.host, target.port))?;
            stream.set_nodelay(true)?;
            let mut connection = Self {
                stream: BufReader::new(stream),
                out: Vec::new(),
                body: Vec::new(),
            };
            let mut startup = vec![0; 4];
            startup.extend_from_slice(&196_608_i32.to_be_bytes());
            for (key, value) in [
                ("user", target.user.as_str()),
                ("database", target.database.as_str()),
                ("client_encoding", "UTF8"),
                ("application_name", "tessera-bench"),
            ] {
                put_cstr(&mut startup, key);
                put_cstr(&mut startup, value);
            }
            startup.push(0);
            let len = len32(startup.len())?;
            startup[0..4].copy_from_slice(&len);
            connection.stream.get_mut().write_all(&startup).await?;
            loop {
                match connection.read_message().await? {
                    b'R' => {
                        let code = i32::from_be_bytes(
                            connection
                                .body
                                .get(0..4)
                                .ok_or_else(|| anyhow!("short auth"))?
                                .try_into()?,
                        );
                        match (code, &target.password) {
                            (0, _) => {}
                            (3, Some(password)) => {
                                let mut out = Vec::new();
                                message(&mut out, b'p', |b| put_cstr(b, password))?;
                                connection.stream.get_mut().write_all(&out).await?;
                            }
                            _ => bail!(
                                "PostgreSQL asks for authentication method {code}; this benchmark's \
                                 plain connections support only trust and cleartext passwords"
                            ),
                        }
                    }
                    b'E' => bail!("connecting to {url}: {}", error_text(&connection.body)),
                    b'Z' => return Ok(connection),
                    _ => {} // ParameterStatus, BackendKeyData, notices
                }
            }
        }

        /// Reads one message into `self.body`; returns its tag.
        async fn read_message(&mut self) -> anyhow::Result<u8> {
            let mut header = [0; 5];
            self.stream.read_exact(&mut header).await?;
            let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
            let len = usize::try_from(len)?
                .checked_sub(4)
                .ok_or_else(|| anyhow!("bad message length"))?;
            self.body.resize(len, 0);
            self.stream.read_exact(&mut self.body).await?;
            Ok(header[0])
        }

        /// Sends `self.out` and collects the rows until `ReadyForQuery`.
        async fn round_trip(&mut self, sql: &str) -> anyhow::Result<Vec<Row>> {
            self.stream.get_mut().write_all(&self.out).await?;
            let mut rows = Vec::new();
            let mut error = None;
            loop {
                match self.read_message().await? {
                    b'D' => rows.push(data_row(&self.body)?),
                    b'E' => error = Some(error_text(&self.body)),
                    b'Z' => break,
                    _ => {} // ParseComplete, BindComplete, RowDescription, CommandComplete, …
                }
            }
            match error {
                Some(error) => {
                    let shown: String = sql.chars().take(120).collect();
                    bail!("{error} (in `{shown}…`)")
                }
                None => Ok(rows),
            }
        }

        /// Runs `sql` (one or more statements, no parameters): the simple query protocol.
        pub async fn execute(&mut self, sql: &str) -> anyhow::Result<Vec<Row>> {
            self.out.clear();
            message(&mut self.out, b'Q', |b| put_cstr(b, sql))?;
            self.round_trip(sql).await
        }

        /// Runs one statement with text parameters `$1…`: Parse (unnamed statement), Bind,
        /// Execute, Sync, as drivers do for a statement they do not keep prepared.
        pub async fn query(&mut self, sql: &str, params: &[&str]) -> anyhow::Result<Vec<Row>> {
            let count = i16::try_from(params.len())?;
            self.out.clear();
            message(&mut self.out, b'P', |b| {
                put_cstr(b, "");
                put_cstr(b, sql);
                b.extend_from_slice(&0_i16.to_be_bytes());
            })?;
            let mut lens = Vec::with_capacity(params.len());
            for param in params {
                lens.push(len32(param.len())?);
            }
            message(&mut self.out, b'B', |b| {
                put_cstr(b, "");
                put_cstr(b, "");
                b.extend_from_slice(&0_i16.to_be_bytes());
                b.extend_from_slice(&count.to_be_bytes());
                for (param, len) in params.iter().zip(&lens) {
                    b.extend_from_slice(len);
                    b.extend_from_slice(param.as_bytes());
                }
                b.extend_from_slice(&0_i16.to_be_bytes());
            })?;
            message(&mut self.out, b'E', |b| {
                put_cstr(b, "");
                b.extend_from_slice(&0_i32.to_be_bytes());
            })?;
            message(&mut self.out, b'S', |_| {})?;
            self.round_trip(sql).await
        }
    }
}

/// The first column of the first row, parsed.
fn scalar<T: std::str::FromStr>(rows: &[pg::Row]) -> anyhow::Result<T> {
    rows.first()
        .and_then(|row| row.first())
        .and_then(|value| value.as_deref())
        .and_then(|value| value.parse().ok())
        .ok_or_else(|| anyhow!("unexpected result: {rows:?}"))
}

// ---------------------------------------------------------------------------------------
// The throwaway database.

struct Scratch {
    server_url: String,
    name: String,
    url: String,
    keep: bool,
}

impl Scratch {
    async fn create(server_url: &str) -> anyhow::Result<Self> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
        let name = format!("tessera_bench_usage_{}_{nanos}", std::process::id());
        let without_query = server_url.split('?').next().unwrap_or(server_url);
        let Some((base, _)) = without_query
            .rsplit_once('/')
            .filter(|(base, _)| base.contains("://") && !base.ends_with('/'))
        else {
            bail!("TESSERA_BENCH_POSTGRES_URL must be postgres://…/<database>, got {server_url}");
        };
        let mut admin = pg::Connection::connect(server_url)
            .await
            .context("cannot reach PostgreSQL (set TESSERA_BENCH_POSTGRES_URL)")?;
        admin.execute(&format!("CREATE DATABASE {name}")).await?;
        Ok(Self {
            server_url: server_url.to_owned(),
            url: format!("{base}/{name}"),
            name,
            keep: std::env::var("TESSERA_BENCH_KEEP_DATABASE").is_ok_and(|v| v == "1"),
        })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("kept database {} ({})", self.name, self.url);
            return;
        }
        let (server_url, name) = (self.server_url.clone(), self.name.clone());
        // Drop may run inside the benchmark's runtime: a helper thread with its own runtime
        // can block on the DROP.
        let dropped = std::thread::spawn(move || -> anyhow::Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let mut admin = pg::Connection::connect(&server_url).await?;
                admin
                    .execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await?;
                anyhow::Ok(())
            })
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(error)) => eprintln!("could not drop database {}: {error:#}", self.name),
            Err(_) => eprintln!("could not drop database {}", self.name),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The data set.

/// A SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `INSERT … SELECT` of records `first..=last`: record `i` is created at
/// `start + (i - 1 + jitter) × span / RECORDS` (so the table is in time order, as an
/// append-only table is), in the benchmarked organization with probability `SHARE`.
fn insert_batch(
    first: i64,
    last: i64,
    start: NaiveDateTime,
    organization: &str,
    others: &[String],
) -> String {
    let step = (DAYS * 86_400) as f64 / RECORDS as f64;
    let others = others
        .iter()
        .map(|id| literal(id))
        .collect::<Vec<_>>()
        .join(", ");
    let models = MODELS
        .iter()
        .map(|(id, _, _)| literal(id))
        .collect::<Vec<_>>()
        .join(", ");
    let providers = MODELS
        .iter()
        .map(|(_, provider, _)| literal(provider))
        .collect::<Vec<_>>()
        .join(", ");
    let multipliers = MODELS
        .iter()
        .map(|(_, _, multiplier)| multiplier.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let clients_from = PRINCIPALS - 10;
    format!(
        "INSERT INTO usage_records (id, organization_id, principal, principal_kind, chat_id, \
           message_id, model_id, parent_model_id, provider, input_tokens, output_tokens, \
           reasoning_tokens, credits, latency_ms, finish_reason, created_at) \
         SELECT 'usg_' || lpad(to_hex(i), 32, '0'), \
           CASE WHEN r_org < {SHARE} THEN {organization} \
             ELSE (ARRAY[{others}])[1 + floor(r_other * {OTHER_ORGS})::int] END, \
           CASE WHEN p < {clients_from} THEN 'user-' || lpad(p::text, 4, '0') \
             ELSE 'cli_' || lpad(to_hex(p), 32, '0') END, \
           CASE WHEN p < {clients_from} THEN 'user' ELSE 'client' END, \
           'cht_' || lpad(to_hex(floor(r_chat * {CHATS})::int), 32, '0'), \
           'msg_' || lpad(to_hex(i), 32, '0'), \
           (ARRAY[{models}])[m], (ARRAY[{models}])[m], (ARRAY[{providers}])[m], \
           input, output, CASE WHEN m = 2 THEN output / 3 ELSE 0 END, \
           (input + output) * (ARRAY[{multipliers}]::bigint[])[m], \
           150 + floor(r_latency * 6000)::bigint, \
           CASE WHEN r_finish < 0.01 THEN 'error' WHEN r_finish < 0.03 THEN 'length' \
             ELSE 'stop' END, \
           TIMESTAMP {start} + (i - 1 + r_time) * {step} * INTERVAL '1 second' \
         FROM (SELECT i, random() AS r_org, random() AS r_other, \
                 floor(random() * {PRINCIPALS})::int AS p, random() AS r_chat, \
                 1 + floor(random() * {model_count})::int AS m, \
                 20 + floor(random() * 4000)::bigint AS input, \
                 5 + floor(random() * 1200)::bigint AS output, \
                 random() AS r_latency, random() AS r_finish, random() AS r_time \
               FROM generate_series({first}::bigint, {last}::bigint) AS s(i)) r",
        organization = literal(organization),
        start = literal(&start.format("%Y-%m-%d %H:%M:%S").to_string()),
        model_count = MODELS.len(),
    )
}

// ---------------------------------------------------------------------------------------
// Targets and load generation.

#[derive(Clone)]
enum Call {
    /// The baseline statement on a plain connection of its own per client.
    Sql {
        url: String,
        sql: &'static str,
        params: Vec<String>,
    },
    Store {
        store: SqlUsageStore,
        query: GroupQuery,
    },
    Http {
        client: reqwest::Client,
        url: String,
        authorization: String,
    },
}

/// One client's means of calling a target.
enum Worker {
    Sql(pg::Connection, &'static str, Vec<String>),
    Store(SqlUsageStore, GroupQuery),
    Http(reqwest::Client, String, String),
}

/// What a call found: the number of records its totals cover.
impl Call {
    async fn worker(&self) -> anyhow::Result<Worker> {
        Ok(match self {
            Call::Sql { url, sql, params } => {
                Worker::Sql(pg::Connection::connect(url).await?, sql, params.clone())
            }
            Call::Store { store, query } => Worker::Store(store.clone(), query.clone()),
            Call::Http {
                client,
                url,
                authorization,
            } => Worker::Http(client.clone(), url.clone(), authorization.clone()),
        })
    }
}

impl Worker {
    /// One call; with `check`, returns the number of records its totals cover (and the
    /// number of groups on its page).
    async fn call(&mut self, check: bool) -> anyhow::Result<Option<(u64, usize)>> {
        match self {
            Worker::Sql(connection, sql, params) => {
                let params: Vec<&str> = params.iter().map(String::as_str).collect();
                let rows = connection.query(sql, &params).await?;
                Ok(if check {
                    Some((scalar(&rows)?, 0))
                } else {
                    std::hint::black_box(rows);
                    None
                })
            }
            Worker::Store(store, query) => {
                let aggregate = store
                    .aggregate(query)
                    .await
                    .map_err(|e| anyhow!("aggregate failed: {e}"))?;
                Ok(check.then_some((aggregate.totals.requests, aggregate.groups.len())))
            }
            Worker::Http(client, url, authorization) => {
                let response = client
                    .get(url.as_str())
                    .header("authorization", authorization.as_str())
                    .send()
                    .await?;
                let status = response.status();
                let body = response.bytes().await?;
                if status != reqwest::StatusCode::OK {
                    bail!(
                        "GET {url} answered {status}: {}",
                        String::from_utf8_lossy(&body)
                    );
                }
                if !check {
                    std::hint::black_box(body);
                    return Ok(None);
                }
                let json: serde_json::Value = serde_json::from_slice(&body)?;
                let requests = json
                    .pointer("/totals/requests")
                    .and_then(serde_json::Value::as_u64)
                    .ok_or_else(|| anyhow!("no totals.requests in {json}"))?;
                let items = json["items"].as_array().map_or(0, Vec::len);
                Ok(Some((requests, items)))
            }
        }
    }
}

struct Target {
    name: &'static str,
    call: Call,
}

/// What one (target, concurrency) run did in its measured window.
struct Run {
    target: &'static str,
    concurrency: usize,
    elapsed: Duration,
    /// Sorted ascending.
    latencies: Vec<Duration>,
}

impl Run {
    fn requests_per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// Nearest-rank percentile, in milliseconds.
    fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let rank = (p / 100.0 * self.latencies.len() as f64).ceil() as usize;
        self.latencies[rank.clamp(1, self.latencies.len()) - 1].as_secs_f64() * 1e3
    }
}

/// Drives `target` with `concurrency` clients: `WARM_UP`, then `measure` recorded.
async fn drive(target: &Target, concurrency: usize, measure: Duration) -> anyhow::Result<Run> {
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        workers.push(target.call.worker().await?);
    }
    let start = Instant::now() + WARM_UP;
    let end = start + measure;
    let mut tasks = Vec::with_capacity(concurrency);
    for mut worker in workers {
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(4096);
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                worker.call(false).await?;
                if sent >= start {
                    latencies.push(sent.elapsed());
                }
            }
            anyhow::Ok((latencies, Instant::now()))
        }));
    }
    let mut latencies = Vec::new();
    let mut finished = end;
    for task in tasks {
        let (mine, done) = task.await.context("a client task stopped")??;
        latencies.extend(mine);
        finished = finished.max(done);
    }
    latencies.sort_unstable();
    Ok(Run {
        target: target.name,
        concurrency,
        elapsed: finished.saturating_duration_since(start),
        latencies,
    })
}

// ---------------------------------------------------------------------------------------
// Report.

fn measured_duration() -> anyhow::Result<Duration> {
    match std::env::var("BENCH_SECONDS") {
        Ok(text) => {
            let seconds: f64 = text.trim().parse().with_context(|| {
                format!("BENCH_SECONDS must be a number of seconds, got `{text}`")
            })?;
            if !(seconds.is_finite() && seconds > 0.0) {
                bail!("BENCH_SECONDS must be positive, got `{text}`");
            }
            Ok(Duration::from_secs_f64(seconds))
        }
        Err(_) => Ok(Duration::from_secs_f64(DEFAULT_SECONDS)),
    }
}

fn print_table(runs: &[Run], measure: Duration) {
    println!();
    println!(
        "Usage reports over {RECORDS} records: 1 then {CLIENTS} concurrent clients, {:.1} s \
         warm-up, {:.1} s measured per run; ratios against the baseline at the same concurrency",
        WARM_UP.as_secs_f64(),
        measure.as_secs_f64()
    );
    println!();
    println!(
        "| {:<30} | {:>4} | {:>8} | {:>7} | {:>8} | {:>8} | {:>11} | {:>11} |",
        "target", "conc", "requests", "req/s", "p50 ms", "p99 ms", "p50 vs base", "p99 vs base"
    );
    println!(
        "|{:-<32}|{:->6}|{:->10}|{:->9}|{:->10}|{:->10}|{:->13}|{:->13}|",
        ":", ":", ":", ":", ":", ":", ":", ":"
    );
    for concurrency in CONCURRENCY {
        let base = runs
            .iter()
            .find(|r| r.target == "baseline" && r.concurrency == concurrency);
        for run in runs.iter().filter(|r| r.concurrency == concurrency) {
            let ratio = |p: f64| {
                base.map_or(f64::NAN, |base| {
                    run.percentile_ms(p) / base.percentile_ms(p)
                })
            };
            println!(
                "| {:<30} | {:>4} | {:>8} | {:>7.1} | {:>8.2} | {:>8.2} | {:>11.2} | {:>11.2} |",
                run.target,
                run.concurrency,
                run.latencies.len(),
                run.requests_per_second(),
                run.percentile_ms(50.0),
                run.percentile_ms(99.0),
                ratio(50.0),
                ratio(99.0),
            );
        }
    }
    println!();
    let goal_runs: Vec<&Run> = runs
        .iter()
        .filter(|r| r.target.starts_with("http month") && r.concurrency == CLIENTS)
        .collect();
    let met = !goal_runs.is_empty()
        && goal_runs
            .iter()
            .all(|r| r.percentile_ms(99.0) < GOAL_P99_MS);
    let figures = goal_runs
        .iter()
        .map(|r| format!("{} p99 {:.1} ms", r.target, r.percentile_ms(99.0)))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "goal: p99 < {GOAL_P99_MS:.0} ms for a month by day and model ({CLIENTS} clients): {} \
         ({figures})",
        if met { "met" } else { "NOT met" }
    );
    println!();
}

// ---------------------------------------------------------------------------------------

/// Midnight (UTC) of the first day of the month `date` falls in, and of the month before.
fn month_before(date: NaiveDate) -> anyhow::Result<(NaiveDate, NaiveDate)> {
    let this = date
        .with_day(1)
        .ok_or_else(|| anyhow!("no first day of {date}"))?;
    let (year, month) = if this.month() == 1 {
        (this.year() - 1, 12)
    } else {
        (this.year(), this.month() - 1)
    };
    let previous =
        NaiveDate::from_ymd_opt(year, month, 1).ok_or_else(|| anyhow!("no month before {date}"))?;
    Ok((previous, this))
}

fn utc_midnight(date: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&date.and_time(chrono::NaiveTime::MIN))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let measure = measured_duration()?;
    let server_url = std::env::var("TESSERA_BENCH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let scratch = Scratch::create(&server_url).await?;
    eprintln!("database {}", scratch.name);

    // The real application on the throwaway database (it migrates it).
    let data_dir = tempfile::tempdir()?;
    let mut settings = Settings {
        data_dir: data_dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse()?,
        database_url: Some(DatabaseUrl::Postgres(scratch.url.clone())),
        log: "warn".to_owned(),
        ..Settings::default()
    };
    settings.metrics.listen = String::new();
    settings.http.shutdown_timeout_secs = 1;
    settings.rate_limit.organization_per_minute = 100_000_000;
    settings.rate_limit.principal_per_minute = 100_000_000;
    settings.rate_limit.anonymous_per_minute = 100_000_000;
    let app = Application::build(settings.clone())
        .await
        .context("Tessera does not start")?;
    let port = app.port();
    let state = app.state().clone();
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());

    let mut organizations = Vec::new();
    for index in 0..=OTHER_ORGS {
        let organization = state
            .organizations
            .create(
                NewOrganization {
                    name: OrganizationName::parse(&format!("Bench org {index}"))
                        .map_err(|e| anyhow!("{e}"))?,
                    plan: Plan::Pro,
                },
                &tessera_kernel::Actor::System,
            )
            .await
            .map_err(|e| anyhow!("cannot create an organization: {e}"))?;
        organizations.push(organization.id);
    }
    let organization: OrganizationId = organizations[0].clone();
    let others: Vec<String> = organizations[1..]
        .iter()
        .map(|id| id.as_str().to_owned())
        .collect();
    let (bench_client, secret) = state
        .identity
        .create_client(
            NewClient {
                organization_id: organization.clone(),
                name: ClientName::parse("usage bench").map_err(|e| anyhow!("{e}"))?,
                scopes: ScopeSet::parse_list("usage:read").map_err(|e| anyhow!("{e}"))?,
            },
            &tessera_kernel::Actor::System,
        )
        .await
        .map_err(|e| anyhow!("cannot create the client: {e}"))?;

    // The data: RECORDS records over the DAYS days ending now.
    let now = Utc::now();
    let start = (now - chrono::Duration::days(i64::try_from(DAYS)?)).naive_utc();
    let mut sql = pg::Connection::connect(&scratch.url).await?;
    sql.execute("SELECT setseed(0.2026)").await?;
    let loading = Instant::now();
    let mut first = 1;
    while first <= RECORDS {
        let last = (first + BATCH - 1).min(RECORDS);
        sql.execute(&insert_batch(
            first,
            last,
            start,
            organization.as_str(),
            &others,
        ))
        .await?;
        eprintln!(
            "  loaded {last} records ({:.1} s)",
            loading.elapsed().as_secs_f64()
        );
        first = last + 1;
    }
    let loaded = loading.elapsed();
    let vacuuming = Instant::now();
    // The records were inserted directly, so their hourly rollup is built the way the
    // migration backfills it (the application keeps it in each record's transaction).
    sql.execute(
        "INSERT INTO usage_hourly SELECT organization_id, date_trunc('hour', created_at), \
         model_id, SUM(input_tokens), SUM(output_tokens), SUM(reasoning_tokens), SUM(credits), \
         COUNT(*) FROM usage_records GROUP BY 1, 2, 3",
    )
    .await?;
    sql.execute("VACUUM ANALYZE usage_records").await?;
    sql.execute("VACUUM ANALYZE usage_hourly").await?;
    let vacuumed = vacuuming.elapsed();
    let info = sql
        .query(
            "SELECT pg_size_pretty(pg_table_size('usage_records')), \
               pg_size_pretty(pg_relation_size('usage_records_organization_id_created_at_idx')), \
               (SELECT COUNT(*) FROM usage_records WHERE organization_id = $1), \
               (SELECT COUNT(*) FROM usage_records)",
            &[organization.as_str()],
        )
        .await?;
    let info = info
        .first()
        .ok_or_else(|| anyhow!("no size row"))?
        .iter()
        .map(|v| v.clone().unwrap_or_default())
        .collect::<Vec<_>>();
    eprintln!(
        "loaded {} records in {:.1} s, VACUUM ANALYZE {:.1} s; table {}, report index {}; \
         {} records in the benchmarked organization",
        info.get(3).map_or("?", String::as_str),
        loaded.as_secs_f64(),
        vacuumed.as_secs_f64(),
        info.first().map_or("?", String::as_str),
        info.get(1).map_or("?", String::as_str),
        info.get(2).map_or("?", String::as_str),
    );

    // The ranges.
    let (month_start, month_end) = month_before(now.date_naive())?;
    let (from, to) = (utc_midnight(month_start), utc_midnight(month_end));
    let year_from = start.date();
    let year_to = now
        .date_naive()
        .checked_add_days(Days::new(1))
        .ok_or_else(|| anyhow!("no tomorrow"))?;
    let timestamp = |at: DateTime<Utc>| at.naive_utc().format("%Y-%m-%d %H:%M:%S").to_string();

    // An HTTPS client trusting Tessera's certificate, and a token.
    let (cert, _) = dev_certificate_paths(&settings.data_dir);
    let cert_pem =
        std::fs::read(&cert).with_context(|| format!("cannot read {}", cert.display()))?;
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&cert_pem)?)
        .http1_only()
        .resolve("localhost", SocketAddr::from(([127, 0, 0, 1], port)))
        .pool_max_idle_per_host(CLIENTS)
        .timeout(Duration::from_secs(60))
        .build()
        .context("cannot build the HTTPS client")?;
    let base = format!("https://localhost:{port}");
    let client_id = bench_client.id.to_string();
    let token: serde_json::Value = client
        .post(format!("{base}/oauth/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", secret.expose()),
        ])
        .send()
        .await?
        .error_for_status()
        .context("POST /oauth/token failed")?
        .json()
        .await?;
    let authorization = format!(
        "Bearer {}",
        token["access_token"]
            .as_str()
            .ok_or_else(|| anyhow!("no access_token in {token}"))?
    );
    let http = |query: String| Call::Http {
        client: client.clone(),
        url: format!("{base}/v1/usage?{query}"),
        authorization: authorization.clone(),
    };

    let targets = [
        Target {
            name: "baseline",
            call: Call::Sql {
                url: scratch.url.clone(),
                sql: "SELECT COUNT(*), SUM(input_tokens) FROM usage_records \
                      WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3",
                params: vec![
                    organization.as_str().to_owned(),
                    timestamp(from),
                    timestamp(to),
                ],
            },
        },
        Target {
            name: "store month day+model UTC",
            call: Call::Store {
                store: SqlUsageStore::new(state.database.clone()),
                query: GroupQuery {
                    filter: UsageFilter {
                        organization: organization.clone(),
                        from,
                        to,
                        model_id: None,
                        user_id: None,
                        chat_id: None,
                    },
                    grouping: Grouping {
                        period: Some(Period::Day),
                        model: true,
                        user: false,
                    },
                    offsets: vec![OffsetSpan {
                        since: from,
                        offset_seconds: 0,
                    }],
                    after: None,
                    // As the service asks for a page of PAGE: one more, to know if more follow.
                    limit: PAGE + 1,
                },
            },
        },
        Target {
            name: "http month day+model UTC",
            call: http(format!(
                "from={month_start}&to={month_end}&groupBy=day&groupBy=model&limit={PAGE}"
            )),
        },
        Target {
            name: "http month day+model Berlin",
            call: http(format!(
                "from={month_start}&to={month_end}&groupBy=day&groupBy=model&limit={PAGE}\
                 &timeZone=Europe%2FBerlin"
            )),
        },
        Target {
            name: "http year by month",
            call: http(format!(
                "from={year_from}&to={year_to}&groupBy=month&limit={PAGE}"
            )),
        },
    ];

    // One checked call of each: the month's totals must agree with the baseline's count.
    let mut month_rows = None;
    for target in &targets {
        let (records, groups) = target
            .call
            .worker()
            .await?
            .call(true)
            .await
            .with_context(|| format!("{} fails", target.name))?
            .ok_or_else(|| anyhow!("{} returned nothing", target.name))?;
        eprintln!(
            "{:<30} -> {records} records, {groups} groups on the page",
            target.name
        );
        let utc_month = target.name == "baseline" || target.name.ends_with("UTC");
        match (utc_month, month_rows) {
            (true, None) => month_rows = Some(records),
            (true, Some(expected)) if records != expected => bail!(
                "{} counts {records} records for the month, the baseline {expected}",
                target.name
            ),
            _ => {}
        }
    }
    let month_rows = month_rows.ok_or_else(|| anyhow!("no month count"))?;
    let rfc3339 = |at: DateTime<Utc>| at.to_rfc3339_opts(SecondsFormat::Secs, true);
    eprintln!(
        "month {} .. {} (UTC): {month_rows} records of the benchmarked organization",
        rfc3339(from),
        rfc3339(to)
    );

    let mut runs = Vec::new();
    for concurrency in CONCURRENCY {
        for target in &targets {
            let run = drive(target, concurrency, measure)
                .await
                .with_context(|| format!("{} with {concurrency} clients", target.name))?;
            eprintln!(
                "  {:<30} c={concurrency} {:>6} requests, {:>7.1} req/s, p50 {:.2} ms, p99 {:.2} ms",
                run.target,
                run.latencies.len(),
                run.requests_per_second(),
                run.percentile_ms(50.0),
                run.percentile_ms(99.0),
            );
            runs.push(run);
        }
    }
    handle.stop(true).await;

    println!();
    println!(
        "Data: {} records over the {DAYS} days ending {}, {} of them in the benchmarked \
         organization ({} others share the rest), {} models, {PRINCIPALS} principals, {CHATS} \
         chats; loaded in {:.1} s, VACUUM ANALYZE {:.1} s; table {}, report index {}. The \
         month {} .. {} covers {month_rows} of the organization's records.",
        info.get(3).map_or("?", String::as_str),
        rfc3339(now),
        info.get(2).map_or("?", String::as_str),
        OTHER_ORGS,
        MODELS.len(),
        loaded.as_secs_f64(),
        vacuumed.as_secs_f64(),
        info.first().map_or("?", String::as_str),
        info.get(1).map_or("?", String::as_str),
        rfc3339(from),
        rfc3339(to),
    );
    print_table(&runs, measure);
    drop(state);
    drop(scratch);
    Ok(())
}
