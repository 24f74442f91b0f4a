//! Unchanged official OpenAI clients against the real server's `/openai/v1` on the embedded
//! model (and, for tool choice, a model of a remote OpenAI-compatible provider), each with a
//! `tsk_…` API key and the dev certificate trusted: the `openai` Python package
//! (`tests/openai-clients/check.py`), the `openai` npm package (`openai-node.mjs`), the
//! Vercel AI SDK with `@ai-sdk/openai-compatible` (`ai-sdk.mjs`) and LangChain's
//! `ChatOpenAI` (`langchain_tools.py`), and files and vector stores through both `openai`
//! packages (`vector_stores.py`, `vector-stores-node.mjs`), and batches through both
//! (`batches.py`, `batches-node.mjs`). Each script runs its checks through the client's own
//! request building and response parsing and exits non-zero on any failure; the server's
//! side then shows the usage attributed to the key. `just test` installs the clients: the npm packages into
//! `tests/openai-clients/node_modules`, the Python one into a venv whose interpreter it
//! passes in `TESSERA_OPENAI_PYTHON`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, model_dir},
    hardening3_tools::{REMOTE, ToolUpstream},
    processing::models_root,
    support::{TestApp, ok},
};

/// What the organization's administrator holds: enough to create the key and read the
/// usage of every principal.
const ADMIN: &str = "org:admin models:read chats:invoke usage:read usage:admin";

pub(crate) fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/openai-clients")
}

/// The server with the embedded chat and embedding models, a model of a remote
/// OpenAI-compatible provider (`REMOTE`, served by a loopback upstream that honours
/// `tool_choice`), an organization, and an API key of it for the clients.
struct Setup {
    app: TestApp,
    admin: String,
    key_id: String,
    secret: String,
    embedding_model: String,
    _upstream: ToolUpstream,
    _catalog: tempfile::TempDir,
}

async fn setup() -> Setup {
    let upstream = ToolUpstream::start().await;
    let catalog = tempfile::tempdir().unwrap();
    let catalog_file = catalog.path().join("catalog.toml");
    std::fs::write(&catalog_file, upstream.catalog()).unwrap();
    let app = TestApp::spawn_with(Backend::Sqlite, |settings| {
        settings.models.local_dir = Some(model_dir());
        settings.models.catalog_file = Some(catalog_file);
        settings.knowledge.embedding_model_dir = Some(models_root());
        // The clients make a few dozen requests in a row; the rate limits have their own tests.
        settings.rate_limit.enabled = false;
    })
    .await;
    let admin = app.caller_token(ADMIN).await;
    let key = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            &admin,
            &json!({"name": "openai clients", "scopes": ["models:read", "chats:invoke", "chats:read", "chats:delete", "files:read", "files:write", "files:delete", "datasets:read", "datasets:write", "datasets:delete"]}),
        )
        .await,
        201,
    )
    .await;
    let secret = key["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("tsk_"), "{key}");
    let embedding_model = app
        .state
        .embeddings
        .as_ref()
        .expect("the embedding model is loaded")
        .model()
        .to_owned();
    Setup {
        admin,
        key_id: key["id"].as_str().unwrap().to_owned(),
        secret,
        embedding_model,
        app,
        _upstream: upstream,
        _catalog: catalog,
    }
}

/// Runs one client script against the app; its JSON summary, or a failure with its stderr.
async fn run(setup: &Setup, what: &str, mut command: Command) -> Value {
    command
        .env("OPENAI_API_KEY", &setup.secret)
        .env("TESSERA_MODEL", LOCAL)
        .env("TESSERA_REMOTE_MODEL", REMOTE)
        .env("TESSERA_EMBEDDING_MODEL", &setup.embedding_model);
    run_script(&setup.app, what, command).await
}

/// Runs one client script of `tests/openai-clients` against `app`'s `/openai/v1` (its
/// `OPENAI_BASE_URL`), the dev certificate the only one trusted, with whatever else the
/// caller set on `command` (the key, the models); its JSON summary, or a failure with its
/// stderr.
pub(crate) async fn run_script(app: &TestApp, what: &str, mut command: Command) -> Value {
    let cert = tessera_api::tls::dev_certificate_paths(&app.settings.data_dir).0;
    command
        .current_dir(clients_dir())
        .env("OPENAI_BASE_URL", app.url("/openai/v1"))
        // The dev certificate is the only one trusted: Python's `ssl` (the SDK's httpx2
        // reads SSL_CERT_FILE) and Node's extra CA list.
        .env("SSL_CERT_FILE", &cert)
        .env_remove("SSL_CERT_DIR")
        .env("NODE_EXTRA_CA_CERTS", &cert)
        // Nothing from the developer's own OpenAI setup.
        .env_remove("OPENAI_ORG_ID")
        .env_remove("OPENAI_PROJECT_ID")
        .env_remove("OPENAI_LOG")
        .env_remove("AI_SDK_LOG_WARNINGS");
    let what = what.to_owned();
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap_or_else(|error| panic!("{what} does not start: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The summary (the answers, usage, parsed objects), shown with `--no-capture`.
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{what} failed against /openai/v1 (exit {:?}):\n{stderr}\n{stdout}",
        output.status.code()
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("{what} summary: {error}\n{stdout}"))
}

/// LangChain's `ChatOpenAI` (`langchain_tools.py`) binds tools with every tool choice
/// (`required`, `any`, a tool's name, OpenAI's named form) and asks for structured output by
/// function calling, on the embedded model and on the remote provider's: each is a call of
/// the right tool. LangChain's pydantic tools state no `additionalProperties`; the embedded
/// model writes only the properties they name (decision 0046), so its calls finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langchain_binds_tools_with_a_tool_choice() {
    let python = std::env::var("TESSERA_OPENAI_PYTHON")
        .expect("TESSERA_OPENAI_PYTHON names the venv's Python; `just test` installs it");
    let setup = setup().await;
    let mut command = Command::new(python);
    command.arg(clients_dir().join("langchain_tools.py"));
    let summary = run(&setup, "LangChain's ChatOpenAI", command).await;
    for model in ["embedded", "remote"] {
        assert_eq!(summary[model]["by name"]["name"], "GetTime", "{summary}");
        assert!(
            summary[model]["structured output"]["zone"].is_string(),
            "{summary}"
        );
    }
    setup.app.stop().await;
}

/// Every usage record of the organization is the key's, for both the chat and the
/// embedding model, and the key shows its last use.
async fn usage_is_the_keys(setup: &Setup) {
    let app = &setup.app;
    let usage = ok(
        app.call(
            Method::GET,
            "/v1/usage?groupBy=model&groupBy=user&limit=100",
            &setup.admin,
        )
        .await,
        200,
    )
    .await;
    let items = usage["items"].as_array().unwrap();
    for item in items {
        assert_eq!(item["userId"], json!(setup.key_id), "{usage}");
        assert!(item["requests"].as_u64().unwrap() > 0, "{usage}");
        assert!(item["totalTokens"].as_u64().unwrap() > 0, "{usage}");
    }
    for model in [LOCAL, setup.embedding_model.as_str()] {
        assert!(
            items.iter().any(|item| item["modelId"] == json!(model)),
            "no usage of {model} by the key: {usage}"
        );
    }
    let key = ok(
        app.call(
            Method::GET,
            &format!("/v1/api-keys/{}", setup.key_id),
            &setup.admin,
        )
        .await,
        200,
    )
    .await;
    assert!(key["lastUsedAt"].is_string(), "{key}");
}

/// A Node script of `tests/openai-clients`, checking the packages are installed.
fn node(script: &str) -> Command {
    let dir = clients_dir();
    assert!(
        dir.join("node_modules/openai").is_dir() && dir.join("node_modules/ai").is_dir(),
        "the npm clients are not installed in {}: run `just test` (it runs `npm ci --prefix tests/openai-clients`)",
        dir.display()
    );
    let mut command = Command::new("node");
    command.arg(dir.join(script));
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_package_works_unchanged() {
    let python = std::env::var("TESSERA_OPENAI_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TESSERA_OPENAI_PYTHON must name the Python of a venv with tests/openai-clients/requirements.txt installed; `just test` installs it"
        )
    });
    let setup = setup().await;
    let mut command = Command::new(python);
    command.arg(clients_dir().join("check.py"));
    let summary = run(&setup, "the openai Python package", command).await;
    assert_eq!(summary["client"], "openai-python");
    usage_is_the_keys(&setup).await;
    setup.app.stop().await;
}

/// `client.files` and `client.vector_stores` of the `openai` Python package
/// (`vector_stores.py`): uploads, a vector store processed from `in_progress` to `completed`,
/// search, pages, metadata, errors and deletion; the vector store is the dataset `/v1`
/// serves, and every file the script deleted is gone from `/v1/files` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_package_uses_files_and_vector_stores() {
    let python = std::env::var("TESSERA_OPENAI_PYTHON")
        .expect("TESSERA_OPENAI_PYTHON names the venv's Python; `just test` installs it");
    let setup = setup().await;
    let mut command = Command::new(python);
    command.arg(clients_dir().join("vector_stores.py"));
    let summary = run(&setup, "the openai Python package (vector stores)", command).await;
    // The bread file stays.
    the_store_is_gone_and_one_file_stays(&setup, &summary).await;
    setup.app.stop().await;
}

/// `client.files` and `client.batches` of the `openai` Python package (`batches.py`): a
/// chat completion batch with one unknown model polled to `completed`, its output and error
/// files, an embeddings batch, the list, a batch cancelled at once, and the errors; then the
/// server side: the lines were billed to the key that created the batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_package_runs_batches() {
    let python = std::env::var("TESSERA_OPENAI_PYTHON")
        .expect("TESSERA_OPENAI_PYTHON names the venv's Python; `just test` installs it");
    let setup = setup().await;
    let mut command = Command::new(python);
    command.arg(clients_dir().join("batches.py"));
    let summary = run(&setup, "the openai Python package (batches)", command).await;
    assert_eq!(
        summary["chat"]["request_counts"]["completed"], 3,
        "{summary}"
    );
    // The chat batch's three answers and those of the cancelled batch; the two embeddings.
    let cancelled = summary["cancelled"]["request_counts"]["completed"]
        .as_u64()
        .unwrap();
    batch_lines_are_the_keys(
        &setup,
        &[(LOCAL, 3 + cancelled), (&setup.embedding_model, 2)],
    )
    .await;
    setup.app.stop().await;
}

/// `client.batches` of the `openai` npm package (`batches-node.mjs`): an input uploaded with
/// `toFile` (the file part before `purpose`), an embeddings batch polled to `completed` and
/// its output read with `files.content`; each line was billed to the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_npm_package_runs_batches() {
    let command = node("batches-node.mjs");
    let setup = setup().await;
    let summary = run(&setup, "the openai npm package (batches)", command).await;
    assert_eq!(
        summary["custom_ids"],
        json!(["owls", "glaciers", "volcanoes"]),
        "{summary}"
    );
    batch_lines_are_the_keys(&setup, &[(&setup.embedding_model, 3)]).await;
    setup.app.stop().await;
}

/// Every usage record is the key's (a batch's lines run as its creator), and each model of
/// `at_least` has at least that many requests.
async fn batch_lines_are_the_keys(setup: &Setup, at_least: &[(&str, u64)]) {
    let usage = ok(
        setup
            .app
            .call(
                Method::GET,
                "/v1/usage?groupBy=model&groupBy=user&limit=100",
                &setup.admin,
            )
            .await,
        200,
    )
    .await;
    let items = usage["items"].as_array().unwrap();
    for item in items {
        assert_eq!(item["userId"], json!(setup.key_id), "{usage}");
    }
    for (model, requests) in at_least {
        let counted: u64 = items
            .iter()
            .filter(|item| item["modelId"] == json!(model))
            .map(|item| item["requests"].as_u64().unwrap())
            .sum();
        assert!(
            counted >= *requests,
            "{model}: {counted} requests, expected at least {requests}: {usage}"
        );
    }
}

/// After a client script: the vector store it deleted through `/openai/v1` is gone from
/// `/v1/datasets` too, and `/v1/files` lists what the script saw left, one file.
async fn the_store_is_gone_and_one_file_stays(setup: &Setup, summary: &Value) {
    let app = &setup.app;
    let store = summary["vector_store"].as_str().unwrap();
    crate::support::problem(
        app.call(Method::GET, &format!("/v1/datasets/{store}"), &setup.secret)
            .await,
        404,
        "not_found",
    )
    .await;
    let files = ok(app.call(Method::GET, "/v1/files", &setup.secret).await, 200).await;
    let ids: Vec<&str> = files["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file["id"].as_str().unwrap())
        .collect();
    assert_eq!(json!(ids), summary["files_left"], "{files}");
    assert_eq!(ids.len(), 1, "{files}");
}

/// `client.files` and `client.vectorStores` of the `openai` npm package
/// (`vector-stores-node.mjs`), which sends `file` before `purpose` and fills a store with its
/// `fileBatches.uploadAndPoll` and `files.uploadAndPoll` helpers; what the script deleted is
/// gone from `/v1` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_npm_package_uses_files_and_vector_stores() {
    let setup = setup().await;
    let summary = run(
        &setup,
        "the openai npm package (vector stores)",
        node("vector-stores-node.mjs"),
    )
    .await;
    // The file the batch uploaded stays.
    the_store_is_gone_and_one_file_stays(&setup, &summary).await;
    setup.app.stop().await;
}

/// `client.responses` of the `openai` Python package (`responses.py`): create, stream, a
/// conversation through `previous_response_id`, a function tool round trip, a strict JSON
/// schema, a background response polled to the end, retrieve and delete; then the server
/// side: each stored response is an answer of a Tessera chat, billed to the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_package_speaks_the_responses_api() {
    let python = std::env::var("TESSERA_OPENAI_PYTHON")
        .expect("TESSERA_OPENAI_PYTHON names the venv's Python; `just test` installs it");
    let setup = setup().await;
    let mut command = Command::new(python);
    command.arg(clients_dir().join("responses.py"));
    let summary = run(&setup, "the openai Python package (responses)", command).await;
    let app = &setup.app;
    // The second turn continued the first turn's chat: one chat, two answers.
    let second = summary["conversation"]["second"].as_str().unwrap();
    let chat = format!("cht_{}", &second["resp_".len().."resp_".len() + 32]);
    let record = ok(
        app.call(Method::GET, &format!("/v1/chats/{chat}"), &setup.secret)
            .await,
        200,
    )
    .await;
    let roles: Vec<&str> = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant"],
        "{record}"
    );
    assert_eq!(record["messages"][0]["content"], "My name is Ada.");
    usage_is_the_keys_for_chats(&setup).await;
    setup.app.stop().await;
}

/// The OpenAI Agents SDK (`agent.py`) runs a one-tool agent with its default model class,
/// the Responses API: the model calls the tool, the SDK runs it and sends the result back,
/// the model answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_agents_sdk_runs_a_tool_agent() {
    let python = std::env::var("TESSERA_OPENAI_PYTHON")
        .expect("TESSERA_OPENAI_PYTHON names the venv's Python; `just test` installs it");
    let setup = setup().await;
    let mut command = Command::new(python);
    command.arg(clients_dir().join("agent.py"));
    let summary = run(&setup, "the OpenAI Agents SDK", command).await;
    assert_eq!(summary["tool_calls"][0], "Paris", "{summary}");
    assert!(
        summary["responses"].as_array().unwrap().len() >= 2,
        "the tool's result went back to the model: {summary}"
    );
    setup.app.stop().await;
}

/// Every usage record is the key's (the responses test makes no embeddings).
async fn usage_is_the_keys_for_chats(setup: &Setup) {
    let usage = ok(
        setup
            .app
            .call(Method::GET, "/v1/usage?groupBy=user", &setup.admin)
            .await,
        200,
    )
    .await;
    let items = usage["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{usage}");
    assert_eq!(items[0]["userId"], json!(setup.key_id), "{usage}");
    // create, stream, 3 conversation turns (one refused before the model), 2 tool turns,
    // json_schema, background, delete, store=false: at least 10 model calls.
    assert!(items[0]["requests"].as_u64().unwrap() >= 10, "{usage}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_npm_package_works_unchanged() {
    let command = node("openai-node.mjs");
    let setup = setup().await;
    let summary = run(&setup, "the openai npm package", command).await;
    assert_eq!(summary["client"], "openai-node");
    usage_is_the_keys(&setup).await;
    setup.app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vercel_ai_sdk_works_unchanged() {
    let command = node("ai-sdk.mjs");
    let setup = setup().await;
    let summary = run(&setup, "the Vercel AI SDK", command).await;
    assert_eq!(summary["client"], "ai-sdk");
    usage_is_the_keys(&setup).await;
    setup.app.stop().await;
}
