//! The embedded qdrant-edge adapter: a blocking engine over one shard, and the async port
//! that runs it off the runtime.

pub(crate) mod config;
mod engine;
mod error;
pub(crate) mod filter;
mod index;
pub(crate) mod points;
mod query;

pub use index::EdgeVectorIndex;
