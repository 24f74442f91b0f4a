//! What the benchmarks that drive the real application share: where the models are, and
//! the application started on given settings with a client that trusts its certificate and
//! a token of its first-run client. Included by `#[path]` (each benchmark is its own crate).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use actix_web::dev::ServerHandle;
use anyhow::{Context, anyhow};
use serde_json::Value;
use tessera_api::{config::Settings, startup::Application, tls::dev_certificate_paths};
use tessera_documents::DocumentChunker;
use tessera_embed_local::{LocalEmbedder, LocalEmbedderOptions, LocalEmbeddingModel};
use tessera_knowledge::{ChunkingSettings, Embedder};

/// `TESSERA_MODELS_DIR`, else `~/.cache/tessera-models` (what `just models` fills).
#[allow(
    dead_code,
    reason = "not every benchmark that includes this module runs the embedded models"
)]
pub fn models_root() -> PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/tessera-models")
        },
        PathBuf::from,
    )
}

/// How the service cuts documents by default (`knowledge.chunk_tokens`,
/// `knowledge.chunk_overlap_tokens`).
#[allow(
    dead_code,
    reason = "not every benchmark that includes this module chunks"
)]
pub fn default_chunking() -> ChunkingSettings {
    let defaults = Settings::default();
    ChunkingSettings {
        max_tokens: defaults.knowledge.chunk_tokens,
        overlap_tokens: defaults.knowledge.chunk_overlap_tokens,
    }
}

/// The service's embedding model for a new index (bge-small-en-v1.5, under `models`), as
/// processing loads it.
#[allow(
    dead_code,
    reason = "not every benchmark that includes this module embeds"
)]
pub async fn default_embedder(models: &Path) -> anyhow::Result<LocalEmbedder> {
    let model = LocalEmbeddingModel::BgeSmallEnV15;
    let dir = model.find(models).ok_or_else(|| {
        anyhow!(
            "{} is not under {} (run `just models`)",
            model.name(),
            models.display()
        )
    })?;
    let options = LocalEmbedderOptions {
        model,
        ..LocalEmbedderOptions::default()
    };
    Ok(tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir, options)).await??)
}

/// The document processor as the service builds it for `embedder`: chunks sized in its
/// word pieces.
#[allow(
    dead_code,
    reason = "not every benchmark that includes this module chunks"
)]
pub fn chunker_for(embedder: &LocalEmbedder) -> DocumentChunker {
    let chunker = DocumentChunker::default();
    match embedder.chunk_tokens() {
        Some(tokens) => chunker.with_chunk_tokens(tokens),
        None => chunker,
    }
}

/// Seconds `embedder` alone takes over `texts` (`LocalEmbedder::embed`: batches of 32,
/// longest first), after a warm-up on a few of them: the baseline of the ingestion
/// benchmarks.
#[allow(
    dead_code,
    reason = "not every benchmark that includes this module embeds"
)]
pub async fn embedding_model_alone(
    embedder: &LocalEmbedder,
    texts: Vec<String>,
) -> anyhow::Result<f64> {
    embedder
        .embed(texts[..texts.len().min(32)].to_vec())
        .await?;
    let started = Instant::now();
    embedder.embed(texts).await?;
    Ok(started.elapsed().as_secs_f64())
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
