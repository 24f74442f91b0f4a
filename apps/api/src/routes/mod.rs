//! HTTP handlers, one module per resource group. Handlers are thin: parse, call a domain
//! service, map the result. Every operation is listed in `crate::access::ROUTES`.

pub mod api_keys;
pub mod artifacts;
pub mod audit;
pub mod chats;
pub mod clients;
pub mod datasets;
pub mod fallback;
pub mod files;
pub mod health;
pub mod mcp_servers;
pub mod model_datasets;
pub mod models;
pub mod oauth;
pub mod openai;
pub mod organization;
pub mod particles;
pub mod system_prompts;
pub mod usage;
pub mod webhooks;
