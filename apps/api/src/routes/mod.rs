//! HTTP handlers, one module per resource group. Handlers are thin: parse, call a domain
//! service, map the result.

pub mod fallback;
pub mod health;
