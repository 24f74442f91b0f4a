//! Tessera's HTTP service: the route table and its access rules, the actix-web handlers
//! (parse, call a domain service, map the answer), the generated OpenAPI document, Tessera's
//! own MCP endpoint, and the HTTPS server over the service graph. No business rule lives
//! here: the services and their wiring are `tessera-services`', the settings
//! `tessera-setup`'s, and the framework's reusable pieces (problems, extractors, guards,
//! idempotency, TLS) `tessera-http-actix`'s.

pub mod access;
pub mod batch_lines;
pub mod caller;
pub mod completion;
pub mod mcp_endpoint;
pub mod metrics;
pub mod middleware;
pub mod openapi;
pub mod routes;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod worker;

// The HTTP framework's pieces, under the paths the handlers use.
pub use tessera_http_actix::{
    chat_stream, drain, extract, idempotency, origin, problem, rate_limit, tls,
};

// The settings and the keys derived from the data directory, shared with `tessera-admin`.
pub use tessera_setup::{config, secrets};
