//! What the benchmarks that drive the real application share: where the models are, and
//! the application started on given settings with a client that trusts its certificate and
//! a token of its first-run client. Included by `#[path]` (each benchmark is its own crate).

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use actix_web::dev::ServerHandle;
use anyhow::{Context, anyhow};
use serde_json::Value;
use tessera_api::{config::Settings, startup::Application, tls::dev_certificate_paths};

/// `TESSERA_MODELS_DIR`, else `~/.cache/tessera-models` (what `just models` fills).
pub fn models_root() -> PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/tessera-models")
        },
        PathBuf::from,
    )
}

/// The application's defaults for a benchmark: data in `data_dir`, a free port, warnings
/// only, no metrics listener, no rate limits, a quick shutdown.
pub fn settings(data_dir: &std::path::Path) -> anyhow::Result<Settings> {
    let mut settings = Settings {
        data_dir: data_dir.to_path_buf(),
        listen: "127.0.0.1:0".parse()?,
        log: "warn".to_owned(),
        ..Settings::default()
    };
    settings.metrics.listen = String::new();
    settings.http.shutdown_timeout_secs = 1;
    settings.rate_limit.enabled = false;
    Ok(settings)
}

/// The running application, reached at `base` by `client` with `token`.
pub struct RunningApp {
    pub handle: ServerHandle,
    pub client: reqwest::Client,
    pub base: String,
    pub token: String,
}

/// Starts the application on `settings` (keep its data folder alive until the runtime is
/// dropped: the embedded index flushes when the workers that hold it stop) and signs its
/// first-run client in; requests time out after `timeout`.
pub async fn start(settings: Settings, timeout: Duration) -> anyhow::Result<RunningApp> {
    let app = Application::build(settings.clone())
        .await
        .context("Tessera does not start")?;
    let port = app.port();
    let bootstrap = app
        .bootstrap
        .as_ref()
        .ok_or_else(|| anyhow!("no first-run client"))?;
    let (client_id, secret) = (
        bootstrap.client_id.clone(),
        bootstrap.client_secret.expose().to_owned(),
    );
    let handle = app.handle();
    tokio::spawn(app.run_until_stopped());

    let (cert, _) = dev_certificate_paths(&settings.data_dir);
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&std::fs::read(&cert)?)?)
        .resolve("localhost", SocketAddr::from(([127, 0, 0, 1], port)))
        .timeout(timeout)
        .build()?;
    let base = format!("https://localhost:{port}");
    let token: Value = client
        .post(format!("{base}/oauth/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", secret.as_str()),
        ])
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = token["access_token"]
        .as_str()
        .ok_or_else(|| anyhow!("no access_token in {token}"))?
        .to_owned();
    Ok(RunningApp {
        handle,
        client,
        base,
        token,
    })
}
