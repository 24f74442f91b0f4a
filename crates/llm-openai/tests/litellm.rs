//! The adapter against a real LiteLLM proxy (Python), whose models answer from
//! `mock_response` (`tests/litellm/config.yaml`), so no provider is called.
//!
//! The harness installs LiteLLM when missing, by running `tests/litellm/setup.sh`
//! (idempotent; a virtual environment at `$HOME/.cache/tessera-venvs/litellm`, or
//! `$TESSERA_LITELLM_VENV`; about a minute or two the first time), starts the proxy on a
//! free loopback port, waits until it is ready, and stops it (its whole process group) at
//! the end. When LiteLLM cannot be installed or started, the test FAILS with the reason: it
//! never passes without having talked to the proxy.
//!
//! Everything lives in one test so that one proxy (about 10 s to start) serves every check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    fs::File,
    hash::{BuildHasher, RandomState},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use tessera_llm_openai::{OpenAiChatModel, OpenAiConfig, RetryPolicy};
use tessera_models::{
    ChatEvent, ChatMessage, ChatModel, ChatRequest, FinishReason, ProviderError, Role, complete,
};

/// The `mock_response` of `mock-gpt` in `tests/litellm/config.yaml`.
const MOCK_TEXT: &str = "Hello from the LiteLLM mock, café ☕.";

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn venv() -> PathBuf {
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

/// A running proxy; dropping it kills its process group.
struct LiteLlm {
    child: Child,
    base_url: String,
    master_key: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LiteLlm {
    async fn start() -> Self {
        let venv = venv();
        install(&venv).await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let master_key = format!("sk-{}", random_hex(32));
        let dir = tempfile::tempdir().expect("a temporary directory");
        let log = dir.path().join("litellm.log");
        let log_file = File::create(&log).expect("the proxy's log file");
        let config = manifest_dir().join("tests/litellm/config.yaml");
        let litellm = venv.join("bin/litellm");
        eprintln!(
            "litellm: starting {} --config {} --host 127.0.0.1 --port {port} (log: {})",
            litellm.display(),
            config.display(),
            log.display()
        );
        // `timeout` bounds the proxy's life even if this process dies without dropping it.
        let child = Command::new("timeout")
            .args(["--kill-after=5s", "600s"])
            .arg(&litellm)
            .arg("--config")
            .arg(&config)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .env("LITELLM_MASTER_KEY", &master_key)
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("NO_DOCS", "True")
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("the log file"))
            .stderr(log_file)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "LiteLLM tests FAILED: cannot start {}: {e}",
                    litellm.display()
                )
            });
        let mut proxy = Self {
            child,
            base_url: format!("http://127.0.0.1:{port}"),
            master_key,
            log,
            _dir: dir,
        };
        proxy.wait_until_ready().await;
        proxy
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<_> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    async fn wait_until_ready(&mut self) {
        let started = Instant::now();
        // As the API does at start-up (reqwest's rustls needs a process-wide provider).
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("an HTTP client");
        let url = format!("{}/health/liveliness", self.base_url);
        loop {
            if let Some(status) = self.child.try_wait().expect("the proxy's status") {
                panic!(
                    "LiteLLM tests FAILED: the proxy exited during start-up ({status}):\n{}",
                    self.log_tail()
                );
            }
            if let Ok(response) = http.get(&url).send().await
                && response.status().is_success()
            {
                eprintln!(
                    "litellm: ready at {} after {:.1} s",
                    self.base_url,
                    started.elapsed().as_secs_f64()
                );
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "LiteLLM tests FAILED: the proxy was not ready within 180 s:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    fn model(&self, key: &str, retry: RetryPolicy) -> OpenAiChatModel {
        OpenAiChatModel::new(
            OpenAiConfig::new(format!("{}/v1", self.base_url))
                .with_api_key(key)
                .with_timeouts(Duration::from_secs(30), Duration::from_secs(30))
                .with_retry(retry),
        )
        .expect("the adapter")
    }
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        // The group: `timeout`, the proxy, and anything the proxy started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages: vec![
            ChatMessage::new(Role::System, "Answer briefly."),
            ChatMessage::new(Role::User, "Say hello."),
        ],
        max_tokens: Some(64),
        temperature: Some(0.2),
        ..ChatRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_proxy_plain_streamed_and_error_answers() {
    let proxy = LiteLlm::start().await;
    let retry = RetryPolicy {
        max_attempts: 2,
        backoff_base: Duration::from_millis(50),
        max_delay: Duration::from_millis(200),
    };
    let model = proxy.model(&proxy.master_key, retry);

    eprintln!("litellm: a plain (folded) answer");
    let completion = complete(&model, request("mock-gpt"))
        .await
        .expect("a plain answer");
    assert_eq!(completion.content, MOCK_TEXT);
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert!(completion.usage.input_tokens > 0, "{:?}", completion.usage);
    assert!(completion.usage.output_tokens > 0, "{:?}", completion.usage);
    assert!(completion.tool_calls.is_empty());

    eprintln!("litellm: a streamed answer");
    let stream = model
        .stream(request("mock-gpt"))
        .await
        .expect("a streamed answer");
    let items: Vec<_> = tokio::time::timeout(Duration::from_secs(60), stream.collect())
        .await
        .expect("the stream ended");
    let events: Vec<ChatEvent> = items
        .into_iter()
        .map(|item| item.expect("no error in the stream"))
        .collect();
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ChatEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() > 1, "streamed in several pieces: {deltas:?}");
    assert_eq!(deltas.concat(), MOCK_TEXT);
    let finishes: Vec<_> = events
        .iter()
        .filter(|event| matches!(event, ChatEvent::Finish { .. }))
        .collect();
    assert_eq!(finishes.len(), 1, "{events:?}");
    match events.last() {
        Some(ChatEvent::Finish { reason, usage }) => {
            assert_eq!(*reason, FinishReason::Stop);
            assert!(
                usage.input_tokens > 0 && usage.output_tokens > 0,
                "{usage:?}"
            );
        }
        other => panic!("the last event is not Finish: {other:?}"),
    }

    eprintln!("litellm: an unknown model");
    match model.stream(request("no-such-model")).await.err() {
        Some(ProviderError::InvalidRequest(message)) => {
            assert!(message.contains("Invalid model name"), "{message}");
            assert!(message.contains("no-such-model"), "{message}");
        }
        other => panic!("expected InvalidRequest with LiteLLM's message, got {other:?}"),
    }

    eprintln!("litellm: a rate-limited model (429, retried, then Unavailable)");
    match model.stream(request("mock-rate-limited")).await.err() {
        Some(ProviderError::Unavailable { message, .. }) => {
            assert!(message.contains("rate limit"), "{message}");
        }
        other => panic!("expected Unavailable with LiteLLM's message, got {other:?}"),
    }
}
