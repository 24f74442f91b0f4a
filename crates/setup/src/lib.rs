//! The pieces of Tessera's composition root that more than one app shares: the typed
//! settings (`config`: a TOML file overlaid with `TESSERA_*` variables, checked completely at
//! start-up), the server-side keys derived from the data directory (`secrets`), and the
//! wiring of the tenant services over the database ([`open_database`], [`tenancy`]:
//! organizations, identity, API keys, the audit log and the token-signing keys). `tessera-api`
//! builds the rest of its state on them and `tessera-admin` needs nothing more, so both read
//! the same settings and keys. It depends on domains and adapters only: no HTTP framework
//! (actix-web, utoipa), no inference (candle) and no vector index, so the operator CLI builds
//! none of them.

pub mod config;
pub mod otel;
pub mod secrets;
mod tenancy;

pub use tenancy::{SetupError, Tenancy, open_database, tenancy};
