//! The service over HTTPS: health, readiness, errors, request ids, the HTTPS guard.

use tessera_store::Backend;

use crate::support::{TestApp, problem};

async fn health_answers_with_a_request_id(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let response = app.get("/v1/health").await;
    assert_eq!(response.status(), 200);
    let request_id = response
        .headers()
        .get("x-request-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(request_id.len(), 36, "a generated UUID: {request_id}");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ok");

    let echoed = app
        .client
        .get(app.url("/v1/health"))
        .header("x-request-id", "client-chosen-42")
        .send()
        .await
        .unwrap();
    assert_eq!(
        echoed.headers().get("x-request-id").unwrap(),
        "client-chosen-42"
    );
    let replaced = app
        .client
        .get(app.url("/v1/health"))
        .header("x-request-id", "x".repeat(300))
        .send()
        .await
        .unwrap();
    assert_ne!(
        replaced.headers().get("x-request-id").unwrap().len(),
        300,
        "overlong ids are replaced"
    );
}

async fn readiness_checks_the_database(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let response = app.get("/v1/health/ready").await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"][0]["name"], "database");
    assert_eq!(body["checks"][0]["status"], "ok");
}

async fn unknown_paths_and_methods_are_problems(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let body = problem(app.get("/v1/nothing-here").await, 404, "not_found").await;
    assert_eq!(body["detail"], "no resource at /v1/nothing-here");

    let response = app.client.post(app.url("/v1/health")).send().await.unwrap();
    let request_id = response.headers().get("x-request-id").cloned();
    assert_eq!(response.headers().get("allow").unwrap(), "GET");
    problem(response, 405, "method_not_allowed").await;
    assert!(request_id.is_some(), "framework errors keep the request id");
}

tessera_store::on_both_databases!(
    health_answers_with_a_request_id,
    readiness_checks_the_database,
    unknown_paths_and_methods_are_problems
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_first_run_creates_one_default_organization() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let created = app
        .bootstrap
        .clone()
        .expect("first run creates the organization");
    assert_eq!(created.organization.name, "Default");
    // The bootstrap client works: it gets a token and sees its organization.
    let token = app
        .token(&created.client_id, created.client_secret.expose())
        .await;
    let response = app
        .call(reqwest::Method::GET, "/v1/organization", &token)
        .await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["id"], created.organization.id.to_string());
    // The same data directory again: nothing new.
    app.stop().await;
    let again = tessera_api::startup::Application::build(app.settings.clone())
        .await
        .unwrap();
    assert!(again.bootstrap.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_mode_creates_no_organization() {
    let app = TestApp::spawn(Backend::Postgres).await;
    assert!(app.bootstrap.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_fails_when_the_database_is_gone() {
    let app = TestApp::spawn(Backend::Postgres).await;
    assert_eq!(app.get("/v1/health/ready").await.status(), 200);
    app.database.as_ref().unwrap().destroy().await;
    let response = app.get("/v1/health/ready").await;
    assert_eq!(response.headers().get("retry-after").unwrap(), "5");
    let body = problem(response, 503, "not_ready").await;
    assert_eq!(body["checks"][0]["status"], "unavailable");
    // Liveness is unaffected: the process still serves.
    assert_eq!(app.get("/v1/health").await.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_gets_no_answer() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let plain = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{}/v1/health", app.port))
        .send()
        .await;
    assert!(plain.is_err(), "the listener speaks only TLS: {plain:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_plain_http_from_a_trusted_proxy_is_refused() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.http.trusted_proxies = vec!["127.0.0.1".parse().unwrap()]
    })
    .await;
    let response = app
        .client
        .get(app.url("/v1/health"))
        .header("x-forwarded-proto", "http")
        .send()
        .await
        .unwrap();
    problem(response, 403, "https_required").await;
    let https = app
        .client
        .get(app.url("/v1/health"))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    assert_eq!(https.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_proto_from_an_untrusted_peer_is_ignored() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let response = app
        .client
        .get(app.url("/v1/health"))
        .header("x-forwarded-proto", "http")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_page_and_its_assets_are_served_offline() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .add_root_certificate(
            reqwest::Certificate::from_pem(
                &std::fs::read(app.settings.data_dir.join("tls/cert.pem")).unwrap(),
            )
            .unwrap(),
        )
        .build()
        .unwrap()
        .get(app.url("/docs"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (
            redirect.status().as_u16(),
            redirect
                .headers()
                .get("location")
                .unwrap()
                .to_str()
                .unwrap()
        ),
        (308, "/docs/")
    );
    let page = app.get("/docs").await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("swagger-ui"), "{html}");
    assert!(!html.contains("cdn"), "no CDN references: {html}");
    let script = app.get("/docs/swagger-ui-bundle.js").await;
    assert_eq!(script.status(), 200);
    assert!(
        script.bytes().await.unwrap().len() > 100_000,
        "the bundle is embedded"
    );
    let initializer = app
        .get("/docs/swagger-initializer.js")
        .await
        .text()
        .await
        .unwrap();
    assert!(initializer.contains("/openapi.json"), "{initializer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_is_served() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let response = app.get("/openapi.json").await;
    assert_eq!(response.status(), 200);
    let document: serde_json::Value = response.json().await.unwrap();
    assert!(document["openapi"].as_str().unwrap().starts_with("3.1"));
    assert!(document["paths"]["/v1/health"]["get"].is_object());
    assert_eq!(
        document["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers_are_refused_with_431() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.http.max_header_bytes = 4096).await;
    let response = app
        .client
        .get(app.url("/v1/health"))
        .header("x-padding", "a".repeat(8000))
        .send()
        .await
        .unwrap();
    problem(response, 431, "headers_too_large").await;
    let fine = app
        .client
        .get(app.url("/v1/health"))
        .header("x-padding", "a".repeat(1000))
        .send()
        .await
        .unwrap();
    assert_eq!(fine.status(), 200);
}
