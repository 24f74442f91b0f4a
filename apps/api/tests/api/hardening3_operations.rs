//! Issue 61's operations items over the real stack: the shared rate limiter on a Redis that
//! speaks only TLS (item 5), and the OTLP exporter's retries, compression, timeout and the
//! OpenTelemetry variables it reads (item 10), against the receiver in
//! `tests/observability/otlp_receiver.py` (the official `opentelemetry-proto` decoding each
//! export; `TESSERA_OBSERVABILITY_PYTHON` names its venv's Python, as for `traces.rs`).
//! Each OTLP test installs the process's trace subscriber, so each needs its own process
//! (nextest's default).

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::Value;
use tessera_api::config::Settings;
use tessera_store::Backend;

use crate::{
    binary::KillOnDrop,
    support::{TestApp, problem},
};

/// A `redis-server` listening only on a TLS port (`--port 0`), with a certificate signed by a
/// certificate authority made here; the CA's PEM file is what `redis_ca_file` names.
struct TlsRedis {
    _server: KillOnDrop,
    url: String,
    ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

fn tls_redis() -> TlsRedis {
    let dir = tempfile::tempdir().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "Tessera test Redis CA");
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let certificate = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("ca.pem"), ca.pem()).unwrap();
    std::fs::write(path("server.pem"), certificate.pem()).unwrap();
    std::fs::write(path("server.key"), key.serialize_pem()).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = KillOnDrop(
        Command::new("redis-server")
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .arg("--tls-cert-file")
            .arg(path("server.pem"))
            .arg("--tls-key-file")
            .arg(path("server.key"))
            .arg("--tls-ca-cert-file")
            .arg(path("ca.pem"))
            .args(["--tls-auth-clients", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server is installed (as on the CI machine)"),
    );
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    TlsRedis {
        _server: server,
        url: format!("rediss://127.0.0.1:{port}"),
        ca_file: path("ca.pem"),
        _dir: dir,
    }
}

/// `rediss://` with the CA file: two replicas draw from one budget kept in the TLS Redis
/// (before, the redis crate had no TLS: the limiter never connected and let every request
/// through).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_budgets_through_a_tls_redis() {
    let redis = tls_redis();
    let limit = |s: &mut tessera_api::config::Settings| {
        s.redis_url = Some(redis.url.clone());
        s.redis_ca_file = Some(redis.ca_file.clone());
        s.rate_limit.principal_per_minute = 3;
    };
    let first = TestApp::spawn_with(Backend::Postgres, limit).await;
    let database_url = first.settings.database_url.clone();
    let keys_dir = first.settings.keys_dir();
    let issuer = first.state.issuer.clone();
    let second = TestApp::spawn_with(Backend::Sqlite, |s| {
        limit(s);
        s.database_url = database_url;
        s.auth.keys_dir = Some(keys_dir);
        s.auth.issuer = Some(issuer);
    })
    .await;
    let (_, client_id, secret) = first.organization_with_client("files:read").await;
    let token = first.token(&client_id, &secret).await;
    let call = |app: &TestApp| {
        app.client
            .get(app.url("/v1/organization"))
            .bearer_auth(&token)
            .send()
    };
    assert_eq!(call(&first).await.unwrap().status(), 200);
    assert_eq!(call(&second).await.unwrap().status(), 200);
    assert_eq!(call(&first).await.unwrap().status(), 200);
    problem(call(&second).await.unwrap(), 429, "rate_limited").await;
    problem(call(&first).await.unwrap(), 429, "rate_limited").await;
}

/// The OTLP receiver, started with `options` (see its docstring), and its port.
fn start_receiver(options: &[&str]) -> (KillOnDrop, u16) {
    let python = std::env::var("TESSERA_OBSERVABILITY_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TESSERA_OBSERVABILITY_PYTHON must name the Python of a venv with tests/observability/requirements.txt installed; `just test` installs it"
        )
    });
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/observability/otlp_receiver.py");
    let mut child = Command::new(python)
        .arg(script)
        .args(options)
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
    (KillOnDrop(child), port)
}

async fn received(port: u16) -> Value {
    reqwest::get(format!("http://127.0.0.1:{port}/received"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// What the receiver got once `ready` holds (within a minute).
async fn received_until(port: u16, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let received = received(port).await;
        if ready(&received) {
            return received;
        }
        assert!(Instant::now() < deadline, "never exported: {received:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Settings as the real loader reads them from these variables (and no file).
fn settings_from(vars: &[(&str, String)]) -> Settings {
    Settings::load_from(
        None,
        vars.iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone())),
    )
    .unwrap()
}

/// The app over SQLite with these telemetry settings (the subscriber installed first), and a
/// token of a client of its organization.
async fn traced_app(settings: &Settings) -> (TestApp, String) {
    let telemetry = settings.telemetry.clone();
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.telemetry = telemetry).await;
    let (_, client_id, secret) = app.organization_with_client("files:read").await;
    let token = app.token(&client_id, &secret).await;
    (app, token)
}

async fn get_organization(app: &TestApp, token: &str, traceparent: Option<&str>) {
    let mut request = app
        .client
        .get(app.url("/v1/organization"))
        .bearer_auth(token);
    if let Some(traceparent) = traceparent {
        request = request.header("traceparent", traceparent);
    }
    assert_eq!(request.send().await.unwrap().status(), 200);
}

fn exports(received: &Value) -> &Vec<Value> {
    received["exports"].as_array().unwrap()
}

/// The OpenTelemetry variables win over Tessera's settings, the traces' own over the generic
/// ones: the traces URL is used as is, its headers replace the generic ones, its compression
/// (gzip) wins, and `OTEL_TRACES_SAMPLER` beats `TESSERA_TELEMETRY__SAMPLER`. A collector
/// answering 503 with `Retry-After: 2` gets the same batch again no sooner than it asked,
/// until it takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_collector_gets_the_batch_again_after_retry_after_gzipped_where_otel_variables_say() {
    let (_receiver, port) = start_receiver(&[
        "--fail-first",
        "2",
        "--fail-status",
        "503",
        "--retry-after",
        "2",
    ]);
    let base = format!("http://127.0.0.1:{port}");
    let settings = settings_from(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9".into()),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{base}/collector/traces"),
        ),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-generic=1".into()),
        (
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "x-tenant=acme%20corp".into(),
        ),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "none".into()),
        ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip".into()),
        ("TESSERA_TELEMETRY__SAMPLER", "always_off".into()),
        ("OTEL_TRACES_SAMPLER", "always_on".into()),
        ("OTEL_SERVICE_NAME", "tessera-otel-env".into()),
    ]);
    let _telemetry = tessera_api::telemetry::init(&settings).expect("telemetry starts");
    let (app, token) = traced_app(&settings).await;
    get_organization(&app, &token, None).await;

    let received = received_until(port, |received| {
        received["spans"].as_array().is_some_and(|spans| {
            spans
                .iter()
                .any(|span| span["name"] == "GET /v1/organization")
        })
    })
    .await;
    let exports = exports(&received);
    assert!(exports.len() >= 3, "{exports:#?}");
    let statuses: Vec<_> = exports[..3].iter().map(|e| e["status"].clone()).collect();
    assert_eq!(statuses, [503, 503, 200], "{exports:#?}");
    for pair in exports[..3].windows(2) {
        assert_eq!(pair[0]["span_ids"], pair[1]["span_ids"], "the same batch");
        let gap = pair[1]["at"].as_f64().unwrap() - pair[0]["at"].as_f64().unwrap();
        assert!(
            gap >= 1.9,
            "retried after {gap:.2} s, not after Retry-After's 2 s"
        );
    }
    let first = &exports[0];
    assert_eq!(first["path"], "/collector/traces", "the traces URL as is");
    assert_eq!(first["content_encoding"], "gzip");
    assert_eq!(first["headers"]["x-tenant"], "acme corp");
    assert!(first["headers"].get("x-generic").is_none(), "{first:#}");
    let span = received["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|span| span["name"] == "GET /v1/organization")
        .unwrap();
    assert_eq!(span["resource"]["service.name"], "tessera-otel-env");
    app.stop().await;
}

/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` (1 s, over the generic 60 s): a collector that holds
/// its answer is given up on after the timeout and the batch sent again, long before the
/// collector would have answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_slower_than_the_timeout_is_given_up_on_and_tried_again() {
    let (_receiver, port) = start_receiver(&["--delay-first", "1", "--delay", "8"]);
    let settings = settings_from(&[
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        ),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000".into()),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1000".into()),
    ]);
    let _telemetry = tessera_api::telemetry::init(&settings).expect("telemetry starts");
    let (app, token) = traced_app(&settings).await;
    get_organization(&app, &token, None).await;

    let received = received_until(port, |received| exports(received).len() >= 2).await;
    let exports = exports(&received);
    assert_eq!(exports[0]["path"], "/v1/traces", "below the base URL");
    assert_eq!(
        exports[0]["span_ids"], exports[1]["span_ids"],
        "the same batch"
    );
    let gap = exports[1]["at"].as_f64().unwrap() - exports[0]["at"].as_f64().unwrap();
    assert!(
        (0.9..5.0).contains(&gap),
        "tried again after {gap:.2} s; the collector held the first answer 8 s"
    );
    app.stop().await;
}

/// `OTEL_SDK_DISABLED=true`: an endpoint is set, yet nothing is exported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otel_sdk_disabled_exports_nothing() {
    let (_receiver, port) = start_receiver(&[]);
    let settings = settings_from(&[
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        ),
        ("OTEL_SDK_DISABLED", "TRUE".into()),
    ]);
    let mut telemetry = tessera_api::telemetry::init(&settings).expect("telemetry starts");
    assert!(!tessera_traces_otlp::exporting());
    let (app, token) = traced_app(&settings).await;
    get_organization(&app, &token, None).await;
    app.stop().await;
    // Shutting down would send whatever waits.
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap();
    assert_eq!(exports(&received(port).await).len(), 0);
}

/// `OTEL_TRACES_SAMPLER=parentbased_always_off`: a request that starts its trace here is not
/// exported; one whose caller sampled its trace is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_based_sampler_keeps_only_what_callers_sampled() {
    const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    let (_receiver, port) = start_receiver(&[]);
    let settings = settings_from(&[
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        ),
        ("OTEL_TRACES_SAMPLER", "parentbased_always_off".into()),
    ]);
    let mut telemetry = tessera_api::telemetry::init(&settings).expect("telemetry starts");
    let (app, token) = traced_app(&settings).await;
    get_organization(&app, &token, None).await;
    get_organization(
        &app,
        &token,
        Some(&format!("00-{TRACE_ID}-00f067aa0ba902b7-01")),
    )
    .await;
    app.stop().await;
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap();
    let received = received(port).await;
    let spans = received["spans"].as_array().unwrap();
    assert!(!spans.is_empty(), "the caller's trace is exported");
    assert!(
        spans.iter().all(|span| span["trace_id"] == TRACE_ID),
        "only the caller's trace: {spans:#?}"
    );
}
