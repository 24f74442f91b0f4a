//! The Qdrant server adapter: the same points as the embedded engine (see the crate docs),
//! in one collection of a Qdrant server or cluster, over its REST API with reqwest.
//!
//! Request bodies are built by pure functions ([`requests`]) and answers parsed by pure
//! functions ([`responses`]), so both are unit-tested without a server; [`index`] only sends
//! them. The contract suite runs against a real server when `QDRANT_URL` is set.

mod index;
mod requests;
mod responses;

pub use index::QdrantServerIndex;
