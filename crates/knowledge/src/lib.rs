//! Files, datasets and the knowledge they hold (pure domain). It owns what an upload may be
//! (formats, size limits, content signatures, checked while the content streams), file and
//! dataset records with versions and snapshots, which uploads are processed (documents
//! always; images only where OCR reads their format and their organization opted in:
//! [`ImageReadingPolicy`]), the processing pipeline a worker runs
//! (extract and chunk, embed, index; retries and leases, progress), search, and embeddings on
//! request with their usage records. It knows nothing of HTTP, SQL, candle, Tesseract or
//! Qdrant: adapters implement [`BlobStore`], [`DocumentProcessor`] (with [`TextRecognizer`]
//! for pages without text and uploaded images), [`Embedder`], [`VectorIndex`], [`FileStore`]
//! and [`DatasetStore`], and the service's wiring [`ImageReadingPolicy`];
//! [`GenerationStore`] records the index's generations, which a [`Reindexer`] fills when the
//! embedding model changes while a [`MirroredIndex`] keeps both in step; search reranks its
//! fused candidates with a
//! [`Reranker`] (a cross-encoder) when one is configured. Late interaction's token vectors
//! ([`TokenVectors`], from a [`LateInteraction`] model) and their [`max_sim`] score are
//! plain types here for the stage that will rerank with them. The `memory` feature
//! has the store ports' in-memory reference (`InMemoryKnowledgeStore`, both ports over one
//! state), the `contract` feature their contract suite (`knowledge_store_contract!`) and
//! those of the other ports (`vector_index_contract!`, `blob_store_contract!`,
//! `embedder_contract!`) for any implementation, and the `rag` feature knowledge as the chats domain's retriever and the
//! models domain's dataset directory (`rag`).

mod attributes;
mod blob;
#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
mod dataset;
mod dataset_content;
mod dataset_service;
mod document;
mod embedding;
mod embeddings;
mod events;
mod file;
mod file_batch;
mod file_batch_service;
mod file_service;
mod file_text;
mod format;
mod generation;
mod image_reading;
mod index;
mod late_interaction;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod mirrored_index;
mod processing;
#[cfg(feature = "rag")]
pub mod rag;
mod recognition;
mod reindexer;
mod rerank;
mod store;
mod upload;

pub use attributes::{AttributeFilter, AttributeValue, Attributes, Comparison};
pub use blob::{BlobError, BlobRef, BlobStore, BlobWriter};
pub use dataset::{
    ACTIVITY_RESOLUTION, Dataset, DatasetChanges, DatasetFile, DatasetFileCounts, FileReference,
    MAX_EXPIRY_DAYS, Metadata, NewDataset, Snapshot,
};
pub use dataset_content::{DatasetContent, DatasetPassage};
pub use dataset_service::{
    DatasetService, EXPIRED, MAX_DATASET_DESCRIPTION_CHARS, MAX_DATASET_NAME_CHARS,
    MAX_QUERY_CHARS, MAX_SEARCH_LIMIT, SearchHit, SearchRequest, is_expired_refusal,
};
pub use document::{
    ChunkDraft, ChunkLocation, ChunkTokens, ChunkingSettings, DocumentError, DocumentProcessor,
    ExtractionProgress, ProgressSink, ignore_progress,
};
pub use embedding::{EmbedError, Embedder, NoEmbedder};
pub use embeddings::{
    EMBEDDED, EmbeddingError, EmbeddingRequest, EmbeddingService, Embeddings, MAX_EMBEDDING_INPUTS,
};
pub use events::{DatasetChange, DatasetUpdated, FileFailed, FileReady};
pub use file::{FileFilter, FilePurpose, FileStatus, Rechunking, StoredChunk, StoredFile};
pub use file_batch::{FileBatch, FileBatchProgress, FileBatchStatus, MAX_BATCH_FILES};
pub use file_service::FileService;
pub use file_text::DocumentText;
pub use format::{FileFormat, FormatError, MAX_DOCUMENT_BYTES, MAX_IMAGE_BYTES, TextCheck};
pub use generation::{
    GenerationProgress, GenerationState, GenerationStore, IndexGeneration, begin_generation,
    models_of,
};
pub use image_reading::ImageReadingPolicy;
pub use index::{
    IndexError, IndexedChunk, LateRerank, NoIndex, ScoredChunk, SearchMode, VectorIndex,
    VectorQuery,
};
pub use late_interaction::{LateInteraction, LateInteractionSearch, TokenVectors, max_sim};
pub use mirrored_index::MirroredIndex;
pub use processing::{JobOutcome, Pipeline, ProcessingSettings, Processor};
pub use recognition::{RecognitionError, TextRecognizer};
pub use reindexer::{GenerationTarget, ReindexRound, ReindexSettings, Reindexer};
pub use rerank::{RerankError, Reranker, Reranking};
pub use store::{ClaimedJob, DatasetStore, FileDeletion, FileStore};
pub use upload::{MAX_FILE_NAME_CHARS, Upload, UploadError, clean_file_name};

#[cfg(any(test, feature = "mocks"))]
pub use document::MockDocumentProcessor;
#[cfg(any(test, feature = "mocks"))]
pub use embedding::MockEmbedder;
#[cfg(any(test, feature = "mocks"))]
pub use generation::MockGenerationStore;
#[cfg(any(test, feature = "mocks"))]
pub use image_reading::MockImageReadingPolicy;
#[cfg(any(test, feature = "mocks"))]
pub use index::MockVectorIndex;
#[cfg(any(test, feature = "mocks"))]
pub use late_interaction::MockLateInteraction;
#[cfg(any(test, feature = "mocks"))]
pub use rerank::MockReranker;
#[cfg(any(test, feature = "mocks"))]
pub use store::{MockDatasetStore, MockFileStore};

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

tessera_kernel::entity_id!(
    /// A batch of files added to a dataset together.
    FileBatchId,
    "vsfb"
);
