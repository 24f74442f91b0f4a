//! The vector index of Tessera's knowledge bases on Qdrant: [`EdgeVectorIndex`] implements
//! [`tessera_knowledge::VectorIndex`] on the embedded qdrant-edge engine, one on-disk shard
//! under the data directory, so a single binary needs no vector server. Every chunk is one
//! point with a dense vector ([`DENSE_VECTOR`]), a sparse BM25 vector ([`SPARSE_VECTOR`],
//! computed here from the chunk's text, IDF applied by the engine) and a payload naming its
//! organization, file, ordinal and datasets; searches prefetch both rankings, fuse them by
//! reciprocal rank and filter by organization, dataset and file inside the engine.
//!
//! With the `server` feature, [`QdrantServerIndex`] implements the same port on a Qdrant
//! server or cluster over its REST API, storing exactly the same points. Everything the two
//! must agree on lives in shared modules: point ids, vector and field names, the payload,
//! the BM25 vectors, the search plan (rankings, candidates, RRF constant) and the scopes.

mod edge;
mod fields;
mod payload;
mod point_id;
mod scope;
mod search;
#[cfg(feature = "server")]
mod server;
mod vectors;

pub use edge::EdgeVectorIndex;
pub use fields::{DENSE_VECTOR, SPARSE_VECTOR};
pub use point_id::point_id;
#[cfg(feature = "server")]
pub use server::QdrantServerIndex;
