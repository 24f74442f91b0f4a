//! The chat models of the catalog: each enabled base model served by its deployments (an
//! OpenAI-compatible or Anthropic Messages client per remote deployment, the embedded engine
//! for a local one),
//! routed with retries, fallbacks, timeouts and circuits when a remote provider serves it,
//! measured when metrics are on and traced when traces are exported; and the Redis server
//! the replicas share their circuits (and rate limits) through.

use std::sync::Arc;

use tessera_kernel::SystemClock;
use tessera_limits_redis::{RedisCircuits, RedisServer, RedisSetupError};
use tessera_llm_anthropic::{AnthropicChatModel, AnthropicConfig, DEFAULT_BASE_URL};
use tessera_llm_local::{LocalEngine, LocalEngineOptions, find_model_file};
use tessera_llm_openai::{
    ConfigError, OpenAiChatModel, OpenAiConfig, RetryPolicy as AdapterRetry, UpstreamSettings,
};
use tessera_metrics_prometheus::MeteredChatModel;
use tessera_models::{
    BaseModel, Catalog, ChatModel, CircuitBoard, CircuitPolicy, Deployment, DeploymentSettings,
    InProcessCircuits, Providers, RetryPolicy, RoutedChatModel,
};
use tessera_setup::config::Settings;
use tessera_traces_otlp::TracedChatModel;

use crate::ServicesError;

/// A chat model for every enabled base model that at least one deployment can serve.
pub async fn providers(catalog: &Catalog, settings: &Settings) -> Result<Providers, ServicesError> {
    // Shared by the replicas through Redis when there is one.
    let circuits: Arc<dyn CircuitBoard> = match redis_server(settings)? {
        Some(server) => Arc::new(
            RedisCircuits::connect_lazily(&server, "tessera:circuit:", CircuitPolicy::default())
                .map_err(|e| ServicesError::Redis(e.to_string()))?,
        ),
        None => Arc::new(InProcessCircuits::default()),
    };
    let mut providers = Providers::default();
    for model in catalog.models().iter().filter(|model| model.enabled) {
        let mut deployments = Vec::new();
        for deployment in &model.deployments {
            if let Some(served) = deployment_of(catalog, model, deployment, settings).await? {
                deployments.push(served);
            }
        }
        let remote = deployments.iter().any(|deployment| {
            catalog
                .provider(&deployment.provider)
                .is_some_and(|provider| provider.kind != "local")
        });
        if deployments.is_empty() {
            continue;
        }
        // A call is credited to the provider whose deployment answered (issue 61).
        let answering: Vec<String> = deployments.iter().map(|d| d.provider.clone()).collect();
        let measured = |chat_model: Arc<dyn ChatModel>| -> Arc<dyn ChatModel> {
            if settings.metrics.address().is_some() {
                Arc::new(MeteredChatModel::routed(
                    chat_model,
                    &model.id,
                    &model.provider,
                    answering.iter().map(String::as_str),
                ))
            } else {
                chat_model
            }
        };
        // The embedded engine alone has nothing to fall back to and cannot time out.
        if deployments.len() == 1 && !remote {
            providers.insert(model.id.clone(), measured(deployments.remove(0).model));
            continue;
        }
        let routed = RoutedChatModel::new(
            model.id.clone(),
            deployments,
            RetryPolicy::default(),
            circuits.clone(),
            Arc::new(SystemClock),
        )
        .map(Arc::new)
        .ok_or_else(|| ServicesError::Catalog(format!("model `{}`: no deployment", model.id)))?;
        providers.insert_routed(model.id.clone(), routed.clone(), measured(routed));
    }
    Ok(providers)
}

/// One deployment, ready; `None` when it cannot serve here (a provider without its key, an
/// embedded model whose file is not in `models.local_dir`).
async fn deployment_of(
    catalog: &Catalog,
    model: &BaseModel,
    deployment: &DeploymentSettings,
    settings: &Settings,
) -> Result<Option<Deployment>, ServicesError> {
    let Some(provider) = catalog.provider(&deployment.provider) else {
        return Ok(None);
    };
    let timeouts = catalog.timeouts(deployment);
    let chat_model: Arc<dyn ChatModel> = if provider.kind == "local" {
        match local_engine(settings, &deployment.model_name).await? {
            Some(engine) => engine,
            None => return Ok(None),
        }
    } else {
        // A deployment whose provider's key is unset is left out (as the catalog says).
        let key = match provider.api_key_env.as_deref().map(std::env::var) {
            None => None,
            Some(Ok(key)) if !key.trim().is_empty() => Some(key),
            Some(_) => return Ok(None),
        };
        let refused = |e: ConfigError| {
            ServicesError::Catalog(format!("provider `{}`: {e}", deployment.provider))
        };
        // Retries are the router's: the adapter makes one attempt.
        let transport = UpstreamSettings {
            connect_timeout: timeouts.connect,
            first_byte_timeout: timeouts.first_token,
            idle_timeout: timeouts.idle,
            retry: AdapterRetry::none(),
            extra_roots_pem: None,
            trace_headers: Some(tessera_traces_otlp::propagation::outgoing),
        };
        if provider.kind == "anthropic" {
            let base_url = provider.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
            let mut config = AnthropicConfig::new(base_url)
                .with_capabilities(model.capabilities)
                .with_transport(transport);
            if let Some(max_tokens) = model.max_tokens_per_request {
                config.default_max_tokens = config.default_max_tokens.min(max_tokens);
            }
            if let Some(key) = key {
                config = config.with_api_key(key);
            }
            Arc::new(AnthropicChatModel::new(config).map_err(refused)?)
        } else {
            let Some(base_url) = &provider.base_url else {
                return Ok(None);
            };
            let mut config = OpenAiConfig::new(base_url.clone())
                .with_capabilities(model.capabilities)
                .with_json_schema_style(provider.json_schema_style)
                .with_transport(transport);
            if let Some(key) = key {
                config = config.with_api_key(key);
            }
            Arc::new(OpenAiChatModel::new(config).map_err(refused)?)
        }
    };
    // Each attempt is a span of its own when traces are exported.
    let chat_model: Arc<dyn ChatModel> = if settings.telemetry.endpoint().is_some() {
        Arc::new(TracedChatModel::new(chat_model, &deployment.provider))
    } else {
        chat_model
    };
    Ok(Some(Deployment {
        name: deployment.name().to_owned(),
        provider: deployment.provider.clone(),
        model_name: deployment.model_name.clone(),
        weight: deployment.weight,
        priority: deployment.priority,
        timeouts,
        model: chat_model,
    }))
}

/// The embedded engine for a model file, when `models.local_dir` holds it.
async fn local_engine(
    settings: &Settings,
    file: &str,
) -> Result<Option<Arc<dyn ChatModel>>, ServicesError> {
    let Some(dir) = &settings.models.local_dir else {
        return Ok(None);
    };
    let Some(path) = find_model_file(dir, file) else {
        return Ok(None);
    };
    let shown = path.display().to_string();
    let options = LocalEngineOptions {
        prefix_cache_bytes: settings.models.prefix_cache_mib.saturating_mul(1 << 20),
        ..LocalEngineOptions::default()
    };
    let engine = tokio::task::spawn_blocking(move || LocalEngine::load(&path, options))
        .await
        .map_err(|e| ServicesError::Catalog(format!("loading {shown}: {e}")))?
        .map_err(|e| ServicesError::Catalog(format!("loading {shown}: {e}")))?;
    tracing::info!(model = %shown, "embedded engine loaded");
    Ok(Some(Arc::new(engine)))
}

/// The Redis server the replicas share, when `redis_url` is set: plain, or TLS checked
/// against the system's roots or `redis_ca_file`'s (read here, so a missing file stops the
/// start with its name).
pub fn redis_server(settings: &Settings) -> Result<Option<RedisServer>, ServicesError> {
    let Some(url) = &settings.redis_url else {
        return Ok(None);
    };
    let ca =
        match &settings.redis_ca_file {
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                ServicesError::RedisCa(format!("cannot read {}: {e}", path.display()))
            })?),
            None => None,
        };
    RedisServer::new(url, ca.as_deref())
        .map(Some)
        .map_err(|error| match error {
            RedisSetupError::Url(message) => ServicesError::Redis(message),
            RedisSetupError::CertificateAuthority(message) => ServicesError::RedisCa(message),
        })
}
