//! The unchanged official Anthropic Python package (`tests/anthropic-clients/check.py`)
//! against the real server's `/anthropic/v1` on the embedded model, with a `tsk_…` API key
//! (sent as `x-api-key`) and the dev certificate trusted: messages, the stream helper and
//! raw events, a tool round trip (forced, then streamed), models and typed errors. The
//! script exits non-zero on any failure; the server's side then shows every request billed
//! to the key. `just test` installs the package into a venv whose interpreter it passes in
//! `TESSERA_ANTHROPIC_PYTHON`.

use std::{path::Path, process::Command};

use reqwest::Method;
use serde_json::json;
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, local_app},
    openai::api_key,
    support::ok,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_python_package_works_unchanged() {
    let python = std::env::var("TESSERA_ANTHROPIC_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TESSERA_ANTHROPIC_PYTHON must name the Python of a venv with tests/anthropic-clients/requirements.txt installed; `just test` installs it"
        )
    });
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let admin = app.caller_token("org:admin usage:read usage:admin").await;
    let (key_id, key) = api_key(
        &app,
        &admin,
        json!({"name": "anthropic clients", "scopes": ["models:read", "chats:invoke"]}),
    )
    .await;
    let cert = tessera_api::tls::dev_certificate_paths(&app.settings.data_dir).0;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/anthropic-clients");
    let mut command = Command::new(python);
    command
        .arg(dir.join("check.py"))
        .current_dir(&dir)
        .env("ANTHROPIC_BASE_URL", app.url("/anthropic"))
        .env("ANTHROPIC_API_KEY", &key)
        .env("TESSERA_MODEL", LOCAL)
        // The dev certificate is the only one trusted.
        .env("SSL_CERT_FILE", &cert)
        .env_remove("SSL_CERT_DIR")
        // Nothing from the developer's own Anthropic setup.
        .env_remove("ANTHROPIC_AUTH_TOKEN")
        .env_remove("ANTHROPIC_LOG");
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("the anthropic check starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the anthropic Python package failed against /anthropic/v1 (exit {:?}):\n{stderr}\n{stdout}",
        output.status.code()
    );
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["client"], "anthropic-python");

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
}
