//! Unchanged official Anthropic clients against the real server's `/anthropic/v1` on the
//! embedded model, each with a `tsk_…` API key (sent as `x-api-key`) and the dev
//! certificate trusted: the `anthropic` Python package (`tests/anthropic-clients/check.py`)
//! and the `@anthropic-ai/sdk` npm package (`anthropic-node.mjs`). Each script runs messages,
//! the stream helper and raw events, a tool round trip (forced, then streamed), token counts,
//! models and typed errors through the client's own code, and exits non-zero on any
//! failure; the server's side then shows every answer billed to the key. `just test`
//! installs the clients: the npm package into `tests/anthropic-clients/node_modules`, the
//! Python one into a venv whose interpreter it passes in `TESSERA_ANTHROPIC_PYTHON`. Claude
//! Code itself (`tests/claude-code`, npm) runs in print mode through the dialect to a remote
//! upstream.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    anthropic::{LARGE, large_catalog},
    chats::{LOCAL, local_app},
    hardening3_tools::ToolUpstream,
    openai::api_key,
    support::ok,
};

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/anthropic-clients")
}

/// Runs one client script against a fresh app with a key of its own; the script's JSON
/// summary, once every answer is seen billed to the key.
async fn run(what: &str, mut command: Command) -> Value {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let admin = app.caller_token("org:admin usage:read usage:admin").await;
    let (key_id, key) = api_key(
        &app,
        &admin,
        json!({"name": "anthropic clients", "scopes": ["models:read", "chats:invoke"]}),
    )
    .await;
    let cert = tessera_api::tls::dev_certificate_paths(&app.settings.data_dir).0;
    command
        .current_dir(clients_dir())
        .env("ANTHROPIC_BASE_URL", app.url("/anthropic"))
        .env("ANTHROPIC_API_KEY", &key)
        .env("TESSERA_MODEL", LOCAL)
        // The dev certificate is the only one trusted: Python's `ssl` and Node's extra CAs.
        .env("SSL_CERT_FILE", &cert)
        .env_remove("SSL_CERT_DIR")
        .env("NODE_EXTRA_CA_CERTS", &cert)
        // Nothing from the developer's own Anthropic setup.
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_LOG");
    let what_ = what.to_owned();
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap_or_else(|error| panic!("{what_} does not start: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The summary (the answers, usage, events), shown with `--no-capture`.
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{what} failed against /anthropic/v1 (exit {:?}):\n{stderr}\n{stdout}",
        output.status.code()
    );
    let summary: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("{what} summary: {error}\n{stdout}"));

    // Every answer is billed to the key: create, 2 streams, 3 tool turns.
    let usage = ok(
        app.call(Method::GET, "/v1/usage?groupBy=user", &admin)
            .await,
        200,
    )
    .await;
    let items = usage["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{usage}");
    assert_eq!(items[0]["userId"], json!(key_id), "{usage}");
    assert!(items[0]["requests"].as_u64().unwrap() >= 6, "{usage}");
    app.stop().await;
    summary
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_python_package_works_unchanged() {
    let python = std::env::var("TESSERA_ANTHROPIC_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TESSERA_ANTHROPIC_PYTHON must name the Python of a venv with tests/anthropic-clients/requirements.txt installed; `just test` installs it"
        )
    });
    let mut command = Command::new(python);
    command.arg(clients_dir().join("check.py"));
    let summary = run("the anthropic Python package", command).await;
    assert_eq!(summary["client"], "anthropic-python");
    assert_eq!(summary["models"]["ids"][0], LOCAL, "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_npm_package_works_unchanged() {
    let dir = clients_dir();
    assert!(
        dir.join("node_modules/@anthropic-ai/sdk").is_dir(),
        "the npm client is not installed in {}: run `just test` (it runs `npm ci --prefix tests/anthropic-clients`)",
        dir.display()
    );
    let mut command = Command::new("node");
    command.arg(dir.join("anthropic-node.mjs"));
    let summary = run("the @anthropic-ai/sdk npm package", command).await;
    assert_eq!(summary["client"], "anthropic-node");
    assert!(summary["tools"]["call"]["city"].is_string(), "{summary}");
}

/// Claude Code itself (`@anthropic-ai/claude-code`, npm), unchanged, in print mode with
/// `ANTHROPIC_BASE_URL` at the server's `/anthropic` and a `tsk_…` key: its requests (its
/// system prompt, a dozen tools, adaptive thinking, `context_management`) go through the
/// dialect to a remote OpenAI-compatible upstream, and the upstream's answer is what it
/// prints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_answers_through_the_dialect() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/claude-code");
    let claude = dir.join("node_modules/.bin/claude");
    assert!(
        claude.exists(),
        "Claude Code is not installed in {}: run `just test` (it runs `npm ci --prefix tests/claude-code`)",
        dir.display()
    );
    let upstream = ToolUpstream::start().await;
    let (app, _dir) = local_app(Backend::Sqlite, Some(large_catalog(&upstream))).await;
    let admin = app.caller_token("org:admin").await;
    let (_, key) = api_key(
        &app,
        &admin,
        json!({"name": "claude code", "scopes": ["models:read", "chats:invoke"]}),
    )
    .await;
    let cert = tessera_api::tls::dev_certificate_paths(&app.settings.data_dir).0;
    // Its own home and working folder: nothing of the developer's Claude Code setup.
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new(claude);
    command
        .args(["-p", "Say hello", "--model", LARGE])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("ANTHROPIC_BASE_URL", app.url("/anthropic"))
        .env("ANTHROPIC_API_KEY", &key)
        .env("NODE_EXTRA_CA_CERTS", &cert)
        .env("SSL_CERT_FILE", &cert)
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_MODEL")
        .env_remove("CLAUDE_CONFIG_DIR");
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("Claude Code starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("Hello from the stub."),
        "Claude Code through /anthropic (exit {:?}):\n{stdout}\n{stderr}",
        output.status.code()
    );
    let sent = upstream.requests();
    assert!(
        sent.iter().any(|request| request["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool["function"]["name"] == "Bash"))),
        "Claude Code's tools reached the upstream: {sent:?}"
    );
    app.stop().await;
}
