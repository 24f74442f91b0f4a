//! OpenTelemetry traces exported over OTLP/HTTP to a receiver that decodes them with the
//! official `opentelemetry-proto` package (`tests/observability/otlp_receiver.py`, in the
//! venv whose interpreter `just test` passes in `TESSERA_OBSERVABILITY_PYTHON`); the same
//! process plays the upstream model (an OpenAI-compatible stub that records the
//! `traceparent` it receives). A streamed RAG completion sent with a `traceparent` must
//! give the span tree HTTP → completion (GenAI attributes) → retrieval and upstream, in the
//! caller's trace, and the upstream must see that trace.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_api::config::Settings;
use tessera_store::Backend;

use crate::{
    chats::chunks,
    processing::{MARKDOWN, knowledge_app_with},
    rag::dataset_with,
    support::ok,
};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN_ID: &str = "00f067aa0ba902b7";

/// The receiver's process, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_receiver() -> Receiver {
    let python = std::env::var("TESSERA_OBSERVABILITY_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TESSERA_OBSERVABILITY_PYTHON must name the Python of a venv with tests/observability/requirements.txt installed; `just test` installs it"
        )
    });
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/observability/otlp_receiver.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("the receiver did not start: {first:?}"))
        .parse()
        .unwrap();
    Receiver { child, port }
}

/// What the receiver got until `ready` holds.
async fn received_until(receiver: &Receiver, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let received: Value = reqwest::get(format!("http://127.0.0.1:{}/received", receiver.port))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ready(&received) {
            return received;
        }
        assert!(Instant::now() < deadline, "never exported: {received:#}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn spans_named<'a>(received: &'a Value, name: &str) -> Vec<&'a Value> {
    received["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|span| span["name"] == name)
        .collect()
}

fn only<'a>(received: &'a Value, name: &str) -> &'a Value {
    let found = spans_named(received, name);
    assert_eq!(found.len(), 1, "spans named {name}: {found:#?}");
    found[0]
}

#[tokio::test]
async fn a_streamed_rag_completion_is_one_trace_from_the_caller_to_the_upstream() {
    let receiver = start_receiver();
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let mut settings = Settings::default();
    settings.telemetry.otlp_endpoint = Some(endpoint.clone());
    settings.telemetry.service_name = "tessera-test".into();
    settings.telemetry.resource_attributes = "deployment.environment=test".into();
    // Quiet logs must not silence the spans: each layer filters for itself.
    settings.log = "warn".into();
    let mut telemetry = tessera_api::telemetry::init(&settings).expect("telemetry starts");

    let catalog_dir = tempfile::tempdir().unwrap();
    let catalog = catalog_dir.path().join("catalog.toml");
    std::fs::write(
        &catalog,
        format!(
            r#"
[providers.stub]
kind = "openai"
base_url = "{endpoint}/v1"

[[models]]
id = "stub/chat"
display_name = "Stub"
provider = "stub"
model_name = "stub-model"
context_window = 8192
capabilities = {{ streaming = true }}
"#
        ),
    )
    .unwrap();
    let app = knowledge_app_with(Backend::Sqlite, |app_settings| {
        app_settings.models.catalog_file = Some(catalog);
        app_settings.telemetry = settings.telemetry.clone();
    })
    .await;
    let token = app
        .caller_token(
            "files:read files:write datasets:read datasets:write models:read models:write chats:invoke",
        )
        .await;
    let dataset = dataset_with(
        &app,
        &token,
        "Help",
        &[("help.md", MARKDOWN.as_bytes().to_vec())],
    )
    .await;
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &token,
            &json!({"parentModelId": "stub/chat", "displayName": "Helpdesk"}),
        )
        .await,
        201,
    )
    .await;
    let model = model["id"].as_str().unwrap();
    ok(
        app.call_json(
            Method::POST,
            &format!("/v1/models/{model}/datasets"),
            &token,
            &json!({"datasetId": dataset, "usageType": "rag"}),
        )
        .await,
        201,
    )
    .await;

    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{TRACE_ID}-{PARENT_SPAN_ID}-01"))
        .json(&json!({
            "modelId": model,
            "messages": [{"role": "user", "content": "How do I reset my password?"}],
            "stream": true
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let events = chunks(&response.text().await.unwrap());
    let usage = events.last().unwrap()["usage"].clone();
    assert_eq!(usage["inputTokens"], 21, "{usage}");
    assert_eq!(usage["cachedInputTokens"], 16, "{usage}");

    let received = received_until(&receiver, |received| {
        received["spans"].as_array().is_some_and(|spans| {
            spans.iter().any(|span| span["name"] == "POST /v1/chats")
                && spans.iter().any(|span| span["name"] == "chat stub-model")
        })
    })
    .await;

    // The HTTP span continues the caller's trace.
    let http = only(&received, "POST /v1/chats");
    assert_eq!(http["trace_id"], TRACE_ID);
    assert_eq!(http["parent_span_id"], PARENT_SPAN_ID);
    assert_eq!(http["kind"], 2, "SERVER");
    assert_eq!(http["attributes"]["http.route"], "/v1/chats");
    assert_eq!(http["attributes"]["http.request.method"], "POST");
    assert_eq!(http["attributes"]["http.response.status_code"], 200);
    assert_eq!(http["resource"]["service.name"], "tessera-test");
    assert_eq!(http["resource"]["deployment.environment"], "test");

    // The completion, its child, with the GenAI attributes and what the upstream reported.
    let completion = only(&received, &format!("chat {model}"));
    assert_eq!(completion["trace_id"], TRACE_ID);
    assert_eq!(completion["parent_span_id"], http["span_id"]);
    let attributes = &completion["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "chat");
    assert_eq!(attributes["gen_ai.provider.name"], "stub");
    assert_eq!(attributes["gen_ai.request.model"], model);
    assert_eq!(attributes["gen_ai.response.model"], "stub/chat");
    assert_eq!(attributes["gen_ai.usage.input_tokens"], 21);
    assert_eq!(attributes["gen_ai.usage.output_tokens"], 3);
    assert_eq!(attributes["gen_ai.usage.cache_read.input_tokens"], 16);
    assert_eq!(
        attributes["gen_ai.response.finish_reasons"],
        json!(["stop"])
    );
    assert!(
        attributes.get("gen_ai.input.messages").is_none(),
        "content is not captured by default: {attributes:#}"
    );

    // Retrieval and the upstream call are the completion's children.
    let retrieval = only(&received, "retrieval");
    assert_eq!(retrieval["parent_span_id"], completion["span_id"]);
    assert_eq!(retrieval["attributes"]["tessera.datasets"], 1);
    assert!(retrieval["attributes"]["tessera.sources"].as_i64().unwrap() >= 1);
    let upstream = only(&received, "chat stub-model");
    assert_eq!(upstream["trace_id"], TRACE_ID);
    assert_eq!(upstream["parent_span_id"], completion["span_id"]);
    assert_eq!(upstream["kind"], 3, "CLIENT");
    assert_eq!(upstream["attributes"]["gen_ai.request.model"], "stub-model");
    assert_eq!(upstream["attributes"]["gen_ai.usage.output_tokens"], 3);
    assert_eq!(
        upstream["attributes"]["gen_ai.usage.cache_read.input_tokens"],
        16
    );

    // The upstream saw the same trace, with the upstream span as the parent.
    let calls = received["upstream"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let upstream_id = upstream["span_id"].as_str().unwrap();
    assert_eq!(
        calls[0]["traceparent"],
        format!("00-{TRACE_ID}-{upstream_id}-01").as_str()
    );

    app.stop().await;
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap();
}
