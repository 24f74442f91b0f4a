//! The vector index: dense and sparse vectors of every chunk, searched within one
//! organization and dataset by the engine itself.

use async_trait::async_trait;
use tessera_kernel::OrganizationId;

use crate::{ChunkLocation, DatasetId, FileId, TokenVectors};

/// One chunk as indexed: its text (also the source of its sparse BM25 vector, which the
/// index computes) and its dense embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedChunk {
    pub organization: OrganizationId,
    pub file_id: FileId,
    /// The chunk's position in its file, 0-based; with the file id it identifies the chunk.
    pub ordinal: u32,
    /// The datasets the file belongs to (search filters on them).
    pub datasets: Vec<DatasetId>,
    pub text: String,
    pub location: ChunkLocation,
    pub dense: Vec<f32>,
    /// The chunk's token vectors for late interaction (of the width the index was opened
    /// with), when the deployment computes them; `None` otherwise.
    pub late: Option<TokenVectors>,
}

/// Which rankings a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    /// Dense and sparse rankings fused by reciprocal rank (the default).
    #[default]
    Hybrid,
    /// Nearest dense embeddings only (meaning).
    Dense,
    /// BM25 over the words only (exact terms, names, codes).
    Sparse,
}

/// A search within one organization, and within one dataset or set of files.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorQuery {
    pub organization: OrganizationId,
    /// Only chunks of files in this dataset now; `None` searches `files` whatever datasets
    /// they are in (a snapshot's files).
    pub dataset: Option<DatasetId>,
    /// Only chunks of these files (a snapshot's files, or the caller's file filter).
    pub files: Option<Vec<FileId>>,
    /// The query's text, for the sparse (BM25) side.
    pub text: String,
    /// The query's dense embedding (empty for `Sparse`).
    pub dense: Vec<f32>,
    pub limit: usize,
    pub mode: SearchMode,
    /// Reorder the mode's best candidates by late interaction; `None` keeps its order.
    pub late: Option<LateRerank>,
}

/// Late interaction over a search's candidates: the mode's best `candidates` chunks are
/// ordered by MaxSim between `query` and each chunk's stored token vectors (the engine's
/// own comparator), best first, and the first `limit` of them returned. A candidate indexed
/// without token vectors is never dropped: such candidates follow the scored ones in the
/// mode's order.
#[derive(Debug, Clone, PartialEq)]
pub struct LateRerank {
    /// The query's token vectors, of the width the index was opened with.
    pub query: TokenVectors,
    /// How many of the mode's best chunks are reordered (at least `limit` are).
    pub candidates: usize,
}

/// A search hit, best first: its score is the fusion's (reciprocal rank of the dense and
/// sparse rankings), one ranking's, or MaxSim with late interaction.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredChunk {
    pub file_id: FileId,
    pub ordinal: u32,
    pub score: f32,
    pub text: String,
    pub location: ChunkLocation,
}

/// Why the index failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The engine or server failed or is unreachable; retrying later may help.
    #[error("the vector index is unavailable: {0}")]
    Unavailable(String),
    /// A vector of the wrong length, or another request the index refuses.
    #[error("the vector index refused the request: {0}")]
    Invalid(String),
}

/// Stores chunk vectors and searches them, filtering by organization, dataset and file in the
/// engine (never after the fact).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait VectorIndex: Send + Sync {
    /// Adds or replaces chunks (keyed by file id and ordinal).
    async fn upsert(&self, chunks: Vec<IndexedChunk>) -> Result<(), IndexError>;

    /// Replaces the dataset list of every chunk of a file (after an association changes).
    async fn set_datasets(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
        datasets: Vec<DatasetId>,
    ) -> Result<(), IndexError>;

    /// Removes every chunk of a file.
    async fn delete_file(
        &self,
        organization: &OrganizationId,
        file_id: &FileId,
    ) -> Result<(), IndexError>;

    /// The best chunks for a query: dense and sparse rankings fused by reciprocal rank.
    async fn search(&self, query: VectorQuery) -> Result<Vec<ScoredChunk>, IndexError>;
}

/// The index of deployments without an embedding model: nothing is ever indexed there, so
/// changes have nothing to update, and a search says the index is unavailable.
#[derive(Debug, Clone, Default)]
pub struct NoIndex;

#[async_trait]
impl VectorIndex for NoIndex {
    async fn upsert(&self, chunks: Vec<IndexedChunk>) -> Result<(), IndexError> {
        if chunks.is_empty() {
            Ok(())
        } else {
            Err(IndexError::Unavailable(
                "no vector index is configured".into(),
            ))
        }
    }

    async fn set_datasets(
        &self,
        _: &OrganizationId,
        _: &FileId,
        _: Vec<DatasetId>,
    ) -> Result<(), IndexError> {
        Ok(())
    }

    async fn delete_file(&self, _: &OrganizationId, _: &FileId) -> Result<(), IndexError> {
        Ok(())
    }

    async fn search(&self, _: VectorQuery) -> Result<Vec<ScoredChunk>, IndexError> {
        Err(IndexError::Unavailable(
            "no vector index is configured".into(),
        ))
    }
}
