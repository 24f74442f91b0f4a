//! `/v1`'s request and response bodies, one module per resource: serde forms, OpenAPI
//! schemas, validation rules and the mapping from domain records.

pub mod api_keys;
pub mod artifacts;
pub mod audit;
pub mod chats;
pub mod clients;
pub mod credential_limits;
pub mod datasets;
pub mod files;
pub mod guardrails;
pub mod health;
pub mod mcp_servers;
pub mod model_datasets;
pub mod models;
pub mod oauth;
pub mod organization;
pub mod particles;
pub mod response_cache;
pub mod system_prompts;
pub mod usage;
pub mod webhooks;
