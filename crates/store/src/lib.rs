//! Diesel storage for Tessera: one crate implements every repository port on both
//! PostgreSQL (diesel-async + deadpool, for scale-out) and SQLite (the embedded default,
//! through diesel-async's sync-connection wrapper). Query code is written once and
//! type-checked against both backends (`with_connection!`); schema changes ship as
//! migration folders per backend and per domain (`migrations/<backend>/<part>`, see
//! [`Part`]), embedded in the binary, so a service can migrate one domain's tables alone;
//! each domain's stores are a cargo feature of their own (all on by default), so it builds
//! that domain's code alone too. Database errors are mapped into
//! `tessera_kernel::DomainError` here and nowhere else.

#[cfg(feature = "identity")]
mod api_keys;
#[cfg(feature = "chats")]
mod artifacts;
mod audit;
#[cfg(feature = "audit")]
mod audit_log;
mod backend;
#[cfg(any(feature = "identity", feature = "chats"))]
mod batch;
#[cfg(any(feature = "identity", feature = "chats"))]
mod batch_connections;
#[cfg(feature = "batches")]
mod batches;
#[cfg(feature = "chats")]
mod chat_status;
#[cfg(feature = "chats")]
mod chats;
#[cfg(feature = "identity")]
mod clients;
#[cfg(feature = "identity")]
mod credential_limits;
mod database;
#[cfg(feature = "knowledge")]
mod datasets;
mod error;
#[cfg(feature = "knowledge")]
mod files;
#[cfg(feature = "chats")]
mod group_commit;
#[cfg(feature = "guardrails")]
mod guardrail_policies;
#[cfg(feature = "idempotency")]
mod idempotency;
#[cfg(feature = "knowledge")]
mod index_generations;
#[cfg(feature = "chats")]
mod leases;
#[cfg(feature = "mcp")]
mod mcp_servers;
mod metrics;
#[cfg(feature = "models")]
mod model_datasets;
#[cfg(feature = "models")]
mod models;
mod organizations;
mod parts;
#[cfg(feature = "prompts")]
mod prompts;
#[cfg(feature = "response-cache")]
mod response_cache_policies;
mod schema;
#[cfg(feature = "testing")]
pub mod testing;
mod time;
#[cfg(feature = "chats")]
mod unnest;
#[cfg(feature = "chats")]
mod usage;
#[cfg(feature = "webhooks")]
mod webhooks;

#[cfg(feature = "identity")]
pub use api_keys::SqlApiKeyStore;
#[cfg(feature = "chats")]
pub use artifacts::SqlArtifactStore;
#[cfg(feature = "audit")]
pub use audit_log::SqlAuditStore;
pub use backend::Backend;
#[cfg(feature = "batches")]
pub use batches::SqlBatchStore;
#[cfg(feature = "chats")]
pub use chats::SqlChatStore;
#[cfg(feature = "identity")]
pub use clients::SqlClientStore;
#[cfg(feature = "identity")]
pub use credential_limits::SqlCredentialLimitsStore;
pub use database::{Database, DatabaseUrl, DatabaseUrlError, PoolOptions};
#[cfg(feature = "knowledge")]
pub use datasets::SqlDatasetStore;
pub use error::StoreError;
#[cfg(feature = "knowledge")]
pub use files::SqlFileStore;
#[cfg(feature = "chats")]
pub use group_commit::GroupCommitStats;
#[cfg(feature = "guardrails")]
pub use guardrail_policies::SqlGuardrailPolicyStore;
#[cfg(feature = "idempotency")]
pub use idempotency::SqlIdempotencyStore;
#[cfg(feature = "mcp")]
pub use mcp_servers::SqlMcpServerStore;
pub use metrics::{Backlog, CONNECTION_WAIT_TIME, PoolStatus};
#[cfg(feature = "models")]
pub use model_datasets::SqlDatasetLinkStore;
#[cfg(feature = "models")]
pub use models::SqlModelStore;
pub use organizations::SqlOrganizationStore;
pub use parts::Part;
#[cfg(feature = "prompts")]
pub use prompts::SqlPromptStore;
#[cfg(feature = "response-cache")]
pub use response_cache_policies::SqlCachePolicyStore;
#[cfg(feature = "chats")]
pub use usage::SqlUsageStore;
#[cfg(feature = "webhooks")]
pub use webhooks::SqlWebhookStore;
