//! Gateways that store what they serve (issue 36): the benchmark's own PostgreSQL cluster,
//! TensorZero's database prepared with its migrations (taken from the pinned wheel), the
//! attempt to give LiteLLM its spend-log database, and the count of stored rows that shows
//! nothing was dropped.

use std::{
    process::Command,
    sync::OnceLock,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};

use crate::{Database, manifest_dir, run_checked};

/// The admin URL of the PostgreSQL server every gateway stores on.
static SERVER: OnceLock<String> = OnceLock::new();

/// `TESSERA_BENCH_POSTGRES_URL` if set, else the benchmark's own cluster, created and
/// started by `bench_postgres.sh` (once per run).
pub fn bench_postgres() -> anyhow::Result<&'static str> {
    if let Some(url) = SERVER.get() {
        return Ok(url);
    }
    let url = match std::env::var("TESSERA_BENCH_POSTGRES_URL") {
        Ok(url) => url,
        Err(_) => {
            let script = manifest_dir().join("benches/chat_gateway/bench_postgres.sh");
            run_checked(Command::new("bash").arg(script))
                .context("cannot start the benchmark's PostgreSQL cluster")?
                .trim()
                .to_owned()
        }
    };
    eprintln!("every gateway stores on {url}");
    Ok(SERVER.get_or_init(|| url))
}

/// How TensorZero writes its inferences to PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorZeroWrites {
    /// `async_writes = false`: the row is written before the answer ends.
    Synchronous,
    /// `async_writes = true` (TensorZero's default): written by a background task.
    Asynchronous,
}

impl TensorZeroWrites {
    pub const ALL: [Self; 2] = [Self::Synchronous, Self::Asynchronous];

    pub fn target_name(self) -> &'static str {
        match self {
            Self::Synchronous => "tensorzero +pg sync",
            Self::Asynchronous => "tensorzero +pg async",
        }
    }

    /// The `[gateway.observability]` settings of the benchmark's TensorZero config.
    pub fn observability(self) -> String {
        format!(
            "enabled = true\nbackend = \"postgres\"\nasync_writes = {}",
            self == Self::Asynchronous
        )
    }
}

/// The database TensorZero stores in: always this name, as `bench_postgres.sh` points
/// pg_cron (whose jobs live in one database) at it.
const TENSORZERO_DATABASE: &str = "tensorzero_bench";

/// A fresh `tensorzero_bench` database with TensorZero's migrations applied; prints what
/// `apply_tensorzero_migrations.sh` says about the extensions and skipped migrations.
pub fn tensorzero_database() -> anyhow::Result<Database> {
    let database = Database::create_named(bench_postgres()?, TENSORZERO_DATABASE)?;
    let script = manifest_dir().join("benches/chat_gateway/apply_tensorzero_migrations.sh");
    let said = run_checked(Command::new("bash").arg(script).arg(&database.url))
        .context("cannot apply TensorZero's migrations")?;
    for line in said.lines() {
        eprintln!("tensorzero database: {line}");
    }
    Ok(database)
}

/// The table whose rows count a target's stored completions.
pub fn stored_table(target: &str) -> Option<&'static str> {
    match target {
        "tessera" | "tessera +obs" => Some("chats"),
        "tessera /openai/v1" => Some("usage_records"),
        name if name.starts_with("tensorzero +pg") => Some("tensorzero.chat_inferences"),
        "litellm +pg" => Some("\"LiteLLM_SpendLogs\""),
        _ => None,
    }
}

/// What a storing target served and what its database holds once its writes drained.
pub struct StoredCheck {
    pub target: &'static str,
    pub served: u64,
    pub stored: u64,
    /// From the last answer until the count stopped changing.
    pub drained_after: Duration,
}

/// Rows of `table` in `database`.
pub fn count_rows(database: &Database, table: &str) -> anyhow::Result<u64> {
    let count = run_checked(
        Command::new("psql")
            .args(["-X", "-A", "-t", &database.url, "-c"])
            .arg(format!("SELECT count(*) FROM {table}")),
    )?;
    count
        .trim()
        .parse()
        .with_context(|| format!("unexpected count of {table}: {count:?}"))
}

/// Counts `table`'s new rows (beyond the `before` it held when the target started) until they
/// reach `served` or stop changing for 3 s (at most a minute): asynchronous writers still
/// drain their queue after the last answer. Two targets can share a table (Tessera's
/// `/v1/chats` also writes usage records), hence `before`.
pub async fn check_stored(
    target: &'static str,
    database: &Database,
    table: &str,
    before: u64,
    served: u64,
) -> anyhow::Result<StoredCheck> {
    let started = Instant::now();
    let new_rows =
        || -> anyhow::Result<u64> { Ok(count_rows(database, table)?.saturating_sub(before)) };
    let mut last = (new_rows()?, Instant::now());
    while last.0 < served && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let count = new_rows()?;
        if count != last.0 {
            last = (count, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let check = StoredCheck {
        target,
        served,
        stored: last.0,
        drained_after: last.1.saturating_duration_since(started),
    };
    eprintln!(
        "{target}: {} of {served} completions stored in {table} ({:.1} s after the last answer)",
        check.stored,
        check.drained_after.as_secs_f64()
    );
    Ok(check)
}

/// LiteLLM's spend logs need Prisma's query engine; this makes sure the Prisma client
/// (`litellm[extra_proxy]`) is in LiteLLM's venv, so that what stops LiteLLM is the engine
/// itself and the benchmark can quote it.
pub fn litellm_storage_client(venv: &std::path::Path) -> anyhow::Result<()> {
    if Command::new(venv.join("bin/python"))
        .args(["-c", "import prisma"])
        .output()
        .is_ok_and(|out| out.status.success())
    {
        return Ok(());
    }
    eprintln!("litellm +pg: installing litellm[extra_proxy] (the Prisma client)");
    run_checked(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("litellm[extra_proxy]=={}", litellm_version(venv)?)),
    )?;
    Ok(())
}

fn litellm_version(venv: &std::path::Path) -> anyhow::Result<String> {
    let version = std::fs::read_to_string(venv.join(".tessera-litellm-ready"))
        .context("LiteLLM's venv has no version marker")?;
    let version = version.trim();
    if version.is_empty() {
        bail!("LiteLLM's venv marker is empty");
    }
    Ok(version.to_owned())
}

/// The most telling line of a log that ended a start-up: the last one naming an error.
pub fn reason_from_log(log: &str) -> String {
    log.lines()
        .rev()
        .find(|line| {
            let lower = line.to_ascii_lowercase();
            lower.contains("error") || lower.contains("unable") || lower.contains("failed")
        })
        .or_else(|| log.lines().rev().find(|line| !line.trim().is_empty()))
        .unwrap_or("no output")
        .trim()
        .chars()
        .take(300)
        .collect()
}
