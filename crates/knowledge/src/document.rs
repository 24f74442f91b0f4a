//! Turning a stored document into chunks: the first step of processing.

use std::sync::Arc;

use async_trait::async_trait;

use crate::FileFormat;

/// How documents are cut into chunks, in the tokens of the embedding model ([`ChunkTokens`];
/// `cl100k_base` tokens for a model whose tokenizer is not known here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkingSettings {
    /// The most tokens one chunk holds.
    pub max_tokens: usize,
    /// Tokens the end of one chunk shares with the start of the next (less than `max_tokens`).
    pub overlap_tokens: usize,
}

impl Default for ChunkingSettings {
    fn default() -> Self {
        // Within the window of every embedded model (all-MiniLM-L6-v2 reads 254 word pieces
        // of text, bge-small-en-v1.5 510).
        Self {
            max_tokens: 200,
            overlap_tokens: 30,
        }
    }
}

impl ChunkingSettings {
    /// These settings with `max_tokens` cut to what a model reads of one text (`window`),
    /// the overlap kept below it.
    pub fn within(self, window: usize) -> Self {
        let max_tokens = self.max_tokens.min(window).max(1);
        Self {
            max_tokens,
            overlap_tokens: self.overlap_tokens.min(max_tokens - 1),
        }
    }
}

/// The embedding model's own tokens, which chunks are sized in: a chunk then never holds
/// more than the model reads, whatever the text (code and languages other than English take
/// up to half as many word pieces again as `cl100k_base` tokens).
pub trait ChunkTokens: Send + Sync + std::fmt::Debug {
    /// The tokens of `text` alone: no special tokens, never truncated.
    fn count(&self, text: &str) -> usize;

    /// The most tokens of text the model reads of one text (its window less its special
    /// tokens).
    fn window(&self) -> usize;
}

/// Where a chunk came from in its document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkLocation {
    /// 1-based page number (PDF).
    pub page: Option<u32>,
    /// The heading path (markdown, docx), the JSON path, or the CSV row range, when known.
    pub section: Option<String>,
    /// Character offsets (Unicode scalar values, end exclusive) of the chunk in the
    /// document's extracted text.
    pub char_start: u64,
    pub char_end: u64,
}

/// One chunk of a document's extracted text, ready to be embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkDraft {
    pub text: String,
    pub token_count: u32,
    pub location: ChunkLocation,
}

/// Why a document cannot be processed. Each is a final answer about the content (retrying
/// does not help), shown to the user as the file's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error("the document is damaged and cannot be read: {0}")]
    Corrupt(String),
    #[error("the document is encrypted or password-protected")]
    Encrypted,
    #[error("the document contains no text")]
    Empty,
    /// A decompression bomb, or extracted text beyond what processing allows.
    #[error("the document expands to too much content: {0}")]
    TooLarge(String),
    #[error("{0} files are not extracted")]
    Unsupported(&'static str),
}

/// How far the slow part of a document's extraction has got: pages read by OCR, of those
/// that need it. Processing moves the file's `progress` (and keeps its job's lease) with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractionProgress {
    pub done: u32,
    pub total: u32,
}

/// Where a [`DocumentProcessor`] reports [`ExtractionProgress`]; called from its blocking
/// work, so it must return at once.
pub type ProgressSink = Arc<dyn Fn(ExtractionProgress) + Send + Sync>;

/// A sink for callers that do not follow progress.
pub fn ignore_progress() -> ProgressSink {
    Arc::new(|_| {})
}

/// Extracts a document's text (format-aware: pages, headings, rows, JSON paths) and chunks it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait DocumentProcessor: Send + Sync {
    /// The document's chunks in document order. CPU-bound work runs off the async runtime;
    /// long steps (OCR, page by page) report to `progress` as they go.
    async fn chunks(
        &self,
        format: FileFormat,
        content: Vec<u8>,
        settings: ChunkingSettings,
        progress: ProgressSink,
    ) -> Result<Vec<ChunkDraft>, DocumentError>;
}
