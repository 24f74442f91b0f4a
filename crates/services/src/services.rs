//! [`Services`]: every domain service of a Tessera process, built over an open database.

use std::{sync::Arc, time::Duration};

use tessera_audit::AuditService;
use tessera_auth::JwtKeys;
use tessera_chats::{ArtifactService, ChatPorts, ChatRelations, ChatService, PlansAndBudgets};
use tessera_guardrails::GuardrailService;
use tessera_idempotency::IdempotencyService;
use tessera_identity::{ApiKeyService, CredentialLimitsService, IdentityService};
use tessera_kernel::{CursorCodec, DomainError, SystemClock};
use tessera_knowledge::{
    EmbeddingService,
    rag::{DatasetRetriever, KnowledgeDirectory},
};
use tessera_limits::{InProcessRateLimiter, RateLimiter};
use tessera_limits_redis::RedisRateLimiter;
use tessera_mcp::McpService;
use tessera_models::{Catalog, DatasetLinks, ModelService, Providers};
use tessera_organizations::OrganizationService;
use tessera_prompts::{PromptService, SystemProfiles};
use tessera_response_cache::CachePolicyService;
use tessera_setup::{Tenancy, config::Settings};
use tessera_store::{
    Database, SqlArtifactStore, SqlChatStore, SqlDatasetLinkStore, SqlIdempotencyStore,
    SqlModelStore, SqlPromptStore, SqlUsageStore,
};
use tessera_tokenizer::{Encoding, TiktokenCounter};
use tessera_usage::{BudgetGuard, UsageService};

use crate::{
    ServicesError,
    admission::{CredentialLimitsOf, MeteredAdmission},
    attachments::FileAttachments,
    knowledge::Knowledge,
    knowledge::OrganizationImageReading,
    mcp::LinkedServerTools,
    response_cache::PolicyResponseCache,
    upstreams::redis_server,
    webhooks::Webhooks,
};

/// The database and the domain services built over it.
#[derive(Clone)]
pub struct Services {
    pub database: Database,
    pub organizations: OrganizationService,
    pub identity: IdentityService,
    /// Long-lived API keys (`tsk_…`); `identity` accepts them as bearer credentials.
    pub api_keys: ApiKeyService,
    /// API keys' and clients' budgets and model allow-lists (admission applies them).
    pub credential_limits: CredentialLimitsService,
    /// Spend against budgets, as admission reads it (through the same short cache).
    pub budgets: BudgetGuard,
    /// The audit log: listing, refused credentials, retention.
    pub audit: AuditService,
    pub prompts: PromptService,
    pub models: ModelService,
    pub chats: ChatService,
    /// A chat's model and system prompt composition, for `expand[]`.
    pub chat_relations: ChatRelations,
    pub artifacts: ArtifactService,
    pub usage: UsageService,
    /// Files, datasets and their processing workers.
    pub knowledge: Knowledge,
    /// Webhook registrations and their dispatchers.
    pub webhooks: Webhooks,
    /// OpenAI batches; their runners start with the serving process's line executor
    /// ([`Services::start_batch_runners`]).
    pub batches: tessera_batches::BatchService,
    /// Embeddings on request, when an embedding model is loaded.
    pub embeddings: Option<EmbeddingService>,
    /// MCP servers of organizations, and their links to user models.
    pub mcp: McpService,
    /// Guardrail policies of organizations and their models; completions are checked
    /// against them.
    pub guardrails: GuardrailService,
    /// Response cache policies of organizations' models.
    pub cache_policies: CachePolicyService,
    /// Datasets linked to user models (RAG).
    pub dataset_links: DatasetLinks,
    pub idempotency: IdempotencyService,
    pub keys: Arc<JwtKeys>,
    /// The token issuer (this service's public base URL).
    pub issuer: String,
    pub cursors: CursorCodec,
}

impl Services {
    /// Builds every service over an open database; `issuer` is the token issuer URL. Chats
    /// left `generating` by processes whose lease lapsed (they stopped mid-answer) become
    /// failed, and this process's generation lease is taken before it serves.
    pub async fn build(
        settings: &Settings,
        database: Database,
        issuer: String,
    ) -> Result<Self, ServicesError> {
        let Tenancy {
            organizations,
            identity,
            api_keys,
            credential_limits,
            audit,
            keys,
            cursors,
        } = tessera_setup::tenancy(settings, &database, &issuer)?;
        let clock = Arc::new(SystemClock);
        let prompts = prompts(&database, clock.clone(), cursors.clone()).await?;
        let (catalog, providers) = served_catalog(settings).await?;
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
        let usage_store = Arc::new(SqlUsageStore::new(database.clone()));
        let usage = UsageService::new(usage_store.clone(), clock.clone(), cursors.clone());
        let budgets = BudgetGuard::new(
            usage_store.clone(),
            clock.clone(),
            chrono::Duration::seconds(
                i64::try_from(settings.quotas.cache_secs).unwrap_or(i64::MAX),
            ),
        );
        // Images are read by OCR for the organizations whose own setting says so.
        let knowledge = Knowledge::build(settings, &database, clock.clone(), cursors.clone())
            .await?
            .with_image_reading(Arc::new(OrganizationImageReading(organizations.clone())));
        let embeddings = match knowledge.embedder.clone() {
            Some(embedder) => {
                // An embedding server bills like a catalog model; the embedded model, like
                // the embedded chat model, costs nothing.
                let remote = settings.knowledge.embedding_base_url.is_some();
                Some(EmbeddingService::new(
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
        let webhooks = Webhooks::build(
            &settings.webhooks,
            &database,
            clock.clone(),
            cursors.clone(),
        )?;
        let mcp = crate::mcp::build(
            settings,
            &database,
            models.clone(),
            clock.clone(),
            cursors.clone(),
        )
        .map_err(ServicesError::Mcp)?;
        let dataset_links = DatasetLinks::new(
            models.clone(),
            Arc::new(SqlDatasetLinkStore::new(database.clone())),
            Arc::new(KnowledgeDirectory(knowledge.datasets.clone())),
            clock.clone(),
        );
        let (guardrails, completion_guardrails) = crate::guardrails::build(
            &settings.guardrails,
            &database,
            models.clone(),
            clock.clone(),
        )
        .map_err(ServicesError::Guardrails)?;
        let cache_policies = crate::cache_policies::build(&database, models.clone(), clock.clone());
        // The chat store's runner is this process's: its leases keep the generations it
        // begins.
        let chat_store = Arc::new(SqlChatStore::new(database.clone()));
        let artifacts = ArtifactService::new(
            Arc::new(SqlArtifactStore::new(database.clone())),
            chat_store.clone(),
            cursors.clone(),
        );
        let chats = ChatService::new(ChatPorts {
            store: chat_store.clone(),
            leases: chat_store,
            models: Arc::new(models.clone()),
            prompts: Arc::new(prompts.clone()),
            retriever: Arc::new(DatasetRetriever {
                links: dataset_links.clone(),
                datasets: knowledge.datasets.clone(),
            }),
            attachments: Arc::new(FileAttachments(knowledge.files.clone())),
            server_tools: Arc::new(LinkedServerTools(mcp.clone())),
            admission: Arc::new(MeteredAdmission(PlansAndBudgets {
                plans: Arc::new(organizations.clone()),
                quotas: settings.quotas.credit_quotas(),
                budgets: budgets.clone(),
                credentials: Some(Arc::new(CredentialLimitsOf(credential_limits.clone()))),
            })),
            usage: usage_store.clone(),
            clock: clock.clone(),
            cursors: cursors.clone(),
        })
        .with_guardrails(Arc::new(completion_guardrails))
        .with_response_cache(Arc::new(PolicyResponseCache::new(
            &settings.response_cache,
            cache_policies.clone(),
            knowledge.embedder.clone(),
        )));
        let interrupted = chats
            .recover_interrupted(settings.chats.generation_lease())
            .await
            .map_err(|e| ServicesError::Recovery(e.to_string()))?;
        log_interrupted(interrupted);
        let chat_relations =
            ChatRelations::new(Arc::new(models.clone()), Arc::new(prompts.clone()));
        let batches = crate::batches::service(&database, knowledge.files.clone(), clock.clone());
        Ok(Self {
            database,
            organizations,
            identity,
            api_keys,
            credential_limits,
            budgets,
            audit,
            prompts,
            models,
            chats,
            chat_relations,
            artifacts,
            usage,
            knowledge,
            webhooks,
            batches,
            embeddings,
            mcp,
            guardrails,
            cache_policies,
            dataset_links,
            idempotency,
            keys,
            issuer,
            cursors,
        })
    }
}

/// The prompt service, with the built-in system profiles seeded.
async fn prompts(
    database: &Database,
    clock: Arc<SystemClock>,
    cursors: CursorCodec,
) -> Result<PromptService, ServicesError> {
    let store = Arc::new(SqlPromptStore::new(database.clone()));
    let prompts = PromptService::new(
        store.clone(),
        store,
        Arc::new(TiktokenCounter::shared(Encoding::default())?),
        clock,
        cursors,
    );
    let profiles = SystemProfiles::builtin().map_err(|e| ServicesError::Profiles(e.to_string()))?;
    prompts
        .seed_system_profiles(&profiles)
        .await
        .map_err(|e| ServicesError::Profiles(DomainError::from(e).to_string()))?;
    Ok(prompts)
}

/// The catalog (`models.catalog_file`, or the built-in one) with a provider for each base
/// model a deployment can serve; the others are disabled, with a warning.
async fn served_catalog(settings: &Settings) -> Result<(Catalog, Providers), ServicesError> {
    let mut catalog = match &settings.models.catalog_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                ServicesError::Catalog(format!("cannot read {}: {e}", path.display()))
            })?;
            Catalog::parse(&text, |name| std::env::var(name).ok())
        }
        None => Catalog::builtin(|name| std::env::var(name).ok()),
    }
    .map_err(|e| ServicesError::Catalog(e.to_string()))?;
    let providers = crate::upstreams::providers(&catalog, settings).await?;
    for id in catalog.disable_unserved(|id| providers.get(id).is_some()) {
        tracing::warn!(model = %id, "base model disabled: no provider can run it (for the embedded engine: `just models`, then set models.local_dir)");
    }
    Ok((catalog, providers))
}

/// The rate limiter: on Redis when `redis_url` is set, in this process otherwise. Redis
/// unreachable at start-up does not stop the process (decision 0023): the replica starts,
/// lets requests pass as it does when Redis is lost later, and connects when Redis answers.
/// Only an invalid URL (a configuration error) stops it.
pub async fn rate_limiter(settings: &Settings) -> Result<Arc<dyn RateLimiter>, ServicesError> {
    const PREFIX: &str = "tessera:ratelimit:";
    Ok(match redis_server(settings)? {
        Some(server) => match RedisRateLimiter::connect(&server, PREFIX).await {
            Ok(limiter) => Arc::new(limiter),
            Err(error) => {
                let limiter = RedisRateLimiter::connect_lazily(&server, PREFIX)
                    .map_err(|e| ServicesError::Redis(e.to_string()))?;
                tracing::warn!(%error, "Redis is unreachable at start-up; rate limits are not enforced until it answers");
                Arc::new(limiter)
            }
        },
        None => Arc::new(InProcessRateLimiter::default()),
    })
}

/// Says how many chats a stopped process left generating were marked as failed.
pub(crate) fn log_interrupted(chats: u64) {
    if chats > 0 {
        tracing::warn!(
            chats,
            "chats left generating by a stopped process marked as failed"
        );
    }
}
