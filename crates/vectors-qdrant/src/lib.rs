//! The vector index of Tessera's knowledge bases on Qdrant: [`EdgeVectorIndex`] implements
//! [`tessera_knowledge::VectorIndex`] on the embedded qdrant-edge engine, one on-disk shard
//! under the data directory, so a single binary needs no vector server. Every chunk is one
//! point with a dense vector ([`DENSE_VECTOR`]), a sparse BM25 vector ([`SPARSE_VECTOR`],
//! computed here from the chunk's text, IDF applied by the engine) and a payload naming its
//! organization, file, ordinal and datasets; searches prefetch both rankings, fuse them by
//! reciprocal rank and filter by organization, dataset and file inside the engine. The point
//! ids, field names and payload encoding live in their own modules so a Qdrant server adapter
//! can share them.

mod edge;
mod fields;
mod payload;
mod point_id;

pub use edge::EdgeVectorIndex;
pub use fields::{DENSE_VECTOR, SPARSE_VECTOR};
pub use point_id::point_id;
