//! Real OpenAI-compatible servers for tests. A LiteLLM proxy (Python): OpenAI-compatible models that answer from
//! `mock_response`, so no provider is called. [`LiteLlm::start`] installs LiteLLM when
//! missing (`tests/litellm/setup.sh`: a virtual environment at `$HOME/.cache/tessera-venvs/litellm`
//! or `$TESSERA_LITELLM_VENV`, a minute or two the first time), starts the proxy on a free
//! loopback port with the given config, waits until it is ready, and kills its process group
//! when dropped. When LiteLLM cannot be installed or started, it panics with the reason: a
//! test never passes without having talked to the proxy. [`LlamaCppServer`] serves a real
//! GGUF model through llama-cpp-python where its (locally built) wheel is available.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    fs::File,
    hash::{BuildHasher, RandomState},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where LiteLLM is installed: `$TESSERA_LITELLM_VENV`, or `~/.cache/tessera-venvs/litellm`.
pub fn venv() -> PathBuf {
    if let Some(path) = std::env::var_os("TESSERA_LITELLM_VENV") {
        return PathBuf::from(path);
    }
    let home = std::env::var_os("HOME")
        .expect("LiteLLM tests: HOME is not set, so there is no place for the LiteLLM venv");
    PathBuf::from(home).join(".cache/tessera-venvs/litellm")
}

/// Runs `setup.sh`, which installs LiteLLM unless it is already there.
async fn install(venv: &Path) {
    let script = manifest_dir().join("tests/litellm/setup.sh");
    eprintln!(
        "litellm: running {} {} (installs 'litellm[proxy]' with pip when missing)",
        script.display(),
        venv.display()
    );
    let started = Instant::now();
    let output = tokio::time::timeout(
        Duration::from_secs(900),
        tokio::process::Command::new("bash")
            .arg(&script)
            .arg(venv)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| {
        panic!(
            "LiteLLM tests FAILED: {} did not finish within 15 minutes",
            script.display()
        )
    })
    .unwrap_or_else(|e| panic!("LiteLLM tests FAILED: cannot run {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprint!("{stdout}{stderr}");
    assert!(
        output.status.success(),
        "LiteLLM tests FAILED: LiteLLM could not be installed into {} ({}; is PyPI reachable?):\n{stderr}",
        venv.display(),
        output.status,
    );
    eprintln!(
        "litellm: setup took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn random_hex(bytes: usize) -> String {
    (0..bytes.div_ceil(8))
        .map(|_| format!("{:016x}", RandomState::new().hash_one(Instant::now())))
        .collect::<String>()[..bytes * 2]
        .to_owned()
}

/// A server process started for a test: its output goes to a log file, `timeout` bounds its
/// life even if the test process dies without dropping it, and dropping it kills its
/// process group.
struct ServerProcess {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl ServerProcess {
    /// Starts `program args…` (under `timeout`) with its output in a temporary log file.
    fn spawn(name: &str, program: &Path, configure: impl FnOnce(&mut Command)) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let log = dir.path().join(format!("{name}.log"));
        let log_file = File::create(&log).expect("the server's log file");
        let mut command = Command::new("timeout");
        command.args(["--kill-after=5s", "600s"]).arg(program);
        configure(&mut command);
        command
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("the log file"))
            .stderr(log_file)
            .process_group(0);
        eprintln!("{name}: starting {command:?} (log: {})", log.display());
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "{name} tests FAILED: cannot start {}: {e}",
                program.display()
            )
        });
        Self {
            child,
            log,
            _dir: dir,
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<_> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Polls `url` until it answers 2xx; panics with the log when the process exits or
    /// `limit` passes first.
    async fn wait_until_ready(&mut self, name: &str, url: &str, limit: Duration) {
        let started = Instant::now();
        // As the API does at start-up (reqwest's rustls needs a process-wide provider).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("an HTTP client");
        loop {
            if let Some(status) = self.child.try_wait().expect("the server's status") {
                panic!(
                    "{name} tests FAILED: the server exited during start-up ({status}):\n{}",
                    self.log_tail()
                );
            }
            if let Ok(response) = http.get(url).send().await
                && response.status().is_success()
            {
                eprintln!(
                    "{name}: ready after {:.1} s",
                    started.elapsed().as_secs_f64()
                );
                return;
            }
            assert!(
                started.elapsed() < limit,
                "{name} tests FAILED: the server was not ready within {limit:?}:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // The group: `timeout`, the server, and anything the server started. `--` is not
        // optional: procps-ng 4.0 reads `kill -KILL -<pgid>` as pid -1 (every process).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A running proxy; dropping it kills its process group.
pub struct LiteLlm {
    _process: ServerProcess,
    /// `http://127.0.0.1:<port>` (the OpenAI API is under `/v1`).
    pub base_url: String,
    /// The key clients authenticate with (empty for a proxy started without one).
    pub master_key: String,
}

impl LiteLlm {
    /// Installs LiteLLM when missing and starts a proxy serving the models of `config`.
    pub async fn start(config: &Path) -> Self {
        Self::launch(config, Some(format!("sk-{}", random_hex(32)))).await
    }

    /// As [`LiteLlm::start`], but the proxy asks for no key (for clients configured
    /// without one, such as a catalog provider without `api_key_env`).
    pub async fn start_without_key(config: &Path) -> Self {
        Self::launch(config, None).await
    }

    async fn launch(config: &Path, master_key: Option<String>) -> Self {
        let venv = venv();
        install(&venv).await;
        let port = free_port();
        let mut process = ServerProcess::spawn("litellm", &venv.join("bin/litellm"), |command| {
            command
                .arg("--config")
                .arg(config)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                .env("NO_DOCS", "True");
            match &master_key {
                Some(key) => command.env("LITELLM_MASTER_KEY", key),
                None => command.env(
                    "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY",
                    "true",
                ),
            };
        });
        let base_url = format!("http://127.0.0.1:{port}");
        process
            .wait_until_ready(
                "litellm",
                &format!("{base_url}/health/liveliness"),
                Duration::from_secs(180),
            )
            .await;
        Self {
            _process: process,
            base_url,
            master_key: master_key.unwrap_or_default(),
        }
    }
}

/// A llama-cpp-python server (`python -m llama_cpp.server`) serving a GGUF model on a free
/// loopback port; dropping it kills its process group.
pub struct LlamaCppServer {
    _process: ServerProcess,
    /// `http://127.0.0.1:<port>` (the OpenAI API is under `/v1`).
    pub base_url: String,
}

impl LlamaCppServer {
    /// Starts a server for `model` with llama-cpp-python built from the wheel in
    /// `~/.cache/tessera-wheels` (`crates/llm-local/benches/setup_llama_cpp.sh` builds it,
    /// about 20 minutes, once). Without that wheel it returns `None` after saying why on
    /// stderr: PyPI has no prebuilt wheel, and building one is too long for a test run.
    /// When the wheel is there and the server still cannot start, it panics.
    pub async fn start(model: &Path) -> Option<Self> {
        let home = std::env::var_os("HOME").expect("HOME is not set");
        let wheels = PathBuf::from(&home).join(".cache/tessera-wheels");
        let venv = PathBuf::from(&home).join(".cache/tessera-venvs/llama-cpp-server");
        let script = manifest_dir().join("tests/llama_cpp/setup.sh");
        let output = tokio::process::Command::new("bash")
            .arg(&script)
            .arg(&wheels)
            .arg(&venv)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "llama.cpp tests FAILED: cannot run {}: {e}",
                    script.display()
                )
            });
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprint!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
        match output.status.code() {
            Some(0) => {}
            // The script's "no wheel" exit.
            Some(3) => return None,
            _ => panic!(
                "llama.cpp tests FAILED: {} failed:\n{stderr}",
                script.display()
            ),
        }
        let port = free_port();
        let mut process = ServerProcess::spawn("llama.cpp", &venv.join("bin/python"), |command| {
            command
                .args(["-m", "llama_cpp.server", "--model"])
                .arg(model)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--n_ctx", "2048", "--n_threads", "1"])
                // By default a request waiting for the model ends the stream being answered;
                // the ChatModel contract's concurrent requests must each be answered whole.
                .args(["--interrupt_requests", "false"])
                // Tools need a chat format that renders them; SmolLM2 speaks ChatML.
                .args(["--chat_format", "chatml-function-calling"]);
        });
        let base_url = format!("http://127.0.0.1:{port}");
        process
            .wait_until_ready(
                "llama.cpp",
                &format!("{base_url}/v1/models"),
                Duration::from_secs(120),
            )
            .await;
        Some(Self {
            _process: process,
            base_url,
        })
    }
}

/// Reads one HTTP/1.1 request from `socket`, for tests' loopback upstreams: its head (the
/// request line and headers, as text) and its `Content-Length` bytes of body. `None` when
/// the peer closes or fails first.
pub async fn read_http_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut received = Vec::new();
    let mut buffer = [0_u8; 8192];
    let (head_end, length) = loop {
        match socket.read(&mut buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
        }
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while received.len() < head_end + length {
        match socket.read(&mut buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
        }
    }
    let head = String::from_utf8_lossy(&received[..head_end]).into_owned();
    Some((head, received[head_end..head_end + length].to_vec()))
}
