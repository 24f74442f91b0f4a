//! The whole service graph of a Tessera process, without its HTTP surface: every domain
//! service over the adapters the settings choose (the database, the blob store, the vector
//! index, the embedded or hosted models, Redis, OCR, the MCP client, webhook delivery), the
//! ports that join one domain to another (attachments from files, RAG over datasets, tools
//! of linked MCP servers, counted credit refusals, image reading by the organization's
//! setting), the first run's bootstrap, and the background work (file processing, webhook
//! dispatch, generation leases, retention). `tessera-api` serves it over actix-web; any other
//! front end (a worker, a gRPC server, a test) builds the same graph with [`Services::build`].
//! It depends on domains, adapters and `tessera-setup`, never on an HTTP framework.

mod admission;
mod attachments;
mod background;
pub mod batches;
mod bootstrap;
pub mod cache_policies;
mod embedding_model;
mod error;
pub mod guardrails;
mod index_locations;
pub mod knowledge;
mod late_interaction;
pub mod mcp;
mod reindexing;
mod response_cache;
mod services;
pub mod upstreams;
pub mod webhooks;

pub use bootstrap::Bootstrap;
pub use error::ServicesError;
pub use services::{Services, rate_limiter};
