//! Names of the vectors and payload fields every point carries (shared by all adapters).

/// The dense (embedding) vector's name.
pub const DENSE_VECTOR: &str = "dense";
/// The sparse BM25 vector's name (IDF applied by the engine).
pub const SPARSE_VECTOR: &str = "bm25";
/// The late-interaction multivector's name: a chunk's token vectors, compared with a query's
/// by MaxSim. Only used to rescore a search's candidates, never searched by graph.
pub const LATE_VECTOR: &str = "late";
/// The width of every late-interaction token vector the index stores and compares (a
/// model's wider vectors are cut to their first values before they reach the index).
pub const LATE_DIMENSIONS: usize = 128;

pub(crate) const ORGANIZATION_ID: &str = "organization_id";
pub(crate) const FILE_ID: &str = "file_id";
pub(crate) const DATASET_IDS: &str = "dataset_ids";

/// Payload fields with a keyword index: every search and change filters on them.
pub(crate) const KEYWORD_INDEXED: [&str; 3] = [ORGANIZATION_ID, DATASET_IDS, FILE_ID];
