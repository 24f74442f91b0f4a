//! Files, datasets and the knowledge they hold (pure domain). It owns what an upload may be
//! (formats, size limits, content signatures), file and dataset records, the processing
//! pipeline's steps (extract and chunk, embed, index) as ports, and retrieval for chats. It
//! knows nothing of HTTP, SQL, candle or Qdrant: adapters implement [`DocumentProcessor`],
//! [`Embedder`], [`VectorIndex`] and the stores.

mod document;
mod embedding;
mod format;
mod index;

pub use document::{ChunkDraft, ChunkLocation, ChunkingSettings, DocumentError, DocumentProcessor};
pub use embedding::{EmbedError, Embedder};
pub use format::{FileFormat, FormatError, MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, TextCheck};
pub use index::{IndexError, IndexedChunk, ScoredChunk, VectorIndex, VectorQuery};

tessera_kernel::entity_id!(
    /// An uploaded file's id.
    FileId,
    "file"
);

tessera_kernel::entity_id!(
    /// A dataset's id.
    DatasetId,
    "ds"
);
