//! Wiring: opens the database (migrating it), builds the domain services, and starts the
//! HTTPS server. Tests build the same `Application` on port 0.

use std::{net::TcpListener, sync::Arc, time::Duration};

use actix_web::{App, dev::Server, middleware::from_fn, web};
use tessera_audit::AuditService;
use tessera_chats::{ArtifactService, ChatPorts, ChatRelations, ChatService, PlansAndBudgets};
use tessera_idempotency::IdempotencyService;
use tessera_identity::{ClientName, ClientSecret, NewClient};
use tessera_kernel::{DomainError, Scope, ScopeSet, SystemClock};
use tessera_knowledge::rag::{DatasetRetriever, KnowledgeDirectory};
use tessera_limits::{InProcessRateLimiter, Quota, RateLimiter};
use tessera_limits_redis::RedisRateLimiter;
use tessera_models::{Catalog, DatasetLinks, ModelService};
use tessera_organizations::Organization;
use tessera_prompts::{PromptService, SystemProfiles};
use tessera_setup::{Tenancy, open_database};
use tessera_store::{
    Database, SqlArtifactStore, SqlChatStore, SqlDatasetLinkStore, SqlIdempotencyStore,
    SqlModelStore, SqlPromptStore, SqlUsageStore, StoreError,
};
use tessera_tokenizer::{Encoding, TiktokenCounter};
use tessera_usage::{BudgetGuard, UsageService};
use utoipa::OpenApi;
use utoipa_actix_web::AppExt;
use utoipa_swagger_ui::SwaggerUi;

use crate::{
    access,
    config::Settings,
    extract, idempotency,
    metrics::{MetricsListener, MetricsServer},
    middleware::{
        HeaderLimit, TrustedProxies, limit_headers, problem_errors, request_context, require_https,
    },
    openapi::ApiDoc,
    rate_limit::Limits,
    routes,
    state::AppState,
    tls::{self, TlsError},
};

/// Why the service could not start; each message is one line naming what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Setup(#[from] tessera_setup::SetupError),
    #[error("cannot listen on {addr} (config key `listen`): {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot create the default organization: {0}")]
    Bootstrap(DomainError),
    #[error("{0}")]
    Knowledge(String),
    #[error("config section `webhooks`: {0}")]
    Webhooks(String),
    #[error("config section `mcp`: {0}")]
    Mcp(String),
    #[error("config key `data_dir`: {0}")]
    DataDir(String),
    #[error("config key `redis_url`: {0}")]
    Redis(String),
    #[error("cannot load the token counter: {0}")]
    Tokenizer(#[from] tessera_tokenizer::LoadError),
    #[error("cannot seed the system profiles: {0}")]
    Profiles(String),
    #[error("config key `models.catalog_file`: {0}")]
    Catalog(String),
    #[error("cannot recover chats interrupted by the last stop: {0}")]
    Recovery(String),
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
    let Tenancy {
        organizations,
        identity,
        api_keys,
        audit,
        keys,
        cursors,
    } = tessera_setup::tenancy(settings, &database, &issuer)?;
    let clock = Arc::new(SystemClock);
    let prompt_store = Arc::new(SqlPromptStore::new(database.clone()));
    let prompts = PromptService::new(
        prompt_store.clone(),
        prompt_store,
        Arc::new(TiktokenCounter::shared(Encoding::default())?),
        clock.clone(),
        cursors.clone(),
    );
    let profiles = SystemProfiles::builtin().map_err(|e| StartupError::Profiles(e.to_string()))?;
    prompts
        .seed_system_profiles(&profiles)
        .await
        .map_err(|e| StartupError::Profiles(DomainError::from(e).to_string()))?;
    let catalog = match &settings.models.catalog_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                StartupError::Catalog(format!("cannot read {}: {e}", path.display()))
            })?;
            Catalog::parse(&text, |name| std::env::var(name).ok())
        }
        None => Catalog::builtin(|name| std::env::var(name).ok()),
    }
    .map_err(|e| StartupError::Catalog(e.to_string()))?;
    let mut catalog = catalog;
    let providers = crate::upstreams::providers(&catalog, settings).await?;
    for id in catalog.disable_unserved(|id| providers.get(id).is_some()) {
        tracing::warn!(model = %id, "base model disabled: no provider can run it (for the embedded engine: `just models`, then set models.local_dir)");
    }
    let models = ModelService::new(
        Arc::new(SqlModelStore::new(database.clone())),
        Arc::new(catalog),
        prompts.clone(),
        clock.clone(),
        cursors.clone(),
    )
    .with_providers(providers);
    let idempotency = IdempotencyService::new(
        Arc::new(SqlIdempotencyStore::new(database.clone())),
        clock.clone(),
        Duration::from_secs(settings.idempotency.retention_secs),
    );
    let artifacts = ArtifactService::new(
        Arc::new(SqlArtifactStore::new(database.clone())),
        cursors.clone(),
    );
    let usage_store = Arc::new(SqlUsageStore::new(database.clone()));
    let usage = UsageService::new(usage_store.clone(), clock.clone(), cursors.clone());
    let budgets = BudgetGuard::new(
        usage_store.clone(),
        clock.clone(),
        chrono::Duration::seconds(i64::try_from(settings.quotas.cache_secs).unwrap_or(i64::MAX)),
    );
    // Images are read by OCR for the organizations whose own setting says so.
    let knowledge =
        crate::knowledge::Knowledge::build(settings, &database, clock.clone(), cursors.clone())
            .await?
            .with_image_reading(Arc::new(crate::knowledge::OrganizationImageReading(
                organizations.clone(),
            )));
    let embeddings = match knowledge.embedder.clone() {
        Some(embedder) => {
            // An embedding server bills like a catalog model; the embedded model, like the
            // embedded chat model, costs nothing.
            let remote = settings.knowledge.embedding_base_url.is_some();
            Some(tessera_knowledge::EmbeddingService::new(
                embedder,
                usage_store.clone(),
                Arc::new(TiktokenCounter::shared(Encoding::default())?),
                if remote { "openai" } else { "local" },
                u32::from(remote),
                clock.clone(),
            ))
        }
        None => None,
    };
    let webhooks = crate::webhooks::Webhooks::build(
        &settings.webhooks,
        &database,
        clock.clone(),
        cursors.clone(),
    )?;
    let mcp = crate::mcp::build(settings, &database, clock.clone(), cursors.clone())
        .map_err(StartupError::Mcp)?;
    let dataset_links = DatasetLinks::new(
        models.clone(),
        Arc::new(SqlDatasetLinkStore::new(database.clone())),
        Arc::new(KnowledgeDirectory(knowledge.datasets.clone())),
        clock.clone(),
    );
    // The chat store's runner is this process's: its leases keep the generations it begins.
    let chat_store = Arc::new(SqlChatStore::new(database.clone()));
    let chats = ChatService::new(ChatPorts {
        store: chat_store.clone(),
        leases: chat_store,
        models: Arc::new(models.clone()),
        prompts: Arc::new(prompts.clone()),
        retriever: Arc::new(DatasetRetriever {
            links: dataset_links.clone(),
            datasets: knowledge.datasets.clone(),
        }),
        attachments: Arc::new(crate::attachments::FileAttachments(knowledge.files.clone())),
        server_tools: Arc::new(crate::mcp::LinkedServerTools(mcp.clone())),
        admission: Arc::new(crate::admission::MeteredAdmission(PlansAndBudgets {
            plans: Arc::new(organizations.clone()),
            quotas: settings.quotas.credit_quotas(),
            budgets,
        })),
        usage: usage_store.clone(),
        clock: clock.clone(),
        cursors: cursors.clone(),
    });
    // This process's generation lease, taken before it serves; chats left `generating` by
    // processes whose lease lapsed (they stopped mid-answer) become failed.
    let interrupted = chats
        .recover_interrupted(settings.chats.generation_lease())
        .await
        .map_err(|e| StartupError::Recovery(e.to_string()))?;
    log_interrupted(interrupted);
    let chat_relations = ChatRelations::new(Arc::new(models.clone()), Arc::new(prompts.clone()));
    Ok(AppState {
        chats,
        chat_relations,
        artifacts,
        usage,
        knowledge,
        webhooks,
        mcp,
        dataset_links,
        embeddings,
        idempotency,
        models,
        database,
        organizations,
        identity,
        api_keys,
        audit,
        prompts,
        keys,
        issuer,
        cursors,
        limits: limits(settings).await?,
        draining: crate::drain::Draining::default(),
    })
}

/// The rate limiter: on Redis when `redis_url` is set, in this process otherwise. Redis
/// unreachable at start-up does not stop the process (decision 0023): the replica starts,
/// lets requests pass as it does when Redis is lost later, and connects when Redis answers.
/// Only an invalid URL (a configuration error) stops it.
async fn limits(settings: &Settings) -> Result<Limits, StartupError> {
    const PREFIX: &str = "tessera:ratelimit:";
    let limiter: Arc<dyn RateLimiter> = match &settings.redis_url {
        Some(url) => match RedisRateLimiter::connect(url, PREFIX).await {
            Ok(limiter) => Arc::new(limiter),
            Err(error) => {
                let limiter = RedisRateLimiter::connect_lazily(url, PREFIX)
                    .map_err(|e| StartupError::Redis(e.to_string()))?;
                tracing::warn!(%error, "Redis is unreachable at start-up; rate limits are not enforced until it answers");
                Arc::new(limiter)
            }
        },
        None => Arc::new(InProcessRateLimiter::default()),
    };
    let limits = &settings.rate_limit;
    Ok(Limits {
        limiter,
        organization: Quota::per_minute(limits.organization_per_minute),
        principal: Quota::per_minute(limits.principal_per_minute),
        anonymous: Quota::per_minute(limits.anonymous_per_minute),
        enabled: limits.enabled,
    })
}

/// What the first embedded run creates and announces once: the default organization and an
/// `org:admin` client for it.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub organization: Organization,
    pub client_id: String,
    pub client_secret: ClientSecret,
}

async fn bootstrap(
    state: &AppState,
    settings: &Settings,
) -> Result<Option<Bootstrap>, DomainError> {
    let Some(organization) = state
        .organizations
        .ensure_first(&settings.default_organization_name)
        .await?
    else {
        return Ok(None);
    };
    let new = NewClient {
        organization_id: organization.id.clone(),
        name: ClientName::parse("bootstrap").map_err(DomainError::internal)?,
        scopes: [Scope::ORG_ADMIN].into_iter().collect::<ScopeSet>(),
    };
    let (client, client_secret) = state
        .identity
        .create_client(new, &tessera_kernel::Actor::System)
        .await?;
    Ok(Some(Bootstrap {
        organization,
        client_id: client.id.to_string(),
        client_secret,
    }))
}

/// How often expired idempotency keys are deleted.
const IDEMPOTENCY_PURGE_INTERVAL: Duration = Duration::from_secs(10 * 60);

/// Deletes expired idempotency keys, and audit events older than `audit.retention_days`, now
/// and then, for as long as the runtime runs.
async fn purge_idempotency_keys(idempotency: IdempotencyService, audit: AuditService) {
    let mut interval = tokio::time::interval(IDEMPOTENCY_PURGE_INTERVAL);
    loop {
        interval.tick().await;
        match idempotency.purge_expired().await {
            Ok(0) => {}
            Ok(purged) => tracing::debug!(purged, "expired idempotency keys deleted"),
            Err(error) => tracing::warn!(%error, "expired idempotency keys not deleted"),
        }
        match audit.prune().await {
            Ok(0) => {}
            Ok(pruned) => tracing::debug!(pruned, "audit events past their retention deleted"),
            Err(error) => tracing::warn!(%error, "audit events past their retention not deleted"),
        }
    }
}

fn log_interrupted(chats: u64) {
    if chats > 0 {
        tracing::warn!(
            chats,
            "chats left generating by a stopped process marked as failed"
        );
    }
}

/// Renews this process's generation lease and fails the generations of stopped processes,
/// every third of the lease, for as long as the runtime runs.
async fn keep_generation_lease(chats: ChatService, lease: Duration) {
    let mut interval = tokio::time::interval((lease / 3).max(Duration::from_secs(1)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await; // start-up renewed it just now
    loop {
        interval.tick().await;
        match chats.recover_interrupted(lease).await {
            Ok(interrupted) => log_interrupted(interrupted),
            Err(error) => tracing::warn!(%error, "generation lease not renewed"),
        }
    }
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
        let tls = tls::server_config(&settings)?;
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
            bootstrap(&state, &settings)
                .await
                .map_err(StartupError::Bootstrap)?
        } else {
            None
        };

        let document = openapi_json();
        let trusted = TrustedProxies(Arc::new(settings.http.trusted_proxies.clone()));
        let json_limit = settings.http.json_limit_bytes;
        let header_limit = HeaderLimit(settings.http.max_header_bytes);
        let data = web::Data::new(state.clone());
        let mut server = actix_web::HttpServer::new(move || {
            let (app, _) = routes::register(
                App::new()
                    .app_data(data.clone())
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
                    .wrap(from_fn(routes::openai::error::dialect))
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
        tokio::spawn(purge_idempotency_keys(
            state.idempotency.clone(),
            state.audit.clone(),
        ));
        tokio::spawn(keep_generation_lease(
            state.chats.clone(),
            settings.chats.generation_lease(),
        ));
        state.knowledge.start_workers(settings.knowledge.workers);
        state
            .webhooks
            .start_dispatchers(settings.webhooks.dispatchers);
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
        crate::drain::Stopper {
            server: self.server.handle(),
            chats: self.state.chats.clone(),
            draining: self.state.draining.clone(),
            timeout: self.shutdown_timeout,
        }
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
