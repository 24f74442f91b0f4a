//! Spawns the real application (TLS, real database) on a random port and hands back a
//! client that trusts its certificate.

use actix_web::dev::ServerHandle;
use tessera_api::{config::Settings, startup::Application, tls::dev_certificate_paths};
use tessera_store::{Backend, testing::TestDatabase};

pub struct TestApp {
    pub base: String,
    pub port: u16,
    pub client: reqwest::Client,
    pub settings: Settings,
    pub database: Option<TestDatabase>,
    pub bootstrap: Option<tessera_api::startup::Bootstrap>,
    pub state: tessera_api::state::AppState,
    /// Where `GET /metrics` is served, when the test turned metrics on.
    pub metrics: Option<std::net::SocketAddr>,
    handle: ServerHandle,
    _data_dir: tempfile::TempDir,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, |_| {}).await
    }

    /// Spawns with settings adjusted by `customize` (after the test defaults are applied).
    pub async fn spawn_with(backend: Backend, customize: impl FnOnce(&mut Settings)) -> Self {
        let data_dir = tempfile::tempdir().unwrap();
        let database = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TestDatabase::postgres().await),
        };
        let mut settings = Settings {
            data_dir: data_dir.path().to_path_buf(),
            listen: "127.0.0.1:0".parse().unwrap(),
            database_url: database.as_ref().map(|db| db.url.clone()),
            ..Settings::default()
        };
        settings.http.workers = 1;
        settings.http.shutdown_timeout_secs = 1;
        // Tests run in parallel: a fixed metrics port would be taken; `metrics.rs` turns it on.
        settings.metrics.listen = String::new();
        // The tests' expectations of rankings were written for all-MiniLM-L6-v2, which also
        // embeds twice as fast; the default model (bge-small-en-v1.5) has tests of its own
        // (`embedding_models.rs`, and tessera-services' start-up tests).
        settings.knowledge.embedding_model = Some("all-MiniLM-L6-v2".into());
        customize(&mut settings);
        let app = Application::build(settings.clone())
            .await
            .expect("the application starts");
        let port = app.port();
        let metrics = app.metrics_address();
        let bootstrap = app.bootstrap.clone();
        let state = app.state().clone();
        let handle = app.handle();
        tokio::spawn(app.run_until_stopped());
        let (cert, _) = dev_certificate_paths(&settings.data_dir);
        let client = reqwest::Client::builder()
            .add_root_certificate(
                reqwest::Certificate::from_pem(&std::fs::read(cert).unwrap()).unwrap(),
            )
            .build()
            .unwrap();
        Self {
            base: format!("https://localhost:{port}"),
            port,
            client,
            settings,
            database,
            bootstrap,
            state,
            metrics,
            handle,
            _data_dir: data_dir,
        }
    }

    /// Creates an organization and a client of it holding `scopes`; returns the org id,
    /// client id and secret.
    pub async fn organization_with_client(&self, scopes: &str) -> (String, String, String) {
        use tessera_identity::{ClientName, NewClient};
        use tessera_organizations::{NewOrganization, OrganizationName, Plan};
        let org = self
            .state
            .organizations
            .create(
                NewOrganization {
                    name: OrganizationName::parse("Test org").unwrap(),
                    plan: Plan::Pro,
                },
                &tessera_kernel::Actor::System,
            )
            .await
            .unwrap();
        let new = NewClient {
            organization_id: org.id.clone(),
            name: ClientName::parse("test client").unwrap(),
            scopes: tessera_kernel::ScopeSet::parse_list(scopes).unwrap(),
        };
        let (client, secret) = self
            .state
            .identity
            .create_client(new, &tessera_kernel::Actor::System)
            .await
            .unwrap();
        (
            org.id.to_string(),
            client.id.to_string(),
            secret.expose().to_owned(),
        )
    }

    /// A token of a new organization's client holding `scopes`.
    pub async fn caller_token(&self, scopes: &str) -> String {
        let (_, client_id, secret) = self.organization_with_client(scopes).await;
        self.token(&client_id, &secret).await
    }

    /// A token for the client, from the real token endpoint.
    pub async fn token(&self, client_id: &str, client_secret: &str) -> String {
        let response = self
            .client
            .post(self.url("/oauth/token"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_id", client_id),
                ("client_secret", client_secret),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        body["access_token"].as_str().unwrap().to_owned()
    }

    /// Sends `method path` with a bearer token (no body).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
    ) -> reqwest::Response {
        self.client
            .request(method, self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    /// Sends `method path` with a bearer token and a JSON body.
    pub async fn call_json(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: &serde_json::Value,
    ) -> reqwest::Response {
        self.client
            .request(method, self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    pub async fn stop(&self) {
        // As the binary stops: background work (the batch runners) ends too.
        self.state.draining.start();
        self.handle.stop(true).await;
    }
}

/// Asserts the status of a response and returns its JSON body (`null` when there is none).
pub async fn ok(response: reqwest::Response, status: u16) -> serde_json::Value {
    let got = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
    assert_eq!(got, status, "{body}");
    body
}

/// Asserts a problem+json response and returns its body.
pub async fn problem(response: reqwest::Response, status: u16, code: &str) -> serde_json::Value {
    assert_eq!(response.status().as_u16(), status);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(content_type, "application/problem+json");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["type"], format!("urn:tessera:problem:{code}"));
    assert!(body["title"].is_string());
    body
}

/// The `loc` of each entry of a validation problem, its segments joined by dots
/// (`body.models.0`).
pub fn locs(problem: &serde_json::Value) -> Vec<String> {
    let entries = problem["detail"].as_array().cloned().unwrap_or_default();
    (entries.iter())
        .map(|entry| {
            let segments = entry["loc"].as_array().cloned().unwrap_or_default();
            (segments.iter())
                .map(|segment| match segment.as_str() {
                    Some(field) => field.to_owned(),
                    None => segment.to_string(),
                })
                .collect::<Vec<_>>()
                .join(".")
        })
        .collect()
}

/// Reads a streamed response up to its first event: a slow first token (a busy machine, the
/// embedded model) may let heartbeat comments (`: keep-alive`) come before it.
pub async fn first_event(response: &mut reqwest::Response) -> String {
    loop {
        let chunk = response
            .chunk()
            .await
            .unwrap()
            .expect("the stream ended before its first event");
        if !chunk.starts_with(b":") {
            return String::from_utf8_lossy(&chunk).into_owned();
        }
    }
}
