//! Wiring: opens the database (migrating it), builds the domain services, and starts the
//! HTTPS server. Tests build the same `Application` on port 0.

use std::{net::TcpListener, sync::Arc, time::Duration};

use actix_web::{App, dev::Server, middleware::from_fn, web};
use tessera_http_actix::{
    extract, idempotency,
    middleware::{HeaderLimit, TrustedProxies, limit_headers, problem_errors, require_https},
    rate_limit::Limits,
    tls::{self, CertificateSource, TlsError},
};
use tessera_limits::Quota;
use tessera_models::ModelService;
pub use tessera_services::Bootstrap;
use tessera_services::{Services, ServicesError};
use tessera_setup::open_database;
use tessera_store::{Database, StoreError};
use utoipa::OpenApi;
use utoipa_actix_web::AppExt;
use utoipa_swagger_ui::SwaggerUi;

use crate::{
    access,
    config::Settings,
    metrics::{MetricsListener, MetricsServer},
    middleware::request_context,
    openapi::ApiDoc,
    routes,
    state::AppState,
};

/// Why the service could not start; each message is one line naming what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Services(#[from] ServicesError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr} (config key `listen`): {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("config key `data_dir`: {0}")]
    DataDir(String),
    #[error("worker mode: {0}")]
    Worker(String),
    #[error(
        "cannot listen on {addr} (config key `metrics.listen`; \"\" turns metrics off): {source}"
    )]
    MetricsBind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

/// The OpenAPI document of the routes this build serves.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, mut document) =
        routes::register(App::new().into_utoipa_app().openapi(ApiDoc::openapi())).split_for_parts();
    access::apply_to_openapi(&mut document);
    idempotency::apply_to_openapi(&mut document);
    crate::openapi::apply_shared_responses(&mut document);
    crate::openapi::apply_links(&mut document);
    document
}

/// The OpenAPI document as served at `/openapi.json` and pinned by the snapshot test.
pub fn openapi_json() -> serde_json::Value {
    let mut document = serde_json::to_value(openapi()).unwrap_or_default();
    crate::openapi::spell_links_in_camel_case(&mut document);
    document
}

/// `/docs` → `/docs/`, where the interactive reference is served.
async fn redirect_to_docs() -> actix_web::HttpResponse {
    actix_web::HttpResponse::PermanentRedirect()
        .insert_header((actix_web::http::header::LOCATION, "/docs/"))
        .finish()
}

/// Builds the shared state over an open database; `issuer` is the token issuer URL.
pub async fn state(
    settings: &Settings,
    database: Database,
    issuer: String,
) -> Result<AppState, StartupError> {
    let limits = &settings.rate_limit;
    Ok(AppState {
        services: Services::build(settings, database, issuer).await?,
        limits: Limits {
            limiter: tessera_services::rate_limiter(settings).await?,
            organization: Quota::per_minute(limits.organization_per_minute),
            principal: Quota::per_minute(limits.principal_per_minute),
            anonymous: Quota::per_minute(limits.anonymous_per_minute),
            enabled: limits.enabled,
        },
        draining: crate::drain::Draining::default(),
    })
}

/// Binds the metrics listener when `metrics.listen` names an address (before anything
/// else starts, so a taken port stops start-up at once).
pub fn bind_metrics(settings: &Settings) -> Result<Option<MetricsListener>, StartupError> {
    settings
        .metrics
        .address()
        .map(|addr| {
            MetricsListener::bind(addr).map_err(|source| StartupError::MetricsBind { addr, source })
        })
        .transpose()
}

/// Starts serving a bound metrics listener (installing the recorder).
pub fn serve_metrics(
    listener: Option<MetricsListener>,
    database: &Database,
    models: Option<&ModelService>,
) -> Result<Option<MetricsServer>, StartupError> {
    listener
        .map(|listener| {
            let addr = listener.address();
            listener
                .serve(database.clone(), models.cloned())
                .map_err(|source| StartupError::MetricsBind { addr, source })
        })
        .transpose()
}

/// A built, bound, not yet running service.
pub struct Application {
    port: u16,
    server: Server,
    state: AppState,
    /// How long a graceful stop waits for generations, then for requests.
    shutdown_timeout: Duration,
    /// What this start created (embedded mode, first run only).
    pub bootstrap: Option<Bootstrap>,
    /// The Prometheus listener, unless `metrics.listen` is `""`.
    metrics: Option<MetricsServer>,
}

impl Application {
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        std::fs::create_dir_all(&settings.data_dir).map_err(|e| {
            StartupError::DataDir(format!(
                "cannot create {}: {e}",
                settings.data_dir.display()
            ))
        })?;
        let tls = tls::server_config(CertificateSource {
            files: settings
                .tls
                .cert
                .as_deref()
                .zip(settings.tls.key.as_deref()),
            data_dir: &settings.data_dir,
            listen_ip: settings.listen.ip(),
        })?;
        let listener = TcpListener::bind(settings.listen).map_err(|source| StartupError::Bind {
            addr: settings.listen,
            source,
        })?;
        // Accepted sockets inherit TCP_NODELAY from the listener (Linux): without it, each
        // small write of a stream after the first waits for the client's delayed ACK (~40 ms).
        socket2::SockRef::from(&listener)
            .set_tcp_nodelay(true)
            .map_err(|source| StartupError::Bind {
                addr: settings.listen,
                source,
            })?;
        let port = listener
            .local_addr()
            .map_err(|source| StartupError::Bind {
                addr: settings.listen,
                source,
            })?
            .port();
        let metrics = bind_metrics(&settings)?;
        let database = open_database(&settings).await?;
        let state = state(&settings, database, settings.issuer(port)).await?;
        let bootstrap = if settings.is_embedded() {
            state
                .bootstrap(&settings)
                .await
                .map_err(ServicesError::Bootstrap)?
        } else {
            None
        };

        let document = openapi_json();
        let trusted = TrustedProxies(Arc::new(settings.http.trusted_proxies.clone()));
        let json_limit = settings.http.json_limit_bytes;
        let header_limit = HeaderLimit(settings.http.max_header_bytes);
        let data = web::Data::new(state.clone());
        let idempotency_keys = web::Data::new(state.idempotency.clone());
        let mut server = actix_web::HttpServer::new(move || {
            let (app, _) = routes::register(
                App::new()
                    .app_data(data.clone())
                    .app_data(idempotency_keys.clone())
                    .app_data(trusted.clone())
                    .app_data(header_limit)
                    .app_data(extract::json_config(json_limit))
                    .app_data(web::PayloadConfig::new(json_limit))
                    .app_data(extract::query_config())
                    .app_data(extract::path_config())
                    .wrap(from_fn(idempotency::idempotent))
                    .wrap(from_fn(access::authorize))
                    .wrap(from_fn(require_https))
                    .wrap(from_fn(limit_headers))
                    .wrap(problem_errors())
                    .wrap(from_fn(routes::dialects::dialect))
                    .wrap(from_fn(request_context))
                    .into_utoipa_app(),
            )
            .split_for_parts();
            app.route("/docs", web::get().to(redirect_to_docs))
                .service(
                    SwaggerUi::new("/docs/{_:.*}")
                        .external_url_unchecked("/openapi.json", document.clone()),
                )
                .default_service(web::to(routes::fallback::unmatched))
        })
        .shutdown_timeout(settings.http.shutdown_timeout_secs)
        // The binary installs its signal handlers before start-up (see main.rs), so a
        // SIGTERM that arrives while the server is starting is not lost.
        .disable_signals();
        if settings.http.workers > 0 {
            server = server.workers(settings.http.workers);
        }
        let server = server
            .listen_rustls_0_23(listener, tls)
            .map_err(|source| StartupError::Bind {
                addr: settings.listen,
                source,
            })?
            .run();
        state.start_background(&settings);
        state.start_batch_runners(
            &settings,
            Arc::new(crate::batch_lines::PipelineLines(state.clone())),
        );
        tracing::info!(address = %settings.listen, port, database = %settings.database(), issuer = %state.issuer, "tessera-api listening (HTTPS only)");
        let metrics = serve_metrics(metrics, &state.database, Some(&state.models))?;
        Ok(Self {
            port,
            server,
            state,
            shutdown_timeout: Duration::from_secs(settings.http.shutdown_timeout_secs),
            bootstrap,
            metrics,
        })
    }

    /// The shared state (for tests and tools running beside the server).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where `GET /metrics` is served, unless metrics are off.
    pub fn metrics_address(&self) -> Option<std::net::SocketAddr> {
        self.metrics.as_ref().map(|metrics| metrics.address)
    }

    /// Stops the server from another task (graceful when `graceful` is true).
    pub fn handle(&self) -> actix_web::dev::ServerHandle {
        self.server.handle()
    }

    /// Stops the service gracefully from another task or thread: running generations
    /// finish first (see [`crate::drain`]).
    pub fn stopper(&self) -> crate::drain::Stopper {
        crate::drain::Stopper::new(
            self.server.handle(),
            self.state.chats.clone(),
            self.state.draining.clone(),
            self.shutdown_timeout,
        )
    }

    /// Serves until SIGTERM/SIGINT, then lets in-flight requests finish
    /// (up to `http.shutdown_timeout_secs`).
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let served = self.server.await;
        if let Some(metrics) = &self.metrics {
            metrics.stop().await;
        }
        served
    }
}
