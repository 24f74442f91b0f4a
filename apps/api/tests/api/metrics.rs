//! `GET /metrics` on its own plain-HTTP listener, read by the official Python client's
//! parser (`prometheus_client`, `tests/observability/parse_metrics.py`, in the venv whose
//! interpreter `just test` passes in `TESSERA_OBSERVABILITY_PYTHON`). The test drives two
//! completions (one streamed), a file upload and a request the rate limit refuses, then
//! checks that each counter and histogram moved by exactly what was done.

use std::{
    io::Write,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, chunks, model_dir},
    processing::{models_root, upload},
    support::{TestApp, ok},
};

/// Requests per minute of one principal: the completions' caller stays under it, the
/// other caller goes one over.
const PER_PRINCIPAL: u32 = 5;

/// One parsed sample.
#[derive(Debug)]
struct Sample {
    family: String,
    kind: String,
    name: String,
    labels: serde_json::Map<String, Value>,
    value: f64,
}

/// The samples of a scrape, as the official Prometheus client parses them.
struct Scrape(Vec<Sample>);

impl Scrape {
    /// The value of the one sample named `name` whose labels include `labels`; 0 when
    /// there is none (a counter never moved is not rendered).
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let matching: Vec<&Sample> = self.matching(name, labels);
        assert!(
            matching.len() <= 1,
            "several samples of {name} {labels:?}: {matching:?}"
        );
        matching.first().map_or(0.0, |sample| sample.value)
    }

    fn matching(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Sample> {
        self.0
            .iter()
            .filter(|sample| sample.name == name)
            .filter(|sample| {
                labels
                    .iter()
                    .all(|(key, value)| sample.labels.get(*key) == Some(&json!(value)))
            })
            .collect()
    }

    fn kind(&self, family: &str) -> &str {
        self.0
            .iter()
            .find(|sample| sample.family == family)
            .map_or("absent", |sample| sample.kind.as_str())
    }
}

async fn scrape(app: &TestApp) -> Scrape {
    let address = app.metrics.expect("metrics are on in this test");
    let response = reqwest::get(format!("http://{address}/metrics"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        response.headers()
    );
    let text = response.text().await.unwrap();
    Scrape(parse(&text))
}

fn parse(text: &str) -> Vec<Sample> {
    let python = std::env::var("TESSERA_OBSERVABILITY_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TESSERA_OBSERVABILITY_PYTHON must name the Python of a venv with tests/observability/requirements.txt installed; `just test` installs it"
        )
    });
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/observability/parse_metrics.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "prometheus_client refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let sample: Value = serde_json::from_str(line).unwrap();
            Sample {
                family: sample["family"].as_str().unwrap().to_owned(),
                kind: sample["type"].as_str().unwrap().to_owned(),
                name: sample["name"].as_str().unwrap().to_owned(),
                labels: sample["labels"].as_object().unwrap().clone(),
                value: sample["value"].as_f64().unwrap(),
            }
        })
        .collect()
}

/// Scrapes until `ready` holds (background work finishes after its request was answered).
async fn scrape_until(app: &TestApp, ready: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let scraped = scrape(app).await;
        if ready(&scraped) {
            return scraped;
        }
        assert!(Instant::now() < deadline, "the metrics never got there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn counters_and_histograms_move_by_exactly_what_was_done() {
    let app = TestApp::spawn_with(Backend::Sqlite, |settings| {
        settings.metrics.listen = "127.0.0.1:0".into();
        settings.models.local_dir = Some(model_dir());
        settings.knowledge.embedding_model_dir = Some(models_root());
        settings.knowledge.poll_secs = 1;
        settings.rate_limit.principal_per_minute = PER_PRINCIPAL;
    })
    .await;

    // Before anything: the build is announced, nothing has been served.
    let before = scrape(&app).await;
    assert_eq!(before.kind("tessera_build_info"), "gauge");
    assert_eq!(
        before.value(
            "tessera_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    assert!(
        before
            .matching("http_server_request_duration_seconds_count", &[])
            .is_empty()
    );

    let token = app
        .caller_token("chats:invoke files:read files:write")
        .await;
    // Two completions, the second streamed; their usage is what the token metrics must sum.
    let ask = |text: &str| {
        json!({
            "modelId": LOCAL,
            "messages": [{"role": "user", "content": text}],
            "maxTokens": 8,
            "temperature": 0
        })
    };
    let answered = ok(
        app.call_json(Method::POST, "/v1/chats", &token, &ask("Say hi."))
            .await,
        201,
    )
    .await;
    let mut body = ask("Name a color.");
    body["stream"] = json!(true);
    let response = app
        .call_json(Method::POST, "/v1/chats", &token, &body)
        .await;
    assert_eq!(response.status(), 200);
    let streamed = chunks(&response.text().await.unwrap());
    let usages = [
        answered["usage"].clone(),
        streamed.last().unwrap()["usage"].clone(),
    ];
    let total = |field: &str| {
        usages
            .iter()
            .map(|usage| usage[field].as_f64().unwrap())
            .sum::<f64>()
    };
    // One file, processed in the background.
    let file = upload(
        &app,
        &token,
        "notes.txt",
        b"Tessera exports metrics.\n".repeat(40),
    )
    .await;

    // Another principal (of another organization) goes one request over its rate limit.
    let reader = app.caller_token("models:read").await;
    let mut statuses = Vec::new();
    for _ in 0..=PER_PRINCIPAL {
        statuses.push(
            app.call(Method::GET, "/v1/models/catalog", &reader)
                .await
                .status()
                .as_u16(),
        );
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        1,
        "{statuses:?}"
    );

    let after = scrape_until(&app, |scrape| {
        scrape.value("tessera_file_jobs_total", &[("state", "ready")]) == 1.0
    })
    .await;

    // HTTP requests by route template, method and status.
    let requests = |method: &str, route: &str, status: &str| {
        after.value(
            "http_server_request_duration_seconds_count",
            &[
                ("http_request_method", method),
                ("http_route", route),
                ("http_response_status_code", status),
            ],
        )
    };
    assert_eq!(
        after.kind("http_server_request_duration_seconds"),
        "histogram"
    );
    assert_eq!(requests("POST", "/v1/chats", "201"), 1.0);
    assert_eq!(requests("POST", "/v1/chats", "200"), 1.0);
    assert_eq!(requests("POST", "/v1/files", "201"), 1.0);
    assert_eq!(
        requests("GET", "/v1/models/catalog", "200"),
        f64::from(PER_PRINCIPAL)
    );
    assert_eq!(requests("GET", "/v1/models/catalog", "429"), 1.0);
    assert_eq!(requests("POST", "/oauth/token", "200"), 2.0);
    assert_eq!(
        after.value(
            "http_server_request_duration_seconds_bucket",
            &[
                ("http_route", "/v1/models/catalog"),
                ("http_response_status_code", "429"),
                ("le", "+Inf"),
            ]
        ),
        1.0
    );
    assert_eq!(
        after.value("tessera_refusals_total", &[("reason", "rate_limit")]),
        1.0
    );

    // Completions, tokens, time to first token, upstream duration, nothing left in flight.
    let model = [
        ("gen_ai_request_model", LOCAL),
        ("gen_ai_provider_name", "local"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut labels = model.to_vec();
        labels.extend_from_slice(extra);
        labels
    };
    assert_eq!(
        after.value(
            "tessera_chat_completions_total",
            &with(&[("outcome", "finished")])
        ),
        2.0
    );
    assert_eq!(after.kind("gen_ai_client_token_usage"), "histogram");
    for (kind, field) in [("input", "inputTokens"), ("output", "outputTokens")] {
        let typed = with(&[("gen_ai_token_type", kind)]);
        assert_eq!(after.value("gen_ai_client_token_usage_count", &typed), 2.0);
        assert_eq!(
            after.value("gen_ai_client_token_usage_sum", &typed),
            total(field)
        );
    }
    assert_eq!(
        after.value("gen_ai_server_time_to_first_token_seconds_count", &model),
        2.0
    );
    assert_eq!(
        after.value(
            "gen_ai_client_operation_duration_seconds_count",
            &with(&[("gen_ai_operation_name", "chat")])
        ),
        2.0
    );
    assert_eq!(after.value("tessera_generations_in_flight", &[]), 0.0);

    // The file: one attempt that made it ready, its chunks embedded, nothing left queued.
    let chunk_count = ok(
        app.call(
            Method::GET,
            &format!("/v1/files/{}", file["id"].as_str().unwrap()),
            &token,
        )
        .await,
        200,
    )
    .await["chunkCount"]
        .as_f64()
        .unwrap();
    assert_eq!(
        after.value(
            "tessera_file_processing_duration_seconds_count",
            &[("state", "ready")]
        ),
        1.0
    );
    assert!(after.value("tessera_embedding_batches_total", &[("outcome", "ok")]) >= 1.0);
    assert_eq!(
        after.value("tessera_embedding_texts_total", &[]),
        chunk_count
    );
    assert_eq!(
        after.value("tessera_file_jobs", &[("state", "queued")]),
        0.0
    );
    assert_eq!(
        after.value("tessera_file_jobs", &[("state", "processing")]),
        0.0
    );
    assert_eq!(after.value("tessera_webhook_outbox_depth", &[]), 0.0);

    // The database pool.
    let pool = [("db_client_connection_pool_name", "sqlite")];
    assert!(after.value("db_client_connection_max", &pool) >= 1.0);
    assert!(after.value("db_client_connection_wait_time_seconds_count", &pool) > 0.0);
    assert_eq!(
        after.matching("db_client_connection_count", &pool).len(),
        2,
        "used and idle"
    );
    app.stop().await;
}
