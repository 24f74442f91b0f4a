//! Reading the text of pictures (OCR): the port a document processor calls for the pages of
//! a PDF without a usable text layer (scanned pages), and for uploaded images of
//! organizations that opted in.

use std::time::Duration;

use crate::FileFormat;

/// Why one page's or image's text could not be recognised. A PDF page is skipped with this
/// reason (a document fails only when none of its pages has text); an image fails with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecognitionError {
    /// Rendering and recognising the page (or reading the image) took longer than the limit
    /// per page.
    #[error("OCR took longer than its {} s limit", .0.as_secs_f64())]
    TimedOut(Duration),
    /// The page could not be rendered to an image (damaged page content or images).
    #[error("the page could not be rendered for OCR: {0}")]
    Unrenderable(String),
    /// An uploaded image could not be decoded (damaged or truncated); the decoder's reason.
    #[error("the image could not be decoded: {0}")]
    Undecodable(String),
    /// The OCR engine itself failed (it could not start, or ended with an error).
    #[error("OCR failed: {0}")]
    Failed(String),
}

/// Recognises the text in pictures of pages and in images. Blocking: a document processor
/// calls it from its work off the async runtime.
pub trait TextRecognizer: Send + Sync {
    /// Renders and recognises each of `pages` (1-based page numbers of the PDF `document`) in
    /// the order given, handing each page's outcome to `each` as soon as it is known, so the
    /// caller can report progress page by page.
    fn pdf_pages(
        &self,
        document: &[u8],
        pages: &[u32],
        each: &mut dyn FnMut(u32, Result<String, RecognitionError>),
    );

    /// Whether [`TextRecognizer::image`] reads images of `format` here (PNG and JPEG as a
    /// rule; GIF and WebP where the engine was built with their decoders). `false` for
    /// formats that are not images.
    fn reads_image(&self, format: FileFormat) -> bool;

    /// Recognises the text of one image (`format` is one it reads) within the same time limit
    /// as a page.
    fn image(&self, image: &[u8], format: FileFormat) -> Result<String, RecognitionError>;
}
