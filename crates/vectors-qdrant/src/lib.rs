//! The vector index of Tessera's knowledge bases on Qdrant: [`EdgeVectorIndex`] implements
//! [`tessera_knowledge::VectorIndex`] on the embedded qdrant-edge engine, one on-disk shard
//! under the data directory, so a single binary needs no vector server. Every chunk is one
//! point with a payload naming its organization, file, ordinal and datasets, and up to three
//! named vectors:
//!
//! - [`DENSE_VECTOR`]: the chunk's embedding (cosine, searched through an HNSW graph once a
//!   segment is large enough);
//! - [`SPARSE_VECTOR`]: its BM25 terms, computed here from the text, IDF applied by the
//!   engine (absent when the text has no token);
//! - [`LATE_VECTOR`]: its token vectors for late interaction, a multivector of
//!   [`LATE_DIMENSIONS`] values per token compared by MaxSim, stored in float16 on disk and
//!   never graph-indexed: it only rescores candidates (absent when the chunk has none).
//!
//! A search prefetches the dense and BM25 rankings (either or both, by mode), fuses them by
//! reciprocal rank and filters by organization, dataset and file inside the engine. With
//! late interaction the fusion's best candidates are reordered by the engine's MaxSim
//! against the query's token vectors, in the same query; candidates without token vectors
//! follow the scored ones in the fusion's order, with its scores. An index made before
//! late interaction (without [`LATE_VECTOR`]) keeps serving everything else, and refuses
//! token vectors as `Invalid`, saying that re-indexing into an empty one fixes it.
//!
//! With the `server` feature, [`QdrantServerIndex`] implements the same port on a Qdrant
//! server or cluster over its REST API, storing exactly the same points. Everything the two
//! must agree on lives in shared modules: point ids, vector and field names, the payload,
//! the vectors and their checks, the search plan (rankings, candidates, RRF constant,
//! rerank) and the scopes.

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
pub use fields::{DENSE_VECTOR, LATE_DIMENSIONS, LATE_VECTOR, SPARSE_VECTOR};
pub use point_id::point_id;
#[cfg(feature = "server")]
pub use server::QdrantServerIndex;
