//! Text extraction and chunking of uploaded documents: [`DocumentChunker`] implements the
//! knowledge domain's [`DocumentProcessor`] port for pdf (text layer per page, OCR through a
//! [`TextRecognizer`] for pages without one), docx
//! (paragraphs, heading paths, tables), txt, md (heading paths, fences kept whole when they
//! fit), csv (whole rows under a repeated header), json (flattened `path: value` lines) and
//! images the recognizer reads (the knowledge domain queues them only for organizations that
//! opted in), and cuts the text into chunks sized in the embedding model's own tokens
//! ([`ChunkTokens`]; `cl100k_base` tokens when they are not known) with overlap. It
//! owns the defences against hostile files (decompression bombs, encrypted or damaged files,
//! panicking parsers, oversized text, images declaring more pixels than OCR may decode) and
//! runs all CPU-bound work on tokio's blocking pool; images are refused as not extracted when
//! no recognizer reads them.

mod chunking;
mod docx;
mod image;
mod json;
mod markdown;
mod pdf;
mod tabular;
#[cfg(feature = "testing")]
pub mod testing;
mod text;

use std::sync::Arc;

use async_trait::async_trait;
use tessera_knowledge::{
    ChunkDraft, ChunkTokens, ChunkingSettings, DocumentError, DocumentProcessor,
    ExtractionProgress, FileFormat, ProgressSink, TextRecognizer,
};

use crate::chunking::{Chunker, Sizer};
pub use crate::image::MAX_IMAGE_PIXELS;

/// How much a document may expand to while it is processed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes a document may decompress to: the sum of a docx's `word/document.xml`
    /// and `word/styles.xml`, or of a pdf's compressed (Flate) non-image streams. Checked while
    /// decompressing, never trusted from headers. Beyond it: [`DocumentError::TooLarge`].
    pub max_expanded_bytes: u64,
    /// The most characters (Unicode scalar values) of extracted text; for json, of the
    /// flattened `path: value` lines. Beyond it: [`DocumentError::TooLarge`].
    pub max_text_chars: usize,
}

impl Limits {
    /// 200 MB expanded, 20 million characters of text.
    pub const DEFAULT: Self = Self {
        max_expanded_bytes: 200 * 1024 * 1024,
        max_text_chars: 20_000_000,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The [`DocumentProcessor`]: extracts a document's text format-aware and chunks it, sized in
/// the embedding model's tokens ([`DocumentChunker::with_chunk_tokens`]) or else
/// `cl100k_base` tokens.
///
/// What each chunk's [`tessera_knowledge::ChunkLocation`] holds:
/// - `char_start..char_end`: character offsets (Unicode scalar values, end exclusive) of the
///   chunk's text in the document's extracted text, which is
///   - txt, md, csv: the file's text itself (without a leading UTF-8 byte order mark);
///   - pdf: each page's text layer, pages joined by a blank line (`"\n\n"`); a page with a
///     detected table is its prose lines top-down with the table as markdown rows (as for
///     docx), a blank line around it;
///   - docx: paragraphs one per line; each top-level table as markdown rows one per line
///     (`| a | b |`; `|` in a cell escaped as `\|`, a cell's line breaks and nested tables
///     on its line), the separator line `| --- | --- |` after the first row (the header),
///     and a blank line around the table;
///   - json: the flattened lines `path: value` joined by `"\n"`;
///   - an image read by OCR: its recognised text, trimmed, without control characters
///     other than line breaks and tabs.
///
///   For txt, md, pdf, docx prose and images, slicing the extracted text by the offsets gives
///   the chunk's text exactly. A csv chunk repeats the header line above its rows: its offsets
///   span the rows only (from the first row's start to the last row's end), so slicing gives
///   the rows as the file has them (its line endings; the chunk joins rows with `"\n"`). A
///   docx table chunk likewise repeats the header row and separator line above whole rows,
///   and its offsets span the rows only, except the table's first chunk, whose offsets start
///   at the header row (slicing it gives its text exactly); a header longer than half of
///   `max_tokens` is not repeated, and each chunk of such a table slices exactly.
/// - `page`: pdf only, the 1-based page the chunk is on (chunks never span pages); `None`
///   for an image.
/// - `section`: md and docx, the heading path in effect where the chunk starts
///   (`"Intro > Setup"`; a docx `Title` paragraph is the outermost level; none before the
///   first heading); docx chunks never span a heading. csv: the record range `"rows 2-40"` or `"row 7"`, numbered from 1 with the
///   header as row 1 (these are line numbers unless a quoted field holds a line break). json:
///   the longest path all of the chunk's lines share (`"$.items[3]"`, at least `"$"`).
#[derive(Clone, Default)]
pub struct DocumentChunker {
    limits: Limits,
    recognizer: Option<Arc<dyn TextRecognizer>>,
    /// The embedding model's tokens chunks are sized in (`cl100k_base` without).
    chunk_tokens: Option<Arc<dyn ChunkTokens>>,
}

impl std::fmt::Debug for DocumentChunker {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DocumentChunker")
            .field("limits", &self.limits)
            .field("ocr", &self.recognizer.is_some())
            .field("chunk_tokens", &self.chunk_tokens)
            .finish()
    }
}

impl DocumentChunker {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            recognizer: None,
            chunk_tokens: None,
        }
    }

    /// Sizes chunks in `tokens` (the embedding model's own) rather than `cl100k_base`
    /// tokens, and cuts `max_tokens` to what the model reads of one text.
    pub fn with_chunk_tokens(mut self, tokens: Arc<dyn ChunkTokens>) -> Self {
        self.chunk_tokens = Some(tokens);
        self
    }

    /// Reads PDF pages without a usable text layer, and images of the formats it reads, with
    /// `recognizer` (without one, such pages are skipped and images refused as not
    /// extracted).
    pub fn with_ocr(mut self, recognizer: Arc<dyn TextRecognizer>) -> Self {
        self.recognizer = Some(recognizer);
        self
    }

    /// The recognizer, when it reads images of `format`.
    fn image_reader(&self, format: FileFormat) -> Option<&dyn TextRecognizer> {
        self.recognizer
            .as_deref()
            .filter(|recognizer| format.is_image() && recognizer.reads_image(format))
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The synchronous work behind [`DocumentProcessor::chunks`]: call it off the async
    /// runtime.
    pub fn chunks_blocking(
        &self,
        format: FileFormat,
        content: &[u8],
        settings: ChunkingSettings,
        progress: &dyn Fn(ExtractionProgress),
    ) -> Result<Vec<ChunkDraft>, DocumentError> {
        if format.is_image() && self.image_reader(format).is_none() {
            return Err(DocumentError::Unsupported(format.as_str()));
        }
        let sizer = match &self.chunk_tokens {
            Some(tokens) => Sizer::Model(tokens.as_ref()),
            None => Sizer::Tiktoken(tiktoken_rs::cl100k_base_singleton()),
        };
        let chunker = Chunker::new(sizer, settings);
        let limits = &self.limits;
        let chunks = match format {
            FileFormat::Txt => {
                let text = text::utf8(content)?;
                text::check(text, limits)?;
                chunker.prose(text, 0, None, None)
            }
            FileFormat::Md => {
                let text = text::utf8(content)?;
                text::check(text, limits)?;
                markdown::chunks(text, &chunker)
            }
            FileFormat::Csv => {
                let text = text::utf8(content)?;
                text::check(text, limits)?;
                tabular::chunks(text, &chunker)?
            }
            FileFormat::Json => {
                let text = text::utf8(content)?;
                text::check(text, limits)?;
                json::chunks(text, &chunker, limits)?
            }
            FileFormat::Pdf => {
                let ocr = self.recognizer.as_deref().map(|recognizer| pdf::Ocr {
                    recognizer,
                    progress,
                });
                pdf::extract(content, limits, ocr)?.chunks(&chunker, limits)?
            }
            FileFormat::Docx => docx::extract(content, limits)?.chunks(&chunker, limits)?,
            FileFormat::Png | FileFormat::Jpeg | FileFormat::Gif | FileFormat::Webp => {
                let Some(recognizer) = self.image_reader(format) else {
                    return Err(DocumentError::Unsupported(format.as_str()));
                };
                image::chunks(recognizer, format, content, &chunker, limits, progress)?
            }
        };
        if chunks.is_empty() {
            return Err(DocumentError::Empty);
        }
        // Overlapping pieces of a text cut at character boundaries can come out of order.
        let mut chunks = chunks;
        chunks.sort_by_key(|chunk| (chunk.location.char_start, chunk.location.char_end));
        Ok(chunks)
    }
}

#[async_trait]
impl DocumentProcessor for DocumentChunker {
    async fn chunks(
        &self,
        format: FileFormat,
        content: Vec<u8>,
        settings: ChunkingSettings,
        progress: ProgressSink,
    ) -> Result<Vec<ChunkDraft>, DocumentError> {
        if format.is_image() && self.image_reader(format).is_none() {
            return Err(DocumentError::Unsupported(format.as_str()));
        }
        let this = self.clone();
        let task = tokio::task::spawn_blocking(move || {
            this.chunks_blocking(format, &content, settings, progress.as_ref())
        });
        match task.await {
            Ok(result) => result,
            Err(error) => {
                // Third-party parsers' panics are caught where they run; reaching this is a bug
                // here, reported as a damaged document because the port has no other answer.
                tracing::error!(%error, format = format.as_str(), "document processing failed");
                Err(DocumentError::Corrupt(
                    "the document could not be processed".to_owned(),
                ))
            }
        }
    }
}
