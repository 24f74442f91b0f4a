//! Chat-gateway overhead (issue 6): Tessera's `POST /v1/chats`, and the peers' own request
//! through Tessera's `POST /openai/v1/chat/completions` (issue 31), against two other gateways,
//! LiteLLM's proxy (Python) and TensorZero's gateway (Rust), all in front of the same
//! OpenAI-compatible upstream stub, which is also measured alone as the baseline.
//!
//! - The stub (`POST /v1/chat/completions`, plain HTTP on 127.0.0.1, actix-web inside this
//!   process) answers at once: JSON with `usage`, or SSE `chat.completion.chunk` events (five
//!   content deltas, a chunk with `finish_reason`, a usage chunk when
//!   `stream_options.include_usage` is set, `data: [DONE]`). A second stub on another port
//!   sends the five content events `SPACING` apart, for time to first byte.
//! - Each gateway runs as its own process: the release `tessera-api` binary (on a fresh,
//!   throwaway PostgreSQL database of the benchmark's own cluster, rate limiting on with
//!   budgets no run can exhaust,
//!   `log = "warn"`), `litellm` from `$HOME/.cache/tessera-venvs/litellm` (one worker), and
//!   TensorZero's gateway from the `tensorzero` wheel in `$HOME/.cache/tessera-venvs/tensorzero`
//!   (`chat_gateway/tensorzero_gateway.py`; the gateway runs on threads of that Python process).
//!   CPU time per request is the process tree's utime+stime (`/proc/<pid>/stat`) over the
//!   measured window divided by the requests served in it; context switches per request are
//!   the server process's threads' (`/proc/<pid>/task/*/status`), a count that, unlike CPU
//!   time, a busy or shared machine hardly changes. The load generator's own CPU per request
//!   (its named tokio threads, `client ms/req`) is read too: Tessera's TLS shows there.
//!   `end` is the time from the body chunk that completed the answer's text to the end of
//!   the response: what a server does after the model's last word (Tessera commits the turn
//!   there, so that the chat is idle and its answer stored when the client sees the end).
//! - One load generator drives every target: `concurrency` keep-alive HTTP/1.1 clients (tokio
//!   tasks sharing one `reqwest::Client`) for `WARM_UP`, then `BENCH_SECONDS` (default 5)
//!   measured, in three modes: a non-streaming answer, a streamed one, and a streamed one from
//!   the spaced stub. Tessera is reached over HTTPS (it only speaks TLS; the client trusts
//!   its self-signed certificate), the peers and the stub over plain HTTP.
//!
//! Nothing here asserts on timings; it prints two tables. Run with `just bench` (which builds
//! the release binaries first) or `cargo build --release -p tessera-api -p tessera-admin &&
//! cargo bench -p tessera-api --bench chat_gateway`.
//!
//! Like with like (issue 36): Tessera stores every completion before its final event, so the
//! peers are measured again storing what they serve, on the same PostgreSQL server:
//! TensorZero writing its inferences synchronously (`async_writes = false`) and
//! asynchronously, each in a fresh `tensorzero_bench` database prepared by
//! `chat_gateway/apply_tensorzero_migrations.sh`, and LiteLLM with its spend logs
//! (`DATABASE_URL`, `proxy_batch_write_at: 1`). After each storing target its rows are
//! counted once its writes drained, against the completions it served (warm-up included); a
//! peer that cannot store is reported as not run, with the reason. The server is the
//! benchmark's own cluster (`chat_gateway/bench_postgres.sh`: port 5433, pg_cron, TLS off),
//! so extensions and settings stay off the shared server.
//!
//! Environment: `BENCH_SECONDS`; `BENCH_CONCURRENCY` (comma-separated client counts, default
//! `16,100`); `TESSERA_BENCH_POSTGRES_URL` (the server every gateway stores on; default the
//! benchmark's own cluster); `TESSERA_BENCH_BIN_DIR` (where `tessera-api` and
//! `tessera-admin` are; default the directory of this benchmark's `deps`, i.e.
//! `target/release`); `TESSERA_BENCH_SKIP` (comma-separated targets to leave out:
//! `tessera`, `observed`, `resilience`, `litellm`, `tensorzero`, `stored` (the peers'
//! storing runs)); `BENCH_OBS_ROUNDS` (rounds of the observability comparison).
//!
//! Resilience (issue 34): on the same Tessera, streamed `/v1/chats` completions of a model
//! with three deployments behind the fast stub, all healthy, then of one whose third
//! deployment (`/flaky/v1` on the stub) answers 500 before its first byte for 30 % of its
//! requests; the table gives the share of completions that succeeded and the p99 latency the
//! failures add.
//!
//! `tessera +obs` is `/v1/chats` on a Tessera with Prometheus metrics on and every trace
//! exported (sampling 1.0) to an OTLP sink on the stub's server (issue 32), against a second
//! Tessera with both off, started beside it (`tessera -obs`). The two are driven in turn,
//! cell by cell (mode and concurrency), for `BENCH_OBS_ROUNDS` rounds (default 3), the order
//! of the pair alternating from round to round, so that drift of the machine falls on both;
//! the last table gives, per cell, the median and the range over the rounds of the ratio of
//! CPU per completion (process and database) on against off.

use std::{
    collections::HashMap,
    convert::Infallible,
    fs,
    io::{BufRead, BufReader},
    net::{SocketAddr, TcpListener},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

#[path = "chat_gateway/storage.rs"]
mod storage;

use actix_web::{App, HttpResponse, HttpServer, dev::ServerHandle, web, web::Bytes};
use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};

/// Concurrent clients of each run unless `BENCH_CONCURRENCY` says otherwise.
const DEFAULT_CONCURRENCY: [usize; 2] = [16, 100];
/// Unmeasured time before each measurement (connections open, caches warm).
const WARM_UP: Duration = Duration::from_secs(1);
/// Measured time per run unless `BENCH_SECONDS` says otherwise.
const DEFAULT_SECONDS: f64 = 5.0;
/// Delay before each content event of the spaced stub.
const SPACING: Duration = Duration::from_millis(20);
/// The stub's answer, one content delta per piece.
const ANSWER: [&str; 5] = ["Hello", " there", ", how", " can I", " help?"];
/// The upstream model name every gateway asks the stub for.
const STUB_MODEL: &str = "stub-model";
/// A dummy upstream key (the stub ignores it).
const STUB_KEY: &str = "sk-bench";
/// The prompt of every request.
const PROMPT: &str = "Hello";

// ---------------------------------------------------------------------------------------
// The upstream stub.

/// Pre-encoded answers of the stub.
struct StubAnswers {
    json: Bytes,
    sse: Bytes,
    sse_with_usage: Bytes,
    events: Vec<Bytes>,
    events_with_usage: Vec<Bytes>,
}

fn usage() -> Value {
    json!({"prompt_tokens": 8, "completion_tokens": 5, "total_tokens": 13})
}

fn sse_chunk(choices: Value, usage: Option<Value>) -> Bytes {
    let mut chunk = json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": STUB_MODEL,
        "choices": choices,
    });
    if let Some(usage) = usage {
        chunk["usage"] = usage;
    }
    Bytes::from(format!("data: {chunk}\n\n"))
}

/// The SSE events of one streamed answer, in order.
fn sse_events(include_usage: bool) -> Vec<Bytes> {
    let mut events = Vec::new();
    for (index, piece) in ANSWER.iter().enumerate() {
        let delta = if index == 0 {
            json!({"role": "assistant", "content": piece})
        } else {
            json!({"content": piece})
        };
        events.push(sse_chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            None,
        ));
    }
    events.push(sse_chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        None,
    ));
    if include_usage {
        events.push(sse_chunk(json!([]), Some(usage())));
    }
    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
    events
}

impl StubAnswers {
    fn new() -> Self {
        let json = json!({
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": STUB_MODEL,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER.concat()},
                "finish_reason": "stop",
            }],
            "usage": usage(),
        });
        let events = sse_events(false);
        let events_with_usage = sse_events(true);
        Self {
            json: Bytes::from(json.to_string()),
            sse: Bytes::from(events.concat()),
            sse_with_usage: Bytes::from(events_with_usage.concat()),
            events,
            events_with_usage,
        }
    }
}

#[derive(Clone)]
struct Stub {
    answers: Arc<StubAnswers>,
    /// `None`: the whole answer at once; `Some(d)`: each content event `d` after the previous.
    spacing: Option<Duration>,
}

async fn stub_completions(stub: web::Data<Stub>, body: Bytes) -> HttpResponse {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => return HttpResponse::BadRequest().body(error.to_string()),
    };
    if request.get("stream").and_then(Value::as_bool) != Some(true) {
        return HttpResponse::Ok()
            .content_type("application/json")
            .body(stub.answers.json.clone());
    }
    let include_usage = request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let Some(spacing) = stub.spacing else {
        let body = if include_usage {
            &stub.answers.sse_with_usage
        } else {
            &stub.answers.sse
        };
        return HttpResponse::Ok()
            .content_type("text/event-stream")
            .insert_header(("cache-control", "no-cache"))
            .body(body.clone());
    };
    let events = if include_usage {
        stub.answers.events_with_usage.clone()
    } else {
        stub.answers.events.clone()
    };
    // Each content event waits `spacing`; the tail (finish, usage, [DONE]) follows the last.
    let body = futures_util::stream::unfold(
        (events.into_iter(), 0usize),
        move |(mut events, sent)| async move {
            let event = events.next()?;
            if sent < ANSWER.len() {
                tokio::time::sleep(spacing).await;
            }
            Some((Ok::<_, Infallible>(event), (events, sent + 1)))
        },
    );
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(body)
}

/// Requests the flaky route has received.
static FLAKY_REQUESTS: AtomicU64 = AtomicU64::new(0);

/// The stub behind a deployment that fails 30 % of its requests before the first byte (a
/// 500, drawn by a hash of the request's number so that failures come in irregular runs).
async fn flaky_completions(stub: web::Data<Stub>, body: Bytes) -> HttpResponse {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let number = FLAKY_REQUESTS.fetch_add(1, Ordering::Relaxed);
    if BuildHasherDefault::<DefaultHasher>::default().hash_one(number) % 10 < 3 {
        return HttpResponse::InternalServerError()
            .content_type("application/json")
            .body(r#"{"error":{"message":"injected failure","type":"server_error"}}"#);
    }
    stub_completions(stub, body).await
}

/// Bytes of OTLP trace exports received (the observed Tessera's spans).
static OTLP_BYTES: AtomicU64 = AtomicU64::new(0);

/// A local OTLP/HTTP trace receiver that keeps nothing: it counts the bytes and answers an
/// empty `ExportTraceServiceResponse` (what a collector answers to a full success).
async fn otlp_sink(body: Bytes) -> HttpResponse {
    OTLP_BYTES.fetch_add(body.len() as u64, Ordering::Relaxed);
    HttpResponse::Ok()
        .content_type("application/x-protobuf")
        .finish()
}

/// Starts a stub on 127.0.0.1:0 with two actix workers (as many as this machine's cores, so
/// the stub is never the bottleneck).
fn start_stub(
    answers: Arc<StubAnswers>,
    spacing: Option<Duration>,
) -> anyhow::Result<(u16, ServerHandle)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let stub = web::Data::new(Stub { answers, spacing });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(stub.clone())
            .route("/v1/chat/completions", web::post().to(stub_completions))
            .route(
                "/flaky/v1/chat/completions",
                web::post().to(flaky_completions),
            )
            .route("/v1/traces", web::post().to(otlp_sink))
    })
    .workers(2)
    // Without it, Nagle's algorithm and the client's delayed ACK hold back spaced events
    // (about 40 ms on Linux).
    .tcp_nodelay(true)
    .shutdown_timeout(1)
    .listen(listener)?
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    Ok((port, handle))
}

// ---------------------------------------------------------------------------------------
// Processes and their CPU time.

/// Clock ticks per second of `/proc/<pid>/stat` times.
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// A `/proc/…/stat` line's command name, parent pid and utime+stime (clock ticks).
struct ProcStat<'a> {
    command: &'a str,
    parent: u32,
    ticks: u64,
}

fn parse_stat(stat: &str) -> Option<ProcStat<'_>> {
    // The command name is in parentheses and may hold spaces and parentheses itself.
    let (head, rest) = stat.rsplit_once(')')?;
    let (_, command) = head.split_once('(')?;
    // Fields after the command name: state ppid … utime (12th) stime (13th).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let number = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat {
        command,
        parent: u32::try_from(number(1)?).ok()?,
        ticks: number(11)? + number(12)?,
    })
}

/// The load generator's threads (this process's tokio runtime) are named so, which tells
/// them apart from the in-process stub's actix threads.
const LOAD_GENERATOR_THREAD: &str = "load-generator";

/// utime+stime, in clock ticks, of this process's load-generator threads and main thread:
/// the client side of every request, TLS included for Tessera.
fn load_generator_ticks() -> anyhow::Result<u64> {
    let main_thread = std::process::id().to_string();
    let mut total = 0;
    for entry in fs::read_dir("/proc/self/task")? {
        let entry = entry?;
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue; // exited meanwhile
        };
        let Some(stat) = parse_stat(&stat) else {
            continue;
        };
        if stat.command == LOAD_GENERATOR_THREAD || entry.file_name() == main_thread.as_str() {
            total += stat.ticks;
        }
    }
    Ok(total)
}

/// utime+stime, in clock ticks, of `root` and every process descending from it.
fn tree_cpu_ticks(root: u32) -> anyhow::Result<u64> {
    let mut processes: HashMap<u32, (u32, u64)> = HashMap::new();
    for entry in fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue; // exited meanwhile
        };
        if let Some(stat) = parse_stat(&stat) {
            processes.insert(pid, (stat.parent, stat.ticks));
        }
    }
    if !processes.contains_key(&root) {
        bail!("process {root} is gone");
    }
    let mut total = 0;
    for (&pid, &(_, ticks)) in &processes {
        let mut current = pid;
        loop {
            if current == root {
                total += ticks;
                break;
            }
            match processes.get(&current) {
                Some(&(ppid, _)) if ppid != 0 && ppid != current => current = ppid,
                _ => break,
            }
        }
    }
    Ok(total)
}

/// Context switches (voluntary and not) of every thread of process `pid` so far: each is a
/// thread that went to sleep and was woken, or was preempted. Unlike CPU time, their count
/// per request hardly depends on how busy the machine is.
fn context_switches(pid: u32) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(status) = fs::read_to_string(entry?.path().join("status")) else {
            continue; // the thread exited meanwhile
        };
        total += status
            .lines()
            .filter(|line| line.contains("ctxt_switches:"))
            .filter_map(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    Ok(total)
}

/// A server process this benchmark started, in its own process group; killed (the whole
/// group) when dropped.
struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    fn spawn(name: &'static str, mut command: Command, log: PathBuf) -> anyhow::Result<Self> {
        let out = fs::File::create(&log)?;
        command
            .stdout(out.try_clone()?)
            .stderr(out)
            .stdin(Stdio::null())
            .process_group(0);
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {name} ({command:?})"))?;
        Ok(Self { name, child, log })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// An error if the process has exited, with the end of its log.
    fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("{} exited ({status}); {}", self.name, self.log_tail());
        }
        Ok(())
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(15)..].join("\n  ");
        format!("end of its log ({}):\n  {tail}", self.log.display())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // `--` is not optional: procps-ng 4.0's `kill -KILL -<pgid>` sends the signal to
        // pid -1, every process the user may signal (it took this machine's PostgreSQL and
        // Redis down twice). With `--` the group is the target.
        let _ = Command::new("kill")
            .args(["-KILL", "--"])
            .arg(format!("-{}", self.child.id()))
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command with an empty environment but `PATH`, `HOME` and `LANG` (Tessera refuses
/// unknown `TESSERA_*` variables, and no inherited setting should change a server).
fn clean_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    command.env_clear();
    for key in ["PATH", "HOME", "LANG"] {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    command
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn localhost(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A helper file under `benches/chat_gateway/` with the stub URLs filled in.
fn template(name: &str, fast_base: &str, spaced_base: &str) -> anyhow::Result<String> {
    let path = manifest_dir().join("benches/chat_gateway").join(name);
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let flaky_base = format!("{}/flaky/v1", fast_base.trim_end_matches("/v1"));
    Ok(text
        .replace("{fast_base}", fast_base)
        .replace("{spaced_base}", spaced_base)
        .replace("{flaky_base}", &flaky_base))
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| anyhow!("HOME is not set"))
}

fn run_checked(command: &mut Command) -> anyhow::Result<String> {
    let output = command
        .output()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Polls `ready` every 100 ms until it is true, the process exits, or `limit` passes.
async fn wait_until<F, Fut>(
    process: &mut Process,
    limit: Duration,
    mut ready: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        process.check_alive()?;
        if ready().await {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{} was not ready within {} s; {}",
                process.name,
                limit.as_secs(),
                process.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------------------
// Targets.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A non-streaming answer, fast stub.
    Json,
    /// A streamed answer, fast stub.
    Stream,
    /// A streamed answer from the spaced stub (time to first byte).
    Spaced,
}

const MODES: [Mode; 3] = [Mode::Json, Mode::Stream, Mode::Spaced];

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Json => "json",
            Mode::Stream => "stream",
            Mode::Spaced => "stream, spaced",
        }
    }

    fn streams(self) -> bool {
        self != Mode::Json
    }
}

/// One server under load: how to reach it in each mode.
struct Target {
    name: &'static str,
    client: reqwest::Client,
    /// `Authorization` header value, if any.
    authorization: Option<String>,
    /// URL and JSON body per mode (`MODES` order).
    requests: [(String, Bytes); 3],
    /// The process whose tree's CPU time is read (none for the in-process stub).
    cpu_pid: Option<u32>,
    /// The target's database (admin URL, name): its PostgreSQL backends' CPU time is read too.
    database: Option<(String, String)>,
    /// Completions answered in full, warm-up and checks included: what the target should
    /// have stored.
    served: AtomicU64,
}

impl Target {
    fn request(&self, mode: Mode) -> &(String, Bytes) {
        match mode {
            Mode::Json => &self.requests[0],
            Mode::Stream => &self.requests[1],
            Mode::Spaced => &self.requests[2],
        }
    }
}

/// The OpenAI-style request body for `model` (streamed ones ask for usage, as Tessera does).
fn openai_body(model: &str, stream: bool) -> Bytes {
    let mut body = json!({"model": model, "messages": [{"role": "user", "content": PROMPT}]});
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    Bytes::from(body.to_string())
}

fn openai_requests(url: &str, fast_model: &str, spaced_model: &str) -> [(String, Bytes); 3] {
    [
        (url.to_owned(), openai_body(fast_model, false)),
        (url.to_owned(), openai_body(fast_model, true)),
        (url.to_owned(), openai_body(spaced_model, true)),
    ]
}

fn plain_client(concurrency: usize) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .http1_only()
        .pool_max_idle_per_host(concurrency)
        .timeout(Duration::from_secs(60))
        .build()
        .context("cannot build the HTTP client")
}

/// What one request gave: total time, time to the first body chunk, and time from the chunk
/// that completed the answer's text to the end of the response (for a stream, what the
/// server does after the model's last word: Tessera commits the turn there).
struct Timing {
    total: Duration,
    first_byte: Duration,
    after_text: Duration,
}

/// The end of the stub's answer: the body holds the whole text once it holds this.
const ANSWER_END: &[u8] = b"help?";

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// One request, body read to the end. Anything but a 2xx carrying the stub's answer (and,
/// when streamed, ending with `data: [DONE]`) is an error.
async fn call(target: &Target, mode: Mode, body: &mut Vec<u8>) -> anyhow::Result<Timing> {
    let (url, payload) = target.request(mode);
    let mut builder = target
        .client
        .post(url)
        .header("content-type", "application/json")
        .body(payload.clone());
    if let Some(authorization) = &target.authorization {
        builder = builder.header("authorization", authorization);
    }
    body.clear();
    let sent = Instant::now();
    let mut response = builder.send().await?;
    let status = response.status();
    let mut first_byte = None;
    let mut text_done = None;
    while let Some(chunk) = response.chunk().await? {
        let at = sent.elapsed();
        first_byte.get_or_insert(at);
        // Only the new bytes and the few before them can complete the text.
        let from = body.len().saturating_sub(ANSWER_END.len());
        body.extend_from_slice(&chunk);
        if text_done.is_none() && contains(&body[from..], ANSWER_END) {
            text_done = Some(at);
        }
    }
    let total = sent.elapsed();
    if !status.is_success() {
        bail!("{status}: {}", String::from_utf8_lossy(body));
    }
    let Some(text_done) = text_done else {
        bail!(
            "the answer lacks the stub's text: {}",
            String::from_utf8_lossy(body)
        );
    };
    if mode.streams() && !body.trim_ascii_end().ends_with(b"[DONE]") {
        bail!(
            "the stream does not end with [DONE]: {}",
            String::from_utf8_lossy(body)
        );
    }
    target.served.fetch_add(1, Ordering::Relaxed);
    Ok(Timing {
        total,
        first_byte: first_byte.unwrap_or(total),
        after_text: total.saturating_sub(text_done),
    })
}

// ---------------------------------------------------------------------------------------
// Load generation.

/// What one (target, mode, concurrency) run did in its measured window.
struct Run {
    target: &'static str,
    mode: Mode,
    concurrency: usize,
    requests: usize,
    errors: usize,
    elapsed: Duration,
    /// Sorted ascending.
    latencies: Vec<Duration>,
    /// Sorted ascending.
    first_bytes: Vec<Duration>,
    /// From the answer's last text to the end of the response; sorted ascending.
    after_texts: Vec<Duration>,
    cpu_ms_per_request: Option<f64>,
    /// Context switches of the server process's threads, per request.
    switches_per_request: Option<f64>,
    /// CPU time of the database backends serving the target, per request.
    db_ms_per_request: Option<f64>,
    /// CPU time of the load generator (this process's client threads), per request.
    client_ms_per_request: Option<f64>,
}

/// utime+stime, in clock ticks, of each PostgreSQL backend connected to `name`.
fn database_backend_ticks(admin_url: &str, name: &str) -> anyhow::Result<HashMap<u32, u64>> {
    let pids = run_checked(
        Command::new("psql")
            .args(["-X", "-A", "-t", admin_url, "-c"])
            .arg(format!(
                "SELECT pid FROM pg_stat_activity WHERE datname = '{name}'"
            )),
    )?;
    let mut ticks = HashMap::new();
    for pid in pids
        .lines()
        .filter_map(|line| line.trim().parse::<u32>().ok())
    {
        if let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat"))
            && let Some(stat) = parse_stat(&stat)
        {
            ticks.insert(pid, stat.ticks);
        }
    }
    Ok(ticks)
}

/// Nearest-rank percentile, in milliseconds.
fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e3
}

impl Run {
    fn requests_per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

/// What one client of a run saw.
#[derive(Default)]
struct ClientTally {
    latencies: Vec<Duration>,
    first_bytes: Vec<Duration>,
    after_texts: Vec<Duration>,
    /// Failed requests sent in the measured window.
    errors: usize,
    first_error: Option<String>,
    /// When its last request ended.
    done: Option<Instant>,
}

impl ClientTally {
    fn measured(&mut self, timing: Timing) {
        self.latencies.push(timing.total);
        self.first_bytes.push(timing.first_byte);
        self.after_texts.push(timing.after_text);
    }
}

async fn drive(
    target: &Arc<Target>,
    mode: Mode,
    concurrency: usize,
    measure: Duration,
    ticks_per_second: f64,
) -> anyhow::Result<Run> {
    let start = Instant::now() + WARM_UP;
    let end = start + measure;
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let target = Arc::clone(target);
        tasks.push(tokio::spawn(async move {
            let mut client = ClientTally::default();
            let mut body = Vec::with_capacity(4096);
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                match call(&target, mode, &mut body).await {
                    Ok(timing) if sent >= start => client.measured(timing),
                    Ok(_) => {}
                    Err(error) => {
                        if sent >= start {
                            client.errors += 1;
                        }
                        client
                            .first_error
                            .get_or_insert_with(|| format!("{error:#}"));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            client.done = Some(Instant::now());
            client
        }));
    }
    tokio::time::sleep_until(start.into()).await;
    let client_before = load_generator_ticks()?;
    let cpu_before = target.cpu_pid.map(tree_cpu_ticks).transpose()?;
    let switches_before = target.cpu_pid.map(context_switches).transpose()?;
    let db_before = target
        .database
        .as_ref()
        .map(|(url, name)| database_backend_ticks(url, name))
        .transpose()?;
    let mut latencies = Vec::new();
    let mut first_bytes = Vec::new();
    let mut after_texts = Vec::new();
    let mut errors = 0;
    let mut finished = end;
    for task in tasks {
        let client = task.await.context("a client task stopped")?;
        latencies.extend(client.latencies);
        first_bytes.extend(client.first_bytes);
        after_texts.extend(client.after_texts);
        errors += client.errors;
        finished = finished.max(client.done.unwrap_or(end));
        if let Some(error) = client.first_error {
            eprintln!(
                "  {} {} c={concurrency}: error: {error}",
                target.name,
                mode.label()
            );
        }
    }
    let client_after = load_generator_ticks()?;
    let cpu_after = target.cpu_pid.map(tree_cpu_ticks).transpose()?;
    let switches_after = target.cpu_pid.map(context_switches).transpose()?;
    let db_after = target
        .database
        .as_ref()
        .map(|(url, name)| database_backend_ticks(url, name))
        .transpose()?;
    latencies.sort_unstable();
    first_bytes.sort_unstable();
    after_texts.sort_unstable();
    let requests = latencies.len();
    let cpu_ms_per_request = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) if requests > 0 => {
            Some((after - before) as f64 / ticks_per_second * 1e3 / requests as f64)
        }
        _ => None,
    };
    let client_ms_per_request = (requests > 0)
        .then(|| (client_after - client_before) as f64 / ticks_per_second * 1e3 / requests as f64);
    let switches_per_request = match (switches_before, switches_after) {
        (Some(before), Some(after)) if requests > 0 => {
            Some(after.saturating_sub(before) as f64 / requests as f64)
        }
        _ => None,
    };
    // Backends opened during the run count from zero; those closed during it are lost.
    let db_ms_per_request = match (db_before, db_after) {
        (Some(before), Some(after)) if requests > 0 => {
            let ticks: u64 = after
                .iter()
                .map(|(pid, t)| t.saturating_sub(before.get(pid).copied().unwrap_or(0)))
                .sum();
            Some(ticks as f64 / ticks_per_second * 1e3 / requests as f64)
        }
        _ => None,
    };
    Ok(Run {
        target: target.name,
        mode,
        concurrency,
        requests,
        errors,
        elapsed: finished.saturating_duration_since(start),
        latencies,
        first_bytes,
        after_texts,
        cpu_ms_per_request,
        switches_per_request,
        db_ms_per_request,
        client_ms_per_request,
    })
}

/// Checks one request of each mode, then runs every mode at every concurrency.
async fn measure_target(
    target: &Arc<Target>,
    measure: Duration,
    concurrencies: &[usize],
    ticks_per_second: f64,
    runs: &mut Vec<Run>,
) -> anyhow::Result<()> {
    let mut body = Vec::new();
    for mode in MODES {
        call(target, mode, &mut body).await.with_context(|| {
            format!("{} does not answer in mode `{}`", target.name, mode.label())
        })?;
        let text = String::from_utf8_lossy(&body);
        let shown: String = text.chars().take(160).collect();
        eprintln!(
            "{:<10} {:<14} -> {}",
            target.name,
            mode.label(),
            shown.replace('\n', "⏎")
        );
    }
    for mode in MODES {
        for &concurrency in concurrencies {
            let run = drive(target, mode, concurrency, measure, ticks_per_second).await?;
            eprintln!(
                "  {:<10} {:<14} c={:<3} {:>6} requests, {:>8.0} req/s, p50 {:.2} ms, p99 {:.2} ms",
                run.target,
                mode.label(),
                concurrency,
                run.requests,
                run.requests_per_second(),
                percentile_ms(&run.latencies, 50.0),
                percentile_ms(&run.latencies, 99.0),
            );
            runs.push(run);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Tessera.

/// A throwaway PostgreSQL database, dropped when this is dropped.
struct Database {
    admin_url: String,
    name: String,
    url: String,
}

impl Database {
    fn create(admin_url: &str) -> anyhow::Result<Self> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
        Self::create_named(
            admin_url,
            &format!("tessera_bench_{}_{nanos}", std::process::id()),
        )
    }

    /// Creates database `name`, dropping any left by an earlier run first.
    fn create_named(admin_url: &str, name: &str) -> anyhow::Result<Self> {
        let (server, _) = admin_url
            .split_once('?')
            .map_or((admin_url, ""), |(url, query)| (url, query));
        let Some((base, _)) = server
            .rsplit_once('/')
            .filter(|(base, _)| base.contains("://"))
        else {
            bail!("TESSERA_BENCH_POSTGRES_URL must be postgres://…/<database>, got {admin_url}");
        };
        run_checked(
            Command::new("psql")
                .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", admin_url])
                .arg("-c")
                .arg(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .arg("-c")
                .arg(format!("CREATE DATABASE {name}")),
        )
        .context("cannot create the benchmark's PostgreSQL database (is PostgreSQL running?)")?;
        Ok(Self {
            admin_url: admin_url.to_owned(),
            url: format!("{base}/{name}"),
            name: name.to_owned(),
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let result = run_checked(
            Command::new("psql")
                .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", &self.admin_url, "-c"])
                .arg(format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                )),
        );
        if let Err(error) = result {
            eprintln!("could not drop database {}: {error:#}", self.name);
        }
    }
}

fn bin_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("TESSERA_BENCH_BIN_DIR") {
        return Ok(PathBuf::from(dir));
    }
    // This benchmark runs from `<target>/release/deps/`.
    let exe = std::env::current_exe()?;
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow!("cannot locate the target directory from {}", exe.display()))
}

struct Tessera {
    process: Process,
    database: Database,
    _data_dir: tempfile::TempDir,
}

impl Database {
    /// PostgreSQL's row counters of `table`: inserts, updates, and the updates that were
    /// heap-only (HOT: no index entry written). They reach the statistics with a delay of
    /// up to a second after the transactions that made them.
    fn row_counters(&self, table: &str) -> anyhow::Result<String> {
        let counters = run_checked(
            Command::new("psql")
                .args(["-X", "-q", "-A", "-t", "-F", " ", &self.url, "-c"])
                .arg(format!(
                    "SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables \
                     WHERE relname = '{table}'"
                )),
        )?;
        let fields: Vec<&str> = counters.split_whitespace().collect();
        let [inserted, updated, hot] = fields[..] else {
            bail!("unexpected pg_stat_user_tables row: {counters}");
        };
        Ok(format!(
            "{table}: {inserted} rows inserted, {updated} updated, {hot} of the updates HOT"
        ))
    }
}

/// Sets Tessera's configuration on `command`.
fn tessera_env(command: &mut Command, data_dir: &Path, database: &Database, listen: SocketAddr) {
    command
        .env("TESSERA_DATA_DIR", data_dir)
        .env("DATABASE_URL", &database.url)
        .env("TESSERA_LISTEN", listen.to_string())
        // Off unless a run turns it on (`Observed`): the default port may be taken.
        .env("TESSERA_METRICS__LISTEN", "")
        .env("TESSERA_LOG", "warn")
        .env(
            "TESSERA_MODELS__CATALOG_FILE",
            data_dir.join("catalog.toml"),
        )
        .env("BENCH_STUB_KEY", STUB_KEY)
        .env("TESSERA_RATE_LIMIT__ENABLED", "true")
        .env("TESSERA_RATE_LIMIT__ORGANIZATION_PER_MINUTE", "100000000")
        .env("TESSERA_RATE_LIMIT__PRINCIPAL_PER_MINUTE", "100000000")
        .env("TESSERA_RATE_LIMIT__ANONYMOUS_PER_MINUTE", "100000000");
}

/// Metrics and traces on: where the metrics listener binds and where spans are exported.
struct Observed {
    metrics: SocketAddr,
    otlp_endpoint: String,
}

async fn start_tessera(
    fast_base: &str,
    spaced_base: &str,
    max_concurrency: usize,
    observed: Option<&Observed>,
) -> anyhow::Result<(Tessera, [Target; 2])> {
    let bins = bin_dir()?;
    let api = bins.join("tessera-api");
    let admin = bins.join("tessera-admin");
    for binary in [&api, &admin] {
        if !binary.is_file() {
            bail!(
                "{} is missing: run `cargo build --release -p tessera-api -p tessera-admin` \
                 first (or set TESSERA_BENCH_BIN_DIR)",
                binary.display()
            );
        }
    }
    let database = Database::create(storage::bench_postgres()?)?;
    let data_dir = tempfile::tempdir()?;
    fs::write(
        data_dir.path().join("catalog.toml"),
        template("catalog.toml", fast_base, spaced_base)?,
    )?;
    let listen = localhost(free_port()?);

    let admin_json = |args: &[&str]| -> anyhow::Result<Value> {
        let mut command = clean_command(&admin);
        tessera_env(&mut command, data_dir.path(), &database, listen);
        let out = run_checked(command.args(args))?;
        Ok(serde_json::from_str(&out).unwrap_or(Value::Null))
    };
    admin_json(&["migrate"])?;
    let org = admin_json(&[
        "org",
        "create",
        "--name",
        "Benchmark",
        "--plan",
        "pro",
        "--json",
    ])?;
    let org_id = org["id"]
        .as_str()
        .ok_or_else(|| anyhow!("`org create` printed no id: {org}"))?
        .to_owned();
    let client = admin_json(&[
        "client",
        "create",
        "--org",
        &org_id,
        "--scopes",
        "chats:invoke",
        "--json",
    ])?;
    let (Some(client_id), Some(client_secret)) =
        (client["clientId"].as_str(), client["clientSecret"].as_str())
    else {
        bail!("`client create` printed no credentials: {client}");
    };

    let mut command = clean_command(&api);
    tessera_env(&mut command, data_dir.path(), &database, listen);
    if let Some(observed) = observed {
        command
            .env("TESSERA_METRICS__LISTEN", observed.metrics.to_string())
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &observed.otlp_endpoint)
            .env("OTEL_TRACES_SAMPLER_ARG", "1.0");
    }
    let mut process = Process::spawn("tessera-api", command, data_dir.path().join("api.log"))?;
    let cert_path = data_dir.path().join("tls/cert.pem");
    wait_until(&mut process, Duration::from_secs(60), || async {
        cert_path.is_file() && tokio::net::TcpStream::connect(listen).await.is_ok()
    })
    .await?;
    let cert = fs::read(&cert_path)?;
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&cert)?)
        .http1_only()
        .resolve("localhost", listen)
        .pool_max_idle_per_host(max_concurrency)
        .timeout(Duration::from_secs(60))
        .build()
        .context("cannot build the HTTPS client")?;
    let base = format!("https://localhost:{}", listen.port());
    let token: Value = client
        .post(format!("{base}/oauth/token"))
        .json(&json!({
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": client_secret,
            "scope": "chats:invoke",
        }))
        .send()
        .await?
        .error_for_status()
        .context("POST /oauth/token failed")?
        .json()
        .await?;
    let access_token = token["access_token"]
        .as_str()
        .ok_or_else(|| anyhow!("no access_token in {token}"))?;
    let chats = format!("{base}/v1/chats");
    let body = |model: &str, stream: bool| {
        let mut body = json!({"modelId": model, "messages": [{"role": "user", "content": PROMPT}]});
        if stream {
            body["stream"] = json!(true);
        }
        Bytes::from(body.to_string())
    };
    let native = Target {
        name: "tessera",
        client: client.clone(),
        authorization: Some(format!("Bearer {access_token}")),
        requests: [
            (chats.clone(), body("bench/stub", false)),
            (chats.clone(), body("bench/stub", true)),
            (chats, body("bench/stub-spaced", true)),
        ],
        cpu_pid: Some(process.pid()),
        database: Some((database.admin_url.clone(), database.name.clone())),
        served: AtomicU64::default(),
    };
    // The peers' own request, on OpenAI's wire format: stateless, one usage row each.
    let openai = Target {
        name: "tessera /openai/v1",
        client,
        authorization: Some(format!("Bearer {access_token}")),
        requests: openai_requests(
            &format!("{base}/openai/v1/chat/completions"),
            "bench/stub",
            "bench/stub-spaced",
        ),
        cpu_pid: Some(process.pid()),
        database: Some((database.admin_url.clone(), database.name.clone())),
        served: AtomicU64::default(),
    };
    Ok((
        Tessera {
            process,
            database,
            _data_dir: data_dir,
        },
        [native, openai],
    ))
}

// ---------------------------------------------------------------------------------------
// LiteLLM and TensorZero.

async fn http_ok(client: &reqwest::Client, url: &str) -> bool {
    matches!(client.get(url).send().await, Ok(r) if r.status().is_success())
}

/// LiteLLM's proxy; with `spend_logs`, one row per request in `LiteLLM_SpendLogs` there,
/// written in batches every second.
async fn start_litellm(
    fast_base: &str,
    spaced_base: &str,
    work: &Path,
    max_concurrency: usize,
    spend_logs: Option<&Database>,
) -> anyhow::Result<(Process, Target)> {
    let venv = home()?.join(".cache/tessera-venvs/litellm");
    let setup = manifest_dir().join("../../crates/llm-openai/tests/litellm/setup.sh");
    run_checked(Command::new("bash").arg(&setup).arg(&venv)).context("cannot install LiteLLM")?;
    let mut settings = template("litellm.yaml", fast_base, spaced_base)?;
    if spend_logs.is_some() {
        storage::litellm_storage_client(&venv)?;
        settings.push_str("general_settings:\n  proxy_batch_write_at: 1\n");
    }
    let config = work.join("litellm.yaml");
    fs::write(&config, settings)?;
    let port = free_port()?;
    let master_key = "sk-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let mut command = clean_command(venv.join("bin/litellm"));
    command
        .arg("--config")
        .arg(&config)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--num_workers", "1"])
        .env("LITELLM_MASTER_KEY", master_key)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_LOG", "ERROR");
    if let Some(database) = spend_logs {
        command.env("DATABASE_URL", &database.url);
    }
    let name = if spend_logs.is_some() {
        "litellm +pg"
    } else {
        "litellm"
    };
    let mut process = Process::spawn(name, command, work.join(format!("{name}.log")))?;
    let client = plain_client(max_concurrency)?;
    let health = format!("http://127.0.0.1:{port}/health/liveliness");
    wait_until(&mut process, Duration::from_secs(180), || {
        http_ok(&client, &health)
    })
    .await?;
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let target = Target {
        name,
        client,
        authorization: Some(format!("Bearer {master_key}")),
        requests: openai_requests(&url, "stub", "stub-spaced"),
        cpu_pid: Some(process.pid()),
        database: spend_logs.map(|db| (db.admin_url.clone(), db.name.clone())),
        served: AtomicU64::default(),
    };
    Ok((process, target))
}

/// TensorZero's gateway; with `storage`, it writes its inferences to that database.
async fn start_tensorzero(
    fast_base: &str,
    spaced_base: &str,
    work: &Path,
    max_concurrency: usize,
    storage: Option<(storage::TensorZeroWrites, &Database)>,
) -> anyhow::Result<(Process, Target)> {
    let venv = home()?.join(".cache/tessera-venvs/tensorzero");
    let helpers = manifest_dir().join("benches/chat_gateway");
    run_checked(
        Command::new("bash")
            .arg(helpers.join("setup_tensorzero.sh"))
            .arg(&venv),
    )
    .context("cannot install TensorZero")?;
    let config = work.join("tensorzero.toml");
    fs::write(
        &config,
        template(
            "tensorzero.toml",
            &format!("{fast_base}/"),
            &format!("{spaced_base}/"),
        )?
        .replace(
            "{observability}",
            &storage.map_or("enabled = false".to_owned(), |(writes, _)| {
                writes.observability()
            }),
        ),
    )?;
    let mut command = clean_command(venv.join("bin/python"));
    command
        .arg(helpers.join("tensorzero_gateway.py"))
        .arg(&config)
        .env("OPENAI_API_KEY", STUB_KEY)
        .env("RUST_LOG", "warn");
    if let Some((_, database)) = storage {
        command.arg(&database.url);
    }
    let name = storage.map_or("tensorzero", |(writes, _)| writes.target_name());
    // The helper prints `READY <base_url> <pid>` on stdout and runs until stdin closes; its
    // stdout is read here, its stderr goes to the log.
    let log = work.join("tensorzero.log");
    command
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&log)?)
        .stdin(Stdio::piped())
        .process_group(0);
    let mut child = command
        .spawn()
        .context("cannot start the TensorZero helper")?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("no stdout of the TensorZero helper"))?;
    let mut process = Process { name, child, log };
    // The gateway may log a line on stdout before the helper's.
    let line = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.starts_with("READY ") => return Ok(line),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error),
                None => return Ok(String::new()),
            }
        }
    });
    let line = tokio::time::timeout(Duration::from_secs(60), line)
        .await
        .context("the TensorZero gateway did not start within 60 s")???;
    let mut words = line.split_whitespace();
    let (Some("READY"), Some(base_url), Some(pid)) = (words.next(), words.next(), words.next())
    else {
        process.check_alive()?;
        bail!("unexpected line from the TensorZero helper: {line:?}");
    };
    let pid: u32 = pid.parse()?;
    let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
    let target = Target {
        name,
        client: plain_client(max_concurrency)?,
        authorization: None,
        requests: openai_requests(
            &url,
            "tensorzero::model_name::stub",
            "tensorzero::model_name::stub-spaced",
        ),
        cpu_pid: Some(pid),
        database: storage.map(|(_, db)| (db.admin_url.clone(), db.name.clone())),
        served: AtomicU64::default(),
    };
    Ok((process, target))
}

/// What measuring a peer needs.
struct Peers<'a> {
    fast_base: &'a str,
    spaced_base: &'a str,
    work: &'a Path,
    max_concurrency: usize,
    measure: Duration,
    concurrencies: &'a [usize],
    ticks_per_second: f64,
}

impl Peers<'_> {
    /// TensorZero without storage, or storing in a fresh database of the benchmark's
    /// cluster; a peer that cannot run is reported and left out.
    async fn measure_tensorzero(
        &self,
        writes: Option<storage::TensorZeroWrites>,
        runs: &mut Vec<Run>,
        report: &mut StorageReport,
    ) {
        let name = writes.map_or("tensorzero", storage::TensorZeroWrites::target_name);
        let database = match writes.map(|_| storage::tensorzero_database()).transpose() {
            Ok(database) => database,
            Err(error) => {
                eprintln!("{name} not run: {error:#}");
                report.not_run.push((name, format!("{error:#}")));
                return;
            }
        };
        let storage = writes.zip(database.as_ref());
        let started = start_tensorzero(
            self.fast_base,
            self.spaced_base,
            self.work,
            self.max_concurrency,
            storage,
        )
        .await;
        self.measure_started(name, started, database.as_ref(), runs, report)
            .await;
    }

    /// LiteLLM without a database, or with its spend logs in a fresh database of the
    /// benchmark's cluster.
    async fn measure_litellm(
        &self,
        spend_logs: bool,
        runs: &mut Vec<Run>,
        report: &mut StorageReport,
    ) {
        let name = if spend_logs { "litellm +pg" } else { "litellm" };
        let database = match spend_logs
            .then(|| storage::bench_postgres().and_then(Database::create))
            .transpose()
        {
            Ok(database) => database,
            Err(error) => {
                report.not_run.push((name, format!("{error:#}")));
                return;
            }
        };
        let started = start_litellm(
            self.fast_base,
            self.spaced_base,
            self.work,
            self.max_concurrency,
            database.as_ref(),
        )
        .await;
        self.measure_started(name, started, database.as_ref(), runs, report)
            .await;
    }

    async fn measure_started(
        &self,
        name: &'static str,
        started: anyhow::Result<(Process, Target)>,
        database: Option<&Database>,
        runs: &mut Vec<Run>,
        report: &mut StorageReport,
    ) {
        let (process, target) = match started {
            Ok(started) => started,
            Err(error) => {
                eprintln!("{name} not run: {error:#}");
                let reason = storage::reason_from_log(&format!("{error:#}"));
                report.not_run.push((name, reason));
                return;
            }
        };
        let target = Arc::new(target);
        if let Err(error) = measure_target(
            &target,
            self.measure,
            self.concurrencies,
            self.ticks_per_second,
            runs,
        )
        .await
        {
            eprintln!("{name}: {error:#}; {}", process.log_tail());
            report.not_run.push((name, format!("{error:#}")));
            return;
        }
        if let (Some(database), Some(table)) = (database, storage::stored_table(name)) {
            let served = target.served.load(Ordering::Relaxed);
            // A fresh database: every row is the target's.
            match storage::check_stored(name, database, table, 0, served).await {
                Ok(check) => report.checks.push(check),
                Err(error) => eprintln!("{name}: cannot count its rows: {error:#}"),
            }
        }
        drop(process);
    }
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

fn cell(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "–".to_owned(),
    }
}

/// The concurrencies to run: `BENCH_CONCURRENCY` (comma-separated), else the defaults.
fn planned_concurrencies() -> anyhow::Result<Vec<usize>> {
    let Ok(text) = std::env::var("BENCH_CONCURRENCY") else {
        return Ok(DEFAULT_CONCURRENCY.to_vec());
    };
    text.split(',')
        .map(|item| match item.trim().parse::<usize>() {
            Ok(clients) if clients > 0 => Ok(clients),
            _ => bail!(
                "BENCH_CONCURRENCY must be positive numbers separated by commas, got `{text}`"
            ),
        })
        .collect()
}

fn print_tables(runs: &[Run], measure: Duration) {
    let find = |target: &str, mode: Mode, concurrency: usize| {
        runs.iter()
            .find(|r| r.target == target && r.mode == mode && r.concurrency == concurrency)
    };
    println!();
    println!(
        "Chat gateways in front of one upstream stub: keep-alive HTTP/1.1 clients, {:.1} s \
         warm-up, {:.1} s measured per run; spaced stub: {} content events {} ms apart",
        WARM_UP.as_secs_f64(),
        measure.as_secs_f64(),
        ANSWER.len(),
        SPACING.as_millis()
    );
    println!();
    println!(
        "| {:<10} | {:<14} | {:>4} | {:>8} | {:>6} | {:>7} | {:>7} | {:>7} | {:>8} | {:>8} | {:>8} | {:>8} | {:>10} | {:>10} | {:>9} | {:>13} |",
        "server",
        "mode",
        "conc",
        "requests",
        "errors",
        "req/s",
        "p50 ms",
        "p99 ms",
        "TTFB p50",
        "TTFB p99",
        "end p50",
        "end p99",
        "CPU ms/req",
        "switch/req",
        "DB ms/req",
        "client ms/req"
    );
    println!(
        "|{:-<12}|{:-<16}|{:->6}|{:->10}|{:->8}|{:->9}|{:->9}|{:->9}|{:->10}|{:->10}|{:->10}|{:->10}|{:->12}|{:->12}|{:->11}|{:->15}|",
        ":", ":", ":", ":", ":", ":", ":", ":", ":", ":", ":", ":", ":", ":", ":", ":"
    );
    for run in runs {
        let streamed = |times: &[Duration], p| run.mode.streams().then(|| percentile_ms(times, p));
        println!(
            "| {:<10} | {:<14} | {:>4} | {:>8} | {:>6} | {:>7.0} | {:>7.2} | {:>7.2} | {:>8} | {:>8} | {:>8} | {:>8} | {:>10} | {:>10} | {:>9} | {:>13} |",
            run.target,
            run.mode.label(),
            run.concurrency,
            run.requests,
            run.errors,
            run.requests_per_second(),
            percentile_ms(&run.latencies, 50.0),
            percentile_ms(&run.latencies, 99.0),
            cell(streamed(&run.first_bytes, 50.0), 2),
            cell(streamed(&run.first_bytes, 99.0), 2),
            cell(streamed(&run.after_texts, 50.0), 2),
            cell(streamed(&run.after_texts, 99.0), 2),
            cell(run.cpu_ms_per_request, 3),
            cell(run.switches_per_request, 2),
            cell(run.db_ms_per_request, 3),
            cell(run.client_ms_per_request, 3),
        );
    }
    println!();
    println!(
        "`end` is the time from the chunk that completed the answer's text to the end of the \
         stream (Tessera commits the turn there, before its final event). Added latency is the \
         server's percentile minus the stub's (same mode and concurrency); ratios are the server's figure over the peer's; CPU+DB counts Tessera's PostgreSQL \
         backends too; client ms/req is the load generator's CPU (TLS included for Tessera)."
    );
    println!();
    println!(
        "| {:<10} | {:<14} | {:>4} | {:>8} | {:>8} | {:>13} | {:>10} | {:>15} | {:>8} | {:>11} |",
        "server",
        "mode",
        "conc",
        "+p50 ms",
        "+p99 ms",
        "+TTFB p99 ms",
        "req/s / TZ",
        "req/s / LiteLLM",
        "CPU / TZ",
        "CPU+DB / TZ"
    );
    println!(
        "|{:-<12}|{:-<16}|{:->6}|{:->10}|{:->10}|{:->15}|{:->12}|{:->17}|{:->10}|{:->13}|",
        ":", ":", ":", ":", ":", ":", ":", ":", ":", ":"
    );
    for run in runs.iter().filter(|r| r.target != "stub") {
        let stub = find("stub", run.mode, run.concurrency);
        let added = |p: f64| {
            stub.map(|s| percentile_ms(&run.latencies, p) - percentile_ms(&s.latencies, p))
        };
        let added_ttfb = run
            .mode
            .streams()
            .then(|| {
                stub.map(|s| {
                    percentile_ms(&run.first_bytes, 99.0) - percentile_ms(&s.first_bytes, 99.0)
                })
            })
            .flatten();
        let ratio = |peer: &str| {
            find(peer, run.mode, run.concurrency)
                .map(|p| run.requests_per_second() / p.requests_per_second())
        };
        let tz_cpu =
            find("tensorzero", run.mode, run.concurrency).and_then(|p| p.cpu_ms_per_request);
        let cpu_ratio = tz_cpu.and_then(|tz| Some(run.cpu_ms_per_request? / tz));
        let with_db = tz_cpu.and_then(|tz| {
            Some((run.cpu_ms_per_request? + run.db_ms_per_request.unwrap_or(0.0)) / tz)
        });
        println!(
            "| {:<10} | {:<14} | {:>4} | {:>8} | {:>8} | {:>13} | {:>10} | {:>15} | {:>8} | {:>11} |",
            run.target,
            run.mode.label(),
            run.concurrency,
            cell(added(50.0), 2),
            cell(added(99.0), 2),
            cell(added_ttfb, 2),
            cell(ratio("tensorzero"), 2),
            cell(ratio("litellm"), 1),
            cell(cpu_ratio, 2),
            cell(with_db, 2),
        );
    }
    println!();
}

// ---------------------------------------------------------------------------------------

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_name(LOAD_GENERATOR_THREAD)
        .enable_all()
        .build()?
        .block_on(run())
}

/// What the peers that store could not do, and the stored rows of those that did.
#[derive(Default)]
struct StorageReport {
    not_run: Vec<(&'static str, String)>,
    checks: Vec<storage::StoredCheck>,
}

async fn run() -> anyhow::Result<()> {
    let measure = measured_duration()?;
    let ticks_per_second = clock_ticks();
    let skip = std::env::var("TESSERA_BENCH_SKIP").unwrap_or_default();
    let skipped = |name: &str| skip.split(',').any(|s| s.trim() == name);
    // reqwest is built without a default crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let concurrencies = planned_concurrencies()?;
    let max_concurrency = concurrencies.iter().copied().max().unwrap_or(1);
    let work = tempfile::tempdir()?;

    let answers = Arc::new(StubAnswers::new());
    let (fast_port, fast_handle) = start_stub(Arc::clone(&answers), None)?;
    let (spaced_port, spaced_handle) = start_stub(answers, Some(SPACING))?;
    let fast_base = format!("http://127.0.0.1:{fast_port}/v1");
    let spaced_base = format!("http://127.0.0.1:{spaced_port}/v1");

    let mut runs = Vec::new();
    let mut report = StorageReport::default();

    let stub = Target {
        name: "stub",
        client: plain_client(max_concurrency)?,
        authorization: None,
        requests: [
            (
                format!("{fast_base}/chat/completions"),
                openai_body(STUB_MODEL, false),
            ),
            (
                format!("{fast_base}/chat/completions"),
                openai_body(STUB_MODEL, true),
            ),
            (
                format!("{spaced_base}/chat/completions"),
                openai_body(STUB_MODEL, true),
            ),
        ],
        cpu_pid: None,
        database: None,
        served: AtomicU64::default(),
    };
    measure_target(
        &Arc::new(stub),
        measure,
        &concurrencies,
        ticks_per_second,
        &mut runs,
    )
    .await?;

    if !skipped("tessera") {
        let (tessera, targets) =
            start_tessera(&fast_base, &spaced_base, max_concurrency, None).await?;
        let resilience = resilience_targets(&targets[0]);
        // `/v1/chats` keeps chats and messages; `/openai/v1` keeps usage records only.
        for target in targets {
            let name = target.name;
            let table = storage::stored_table(name).unwrap_or("chats");
            let before = storage::count_rows(&tessera.database, table)?;
            let target = Arc::new(target);
            let result = measure_target(
                &target,
                measure,
                &concurrencies,
                ticks_per_second,
                &mut runs,
            )
            .await;
            if let Err(error) = &result {
                eprintln!("{}", tessera.process.log_tail());
                eprintln!("{name}: {error:#}");
            }
            result?;
            let served = target.served.load(Ordering::Relaxed);
            report
                .checks
                .push(storage::check_stored(name, &tessera.database, table, before, served).await?);
            tokio::time::sleep(Duration::from_secs(1)).await;
            match tessera.database.row_counters(table) {
                Ok(counters) => println!("{name}: tessera's PostgreSQL, {counters}"),
                Err(error) => eprintln!("no row counters: {error:#}"),
            }
        }
        if !skipped("resilience") {
            for target in resilience {
                let target = Arc::new(target);
                let run = drive(&target, Mode::Stream, 16, measure, ticks_per_second).await?;
                runs.push(run);
            }
        }
        drop(tessera);
    }
    let observability = if skipped("observed") {
        Vec::new()
    } else {
        measure_observed(
            &fast_base,
            &spaced_base,
            max_concurrency,
            measure,
            &concurrencies,
            ticks_per_second,
        )
        .await?
    };
    let peers = Peers {
        fast_base: &fast_base,
        spaced_base: &spaced_base,
        work: work.path(),
        max_concurrency,
        measure,
        concurrencies: &concurrencies,
        ticks_per_second,
    };
    if !skipped("tensorzero") {
        peers.measure_tensorzero(None, &mut runs, &mut report).await;
    }
    if !skipped("tensorzero") && !skipped("stored") {
        for writes in storage::TensorZeroWrites::ALL {
            peers
                .measure_tensorzero(Some(writes), &mut runs, &mut report)
                .await;
        }
    }
    if !skipped("litellm") {
        peers.measure_litellm(false, &mut runs, &mut report).await;
    }
    if !skipped("litellm") && !skipped("stored") {
        peers.measure_litellm(true, &mut runs, &mut report).await;
    }

    fast_handle.stop(true).await;
    spaced_handle.stop(true).await;
    print_tables(&runs, measure);
    print_like_with_like(&runs, &report);
    print_observability_cost(&observability);
    print_resilience(&runs);
    Ok(())
}

/// Issue 36's comparison: every gateway storing what it serves on the same PostgreSQL
/// server, Tessera's two doors against TensorZero storing synchronously and asynchronously,
/// with what each target stored of what it served, and the peers that could not store.
fn print_like_with_like(runs: &[Run], report: &StorageReport) {
    let stored = ["tensorzero +pg sync", "tensorzero +pg async", "litellm +pg"];
    if !runs.iter().any(|run| stored.contains(&run.target)) && report.not_run.is_empty() {
        return;
    }
    let find = |target: &str, mode: Mode, concurrency: usize| {
        runs.iter()
            .find(|r| r.target == target && r.mode == mode && r.concurrency == concurrency)
    };
    let added_p99 = |run: &Run| {
        find("stub", run.mode, run.concurrency)
            .map(|stub| percentile_ms(&run.latencies, 99.0) - percentile_ms(&stub.latencies, 99.0))
    };
    let cpu_and_db = |run: &Run| {
        run.cpu_ms_per_request
            .map(|cpu| cpu + run.db_ms_per_request.unwrap_or(0.0))
    };
    println!();
    println!(
        "Like with like: every gateway stores what it serves, on the same PostgreSQL server \
         (ratios against TensorZero storing synchronously, same mode and concurrency):"
    );
    println!();
    println!(
        "| server | mode | conc | req/s | +p99 ms | gateway CPU ms/req | DB ms/req | CPU+DB ms/req | client ms/req | req/s / TZ sync | CPU+DB / TZ sync | +p99 − TZ sync ms |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let storing = ["tessera", "tessera /openai/v1"].into_iter().chain(stored);
    for target in storing {
        for run in runs.iter().filter(|run| run.target == target) {
            let sync = find("tensorzero +pg sync", run.mode, run.concurrency);
            let ratio = |value: Option<f64>, of: Option<f64>| Some(value? / of?);
            println!(
                "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} |",
                run.target,
                run.mode.label(),
                run.concurrency,
                run.requests_per_second(),
                cell(added_p99(run), 2),
                cell(run.cpu_ms_per_request, 3),
                cell(run.db_ms_per_request, 3),
                cell(cpu_and_db(run), 3),
                cell(run.client_ms_per_request, 3),
                cell(
                    sync.map(|s| run.requests_per_second() / s.requests_per_second()),
                    2
                ),
                cell(ratio(cpu_and_db(run), sync.and_then(cpu_and_db)), 2),
                cell(sync.and_then(|s| Some(added_p99(run)? - added_p99(s)?)), 2),
            );
        }
    }
    println!();
    for check in &report.checks {
        println!(
            "{}: {} of {} completions stored ({:.1} s after the last answer){}",
            check.target,
            check.stored,
            check.served,
            check.drained_after.as_secs_f64(),
            if check.stored < check.served {
                " — some were not stored"
            } else {
                ""
            }
        );
    }
    for (target, reason) in &report.not_run {
        println!("{target}: not run: {reason}");
    }
}

/// Targets of the resilience run on `native`'s Tessera: streamed completions of the model
/// with three healthy deployments, then of the one whose third deployment is flaky.
fn resilience_targets(native: &Target) -> [Target; 2] {
    let url = native.request(Mode::Stream).0.clone();
    let target = |name: &'static str, model: &str| {
        let body = json!({
            "modelId": model,
            "stream": true,
            "messages": [{"role": "user", "content": PROMPT}],
        });
        let request = (url.clone(), Bytes::from(body.to_string()));
        Target {
            name,
            client: native.client.clone(),
            authorization: native.authorization.clone(),
            requests: [request.clone(), request.clone(), request],
            cpu_pid: native.cpu_pid,
            database: native.database.clone(),
            served: AtomicU64::default(),
        }
    };
    [
        target("3 healthy", "bench/three-healthy"),
        target("1 of 3 flaky", "bench/one-flaky"),
    ]
}

/// The resilience table: success rate and the latency the flaky deployment adds.
fn print_resilience(runs: &[Run]) {
    let find = |name: &str| runs.iter().find(|run| run.target == name);
    let (Some(healthy), Some(flaky)) = (find("3 healthy"), find("1 of 3 flaky")) else {
        return;
    };
    println!();
    println!(
        "Resilience: streamed /v1/chats, 16 clients, three deployments; one fails 30 % of its requests before the first byte:"
    );
    println!();
    println!("| deployments | completions | failed | succeeded | p50 ms | p99 ms | p99 added ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for run in [healthy, flaky] {
        let attempted = run.requests + run.errors;
        let succeeded = 100.0 * run.requests as f64 / attempted.max(1) as f64;
        let added = percentile_ms(&run.latencies, 99.0) - percentile_ms(&healthy.latencies, 99.0);
        println!(
            "| {} | {} | {} | {succeeded:.2} % | {:.2} | {:.2} | {added:+.2} |",
            run.target,
            attempted,
            run.errors,
            percentile_ms(&run.latencies, 50.0),
            percentile_ms(&run.latencies, 99.0),
        );
    }
    println!(
        "flaky route: {} requests reached it",
        FLAKY_REQUESTS.load(Ordering::Relaxed)
    );
}

/// One cell of the observability comparison in one round: the same load on both Tesseras.
struct ObservedPair {
    off: Run,
    on: Run,
}

/// Rounds of the observability comparison unless `BENCH_OBS_ROUNDS` says otherwise.
const DEFAULT_OBS_ROUNDS: usize = 3;

fn observability_rounds() -> anyhow::Result<usize> {
    match std::env::var("BENCH_OBS_ROUNDS") {
        Ok(rounds) => match rounds.trim().parse::<usize>() {
            Ok(rounds) if rounds > 0 => Ok(rounds),
            _ => bail!("BENCH_OBS_ROUNDS must be a positive whole number, got {rounds:?}"),
        },
        Err(_) => Ok(DEFAULT_OBS_ROUNDS),
    }
}

/// `/v1/chats` on a Tessera with Prometheus metrics on and every trace exported (sampling
/// 1.0) to the local OTLP sink, and on a second one with both off, started side by side and
/// driven in turn, cell by cell, for the configured rounds (the pair's order alternating);
/// a scrape at the end shows that metrics and traces were on.
async fn measure_observed(
    fast_base: &str,
    spaced_base: &str,
    max_concurrency: usize,
    measure: Duration,
    concurrencies: &[usize],
    ticks_per_second: f64,
) -> anyhow::Result<Vec<ObservedPair>> {
    let rounds = observability_rounds()?;
    let observed = Observed {
        metrics: localhost(free_port()?),
        otlp_endpoint: fast_base.trim_end_matches("/v1").to_owned(),
    };
    let (plain, [mut off, _]) =
        start_tessera(fast_base, spaced_base, max_concurrency, None).await?;
    let (traced, [mut on, _]) =
        start_tessera(fast_base, spaced_base, max_concurrency, Some(&observed)).await?;
    off.name = "tessera -obs";
    on.name = "tessera +obs";
    let (off, on) = (Arc::new(off), Arc::new(on));
    let mut pairs = Vec::new();
    let mut body = Vec::new();
    for target in [&off, &on] {
        for mode in MODES {
            call(target, mode, &mut body).await.with_context(|| {
                format!("{} does not answer in mode `{}`", target.name, mode.label())
            })?;
        }
    }
    for round in 0..rounds {
        for mode in MODES {
            for &concurrency in concurrencies {
                let drive_one = async |target: &Arc<Target>| {
                    let run = drive(target, mode, concurrency, measure, ticks_per_second).await;
                    if run.is_err() {
                        let process = if Arc::ptr_eq(target, &on) {
                            &traced
                        } else {
                            &plain
                        };
                        eprintln!("{}", process.process.log_tail());
                    }
                    run
                };
                let (off_run, on_run) = if round % 2 == 0 {
                    let off_run = drive_one(&off).await?;
                    (off_run, drive_one(&on).await?)
                } else {
                    let on_run = drive_one(&on).await?;
                    (drive_one(&off).await?, on_run)
                };
                eprintln!(
                    "  round {} {:<14} c={:<3} off {:>8.0} req/s, on {:>8.0} req/s",
                    round + 1,
                    mode.label(),
                    concurrency,
                    off_run.requests_per_second(),
                    on_run.requests_per_second(),
                );
                pairs.push(ObservedPair {
                    off: off_run,
                    on: on_run,
                });
            }
        }
    }
    let scrape = reqwest::get(format!("http://{}/metrics", observed.metrics))
        .await?
        .text()
        .await?;
    let completions: f64 = scrape
        .lines()
        .filter(|line| line.starts_with("tessera_chat_completions_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    // The batch exporter sends every few seconds; give it one interval.
    tokio::time::sleep(Duration::from_secs(6)).await;
    println!(
        "tessera +obs: /metrics counted {completions} completions; the OTLP sink received {} KiB of spans",
        OTLP_BYTES.load(Ordering::Relaxed) / 1024
    );
    drop((plain, traced));
    Ok(pairs)
}

/// The median of `values` (not empty).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

/// CPU per completion (Tessera's process and its database backends) with metrics and
/// traces on, as a ratio of the same with both off, per cell: the median over the rounds and
/// the range (goal: at most 1.05).
fn print_observability_cost(pairs: &[ObservedPair]) {
    if pairs.is_empty() {
        return;
    }
    let cost = |run: &Run| {
        run.cpu_ms_per_request
            .map(|cpu| cpu + run.db_ms_per_request.unwrap_or(0.0))
    };
    let rounds = pairs
        .iter()
        .filter(|pair| {
            pair.on.mode == pairs[0].on.mode && pair.on.concurrency == pairs[0].on.concurrency
        })
        .count();
    println!();
    println!(
        "Metrics and traces on (sampling 1.0, local OTLP sink) against off, /v1/chats, two \
         Tesseras driven in turn for {rounds} round(s); medians over the rounds:"
    );
    println!();
    println!(
        "| mode | conc | CPU+DB ms/req off | CPU+DB ms/req on | on/off (median) | on/off (range) | req/s on/off |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut medians = Vec::new();
    for mode in MODES {
        let mut concurrencies: Vec<usize> = pairs
            .iter()
            .filter(|pair| pair.on.mode == mode)
            .map(|pair| pair.on.concurrency)
            .collect();
        concurrencies.sort_unstable();
        concurrencies.dedup();
        for concurrency in concurrencies {
            let cell: Vec<(f64, f64, f64)> = pairs
                .iter()
                .filter(|pair| pair.on.mode == mode && pair.on.concurrency == concurrency)
                .filter_map(|pair| {
                    let (off, on) = (cost(&pair.off)?, cost(&pair.on)?);
                    let speed = pair.on.requests_per_second() / pair.off.requests_per_second();
                    Some((off, on, speed))
                })
                .collect();
            if cell.is_empty() {
                continue;
            }
            let mut offs: Vec<f64> = cell.iter().map(|c| c.0).collect();
            let mut ons: Vec<f64> = cell.iter().map(|c| c.1).collect();
            let mut ratios: Vec<f64> = cell.iter().map(|c| c.1 / c.0).collect();
            let mut speeds: Vec<f64> = cell.iter().map(|c| c.2).collect();
            let ratio = median(&mut ratios);
            medians.push(ratio);
            println!(
                "| {} | {} | {:.3} | {:.3} | {ratio:.3} | {:.3}–{:.3} | {:.3} |",
                mode.label(),
                concurrency,
                median(&mut offs),
                median(&mut ons),
                ratios[0],
                ratios[ratios.len() - 1],
                median(&mut speeds),
            );
        }
    }
    if !medians.is_empty() {
        let geometric = (medians.iter().map(|r| r.ln()).sum::<f64>() / medians.len() as f64).exp();
        println!();
        println!("Geometric mean of the cells' median ratios: {geometric:.3} (goal: at most 1.05)");
    }
}
