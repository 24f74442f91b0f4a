//! The `tessera-api` binary as a process: start-up messages, bad configuration, JSON logs,
//! and a clean exit on SIGTERM.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::mpsc,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

const BINARY: &str = env!("CARGO_BIN_EXE_tessera-api");

/// The binary with a clean environment: only what the test sets.
pub fn command(data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(BINARY);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TESSERA_DATA_DIR", data_dir)
        .env("TESSERA_LISTEN", "127.0.0.1:0")
        .env("TESSERA_METRICS__LISTEN", "127.0.0.1:0")
        .env("TESSERA_HTTP__WORKERS", "1")
        .env("TESSERA_HTTP__SHUTDOWN_TIMEOUT_SECS", "5");
    command
}

/// Runs to completion (for configurations that must stop start-up) and returns code and stderr.
pub fn run_to_exit(command: &mut Command) -> (i32, String) {
    let output = command
        .env("TESSERA_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A child process killed when dropped, so a failing test leaves no server running.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Already exited (and reaped) children make both calls fail harmlessly.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for KillOnDrop {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

pub struct Running {
    pub child: KillOnDrop,
    pub port: u16,
    stdout: std::thread::JoinHandle<String>,
    /// Every stdout and stderr line so far.
    stdout_lines: Arc<Mutex<Vec<String>>>,
    stderr_lines: Arc<Mutex<Vec<String>>>,
}

impl Running {
    /// Whether a log line containing `text` arrives within `within` (a process that has
    /// exited may still have lines in the pipe).
    pub fn logged(&self, text: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let lines = self.stderr_lines.lock().unwrap();
            if lines.iter().any(|line| line.contains(text)) {
                return true;
            }
            drop(lines);
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts the binary with JSON logs and waits for its "listening" line.
fn start(data_dir: &std::path::Path) -> Running {
    start_logging(data_dir, "info")
}

fn start_logging(data_dir: &std::path::Path, filter: &str) -> Running {
    start_with(data_dir, filter, &[])
}

/// Starts the binary with JSON logs at `filter` and extra environment variables.
pub fn start_with(data_dir: &std::path::Path, filter: &str, env: &[(&str, &str)]) -> Running {
    // Killed when dropped from the start, so a start-up that never logs its port (the wait
    // below panics) leaves no server behind.
    let mut child = KillOnDrop(
        command(data_dir)
            .envs(env.iter().copied())
            .env("TESSERA_LOG_FORMAT", "json")
            .env("TESSERA_LOG", filter)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.stderr.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    let stderr_lines = Arc::new(Mutex::new(Vec::new()));
    let collected = stderr_lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            collected.lock().unwrap().push(line.clone());
            let _ = sender.send(line);
        }
    });
    let out = child.stdout.take().unwrap();
    let stdout_lines = Arc::new(Mutex::new(Vec::new()));
    let collected = stdout_lines.clone();
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            collected.lock().unwrap().push(line.clone());
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let port = loop {
        let line = receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the binary logs its listening line");
        let event: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("log lines are JSON: {line}"));
        if event["message"]
            .as_str()
            .is_some_and(|m| m.contains("listening"))
        {
            break u16::try_from(event["port"].as_u64().unwrap()).unwrap();
        }
    };
    Running {
        child,
        port,
        stdout,
        stdout_lines,
        stderr_lines,
    }
}

/// Starts `tessera-api worker` with extra environment variables (its log on stderr).
pub fn spawn_worker(data_dir: &std::path::Path, env: &[(&str, &str)]) -> KillOnDrop {
    KillOnDrop(
        command(data_dir)
            .arg("worker")
            .envs(env.iter().copied())
            .env("TESSERA_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    )
}

pub fn terminate(child: &mut Child) -> i32 {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    for _ in 0..100 {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap();
    panic!("the server did not stop within 10 s of SIGTERM");
}

#[test]
fn serves_then_exits_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = start(dir.path());
    let health = std::net::TcpStream::connect(("127.0.0.1", first.port));
    assert!(health.is_ok(), "the port accepts connections");
    assert_eq!(terminate(&mut first.child), 0);
    assert!(
        first.logged("generation runner retired", Duration::from_secs(5)),
        "a clean stop forgets the process's generation runner"
    );
    let stdout = first.stdout.join().unwrap();
    assert!(
        stdout.starts_with("First run: created organization \"Default\" with id org_"),
        "{stdout}"
    );

    // The second run reuses the data directory: same certificate, no new organization.
    let cert = std::fs::read(dir.path().join("tls/cert.pem")).unwrap();
    let mut second = start(dir.path());
    assert_eq!(
        std::fs::read(dir.path().join("tls/cert.pem")).unwrap(),
        cert
    );
    assert_eq!(terminate(&mut second.child), 0);
    assert_eq!(second.stdout.join().unwrap(), "");
}

pub fn one_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line: {stderr}");
    lines[0]
}

#[test]
fn unknown_config_key_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tessera.toml");
    std::fs::write(&file, "listne = \"127.0.0.1:1\"\n").unwrap();
    let (code, stderr) = run_to_exit(command(dir.path()).arg("--config").arg(&file));
    assert_eq!(code, 2);
    assert!(
        one_line(&stderr).starts_with("error: config key `listne`: unknown field"),
        "{stderr}"
    );
}

#[test]
fn bad_port_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_to_exit(command(dir.path()).env("TESSERA_LISTEN", "127.0.0.1:99999"));
    assert_eq!(code, 2);
    assert!(
        one_line(&stderr).starts_with("error: config key `listen` (from TESSERA_LISTEN)"),
        "{stderr}"
    );
}

#[test]
fn unreadable_certificate_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_to_exit(
        command(dir.path())
            .env("TESSERA_TLS__CERT", "/nonexistent/cert.pem")
            .env("TESSERA_TLS__KEY", "/nonexistent/key.pem"),
    );
    assert_eq!(code, 1);
    assert!(
        one_line(&stderr)
            .starts_with("error: config key `tls.cert`: cannot read /nonexistent/cert.pem"),
        "{stderr}"
    );
}

#[test]
fn unreachable_database_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_to_exit(
        command(dir.path()).env("DATABASE_URL", "postgres://nobody:secret@127.0.0.1:1/none"),
    );
    assert_eq!(code, 1);
    let line = one_line(&stderr);
    assert!(
        line.starts_with(
            "error: cannot connect to the database: postgres://nobody:***@127.0.0.1:1/none"
        ),
        "{line}"
    );
    assert!(
        !line.contains("secret"),
        "the password is not printed: {line}"
    );
}

#[test]
fn worker_mode_stops_start_up_unless_it_can_work_beside_api_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let worker = || {
        let mut command = command(dir.path());
        command.arg("worker");
        command
    };
    // The embedded index is one process's: a worker needs the shared Qdrant server.
    let (code, stderr) = run_to_exit(&mut worker());
    assert_eq!(code, 1);
    assert!(
        one_line(&stderr).starts_with(
            "error: worker mode: needs the vector index the API replicas search: set \
             knowledge.qdrant_url"
        ),
        "{stderr}"
    );
    let (code, stderr) = run_to_exit(
        worker()
            .env("TESSERA_KNOWLEDGE__QDRANT_URL", "http://127.0.0.1:1")
            .env("TESSERA_KNOWLEDGE__WORKERS", "0")
            .env("TESSERA_WEBHOOKS__DISPATCHERS", "0"),
    );
    assert_eq!(code, 1);
    assert!(
        one_line(&stderr).contains("this worker would do nothing"),
        "{stderr}"
    );
    // Processing files takes an embedding model.
    let (code, stderr) = run_to_exit(
        worker()
            .env("TESSERA_KNOWLEDGE__QDRANT_URL", "http://127.0.0.1:1")
            .env("TESSERA_KNOWLEDGE__WORKERS", "1"),
    );
    assert_eq!(code, 1);
    assert!(
        one_line(&stderr).starts_with("error: worker mode: no embedding model"),
        "{stderr}"
    );
}

/// The value printed after `label` on the first-run announcement.
/// A token for the client from the running binary's token endpoint.
pub async fn access_token(client: &reqwest::Client, base: &str, id: &str, secret: &str) -> String {
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", id),
        ("client_secret", secret),
    ];
    let response = client
        .post(format!("{base}/oauth/token"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json::<serde_json::Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub fn announced(running: &Running, label: &str) -> String {
    for _ in 0..100 {
        let lines = running.stdout_lines.lock().unwrap().clone();
        if let Some(value) = lines.iter().find_map(|l| l.trim().strip_prefix(label)) {
            return value.trim().to_owned();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("`{label}` was not printed");
}

#[test]
fn secrets_and_tokens_never_reach_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    let mut running = start_logging(dir.path(), "debug");
    let client_id = announced(&running, "client_id:");
    let client_secret = announced(&running, "client_secret:");
    assert!(client_secret.starts_with("tss_"));

    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = runtime.block_on(async {
        let cert = std::fs::read(dir.path().join("tls/cert.pem")).unwrap();
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&cert).unwrap())
            .build()
            .unwrap();
        let base = format!("https://localhost:{}", running.port);
        let token = access_token(&client, &base, &client_id, &client_secret).await;
        let me = client
            .get(format!("{base}/v1/organization"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(me.status(), 200);
        let wrong = [
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", "tss_wrong-secret-value"),
        ];
        assert_eq!(
            client
                .post(format!("{base}/oauth/token"))
                .form(&wrong)
                .send()
                .await
                .unwrap()
                .status(),
            401
        );
        let bad = client
            .get(format!("{base}/v1/organization"))
            .bearer_auth(format!("{token}x"))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 401);
        token
    });
    assert_eq!(terminate(&mut running.child), 0);
    let logs = running.stderr_lines.lock().unwrap().join("\n");
    assert!(
        logs.contains("request handled"),
        "the requests were logged at all"
    );
    for (what, secret) in [
        ("client secret", client_secret.as_str()),
        ("wrong secret", "tss_wrong-secret-value"),
        ("token", token.as_str()),
    ] {
        assert!(!logs.contains(secret), "the {what} appears in the logs");
    }
    let signature = token.rsplit('.').next().unwrap();
    assert!(
        !logs.contains(signature),
        "no part of the token's signature appears in the logs"
    );
}

/// The API of a running binary, as one client of its first run's credentials (the tests
/// that kill and restart it).
pub struct Api {
    pub client: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Api {
    pub async fn connect(
        data_dir: &std::path::Path,
        running: &Running,
        id: &str,
        secret: &str,
    ) -> Self {
        let cert = std::fs::read(data_dir.join("tls/cert.pem")).unwrap();
        let client = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&cert).unwrap())
            .build()
            .unwrap();
        let base = format!("https://localhost:{}", running.port);
        let token = access_token(&client, &base, id, secret).await;
        Self {
            client,
            base,
            token,
        }
    }

    pub async fn send(&self, request: reqwest::RequestBuilder, status: u16) -> serde_json::Value {
        let response = request.bearer_auth(&self.token).send().await.unwrap();
        let got = response.status().as_u16();
        let body = response
            .json::<serde_json::Value>()
            .await
            .unwrap_or(serde_json::Value::Null);
        assert_eq!(got, status, "{body}");
        body
    }
}
