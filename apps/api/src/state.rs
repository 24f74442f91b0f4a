use std::sync::Arc;

use tessera_auth::JwtKeys;
use tessera_chats::{ArtifactService, ChatRelations, ChatService};
use tessera_idempotency::IdempotencyService;
use tessera_identity::{ApiKeyService, IdentityService};
use tessera_kernel::CursorCodec;
use tessera_models::ModelService;
use tessera_organizations::OrganizationService;
use tessera_prompts::PromptService;
use tessera_store::Database;
use tessera_usage::UsageService;

/// What handlers share: the database and the domain services built over it.
#[derive(Clone)]
pub struct AppState {
    pub database: Database,
    pub organizations: OrganizationService,
    pub identity: IdentityService,
    /// Long-lived API keys (`tsk_…`); `identity` accepts them as bearer credentials.
    pub api_keys: ApiKeyService,
    /// The audit log: listing, refused credentials, retention.
    pub audit: tessera_audit::AuditService,
    pub prompts: PromptService,
    pub models: ModelService,
    pub chats: ChatService,
    /// A chat's model and system prompt composition, for `expand[]`.
    pub chat_relations: ChatRelations,
    pub artifacts: ArtifactService,
    pub usage: UsageService,
    /// Files, datasets and their processing workers.
    pub knowledge: crate::knowledge::Knowledge,
    /// Webhook registrations and their dispatchers.
    pub webhooks: crate::webhooks::Webhooks,
    /// Embeddings on request, when an embedding model is loaded.
    pub embeddings: Option<tessera_knowledge::EmbeddingService>,
    /// MCP servers of organizations, and their links to user models.
    pub mcp: tessera_mcp::McpService,
    /// Datasets linked to user models (RAG).
    pub dataset_links: tessera_models::DatasetLinks,
    pub idempotency: IdempotencyService,
    pub keys: Arc<JwtKeys>,
    /// The token issuer (this service's public base URL).
    pub issuer: String,
    pub cursors: CursorCodec,
    pub limits: crate::rate_limit::Limits,
    /// Set once SIGTERM arrived: completions are refused while running ones finish.
    pub draining: crate::drain::Draining,
}
