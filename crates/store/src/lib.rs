//! Diesel storage for Tessera: one crate implements every repository port on both
//! PostgreSQL (diesel-async + deadpool, for scale-out) and SQLite (the embedded default,
//! through diesel-async's sync-connection wrapper). Query code is written once and
//! type-checked against both backends (`with_connection!`); schema changes ship as
//! migration folders per backend and per domain (`migrations/<backend>/<part>`, see
//! [`Part`]), embedded in the binary, so a service can migrate one domain's tables alone.
//! Database errors are mapped into `tessera_kernel::DomainError` here and nowhere else.

mod api_keys;
mod artifacts;
mod audit;
mod batch;
mod batch_connections;
mod chats;
mod clients;
mod database;
mod datasets;
mod error;
mod files;
mod group_commit;
mod idempotency;
mod leases;
mod mcp_servers;
mod metrics;
mod model_datasets;
mod models;
mod organizations;
mod parts;
mod prompts;
mod schema;
#[cfg(feature = "testing")]
pub mod testing;
mod unnest;
mod usage;
mod webhooks;

pub use api_keys::SqlApiKeyStore;
pub use artifacts::SqlArtifactStore;
pub use audit::SqlAuditStore;
pub use chats::SqlChatStore;
pub use clients::SqlClientStore;
pub use database::{Backend, Database, DatabaseUrl, DatabaseUrlError, PoolOptions};
pub use datasets::SqlDatasetStore;
pub use error::StoreError;
pub use files::SqlFileStore;
pub use group_commit::GroupCommitStats;
pub use idempotency::SqlIdempotencyStore;
pub use mcp_servers::SqlMcpServerStore;
pub use metrics::{Backlog, CONNECTION_WAIT_TIME, PoolStatus};
pub use model_datasets::SqlDatasetLinkStore;
pub use models::SqlModelStore;
pub use organizations::SqlOrganizationStore;
pub use parts::Part;
pub use prompts::SqlPromptStore;
pub use usage::SqlUsageStore;
pub use webhooks::SqlWebhookStore;
