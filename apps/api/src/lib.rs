//! Tessera's HTTP service: the HTTPS (rustls) listener, actix-web handlers with request
//! validation and problem+json errors, the generated OpenAPI document, and the wiring of
//! domain services over their adapters. No business rule lives here; the settings and the
//! tenant services' wiring it shares with `tessera-admin` are `tessera-setup`'s.

pub mod access;
pub mod admission;
pub mod attachments;
pub mod chat_stream;
pub mod drain;
pub mod extract;
pub mod idempotency;
pub mod knowledge;
pub mod mcp;
pub mod mcp_endpoint;
pub mod metrics;
pub mod middleware;
pub mod openapi;
pub mod origin;
pub mod problem;
pub mod rate_limit;
pub mod routes;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod tls;
pub mod upstreams;
pub mod webhooks;
pub mod worker;

// The settings and the keys derived from the data directory, shared with `tessera-admin`.
pub use tessera_setup::{config, secrets};
