//! `/v1`'s request and response bodies, one module per resource: serde forms, OpenAPI
//! schemas, validation rules and the mapping from domain records.

pub mod api_keys;
pub mod audit;
pub mod clients;
pub mod model_datasets;
pub mod models;
pub mod organization;
pub mod particles;
pub mod system_prompts;
pub mod usage;
pub mod webhooks;
