//! Reading the text of pages that carry none (OCR): the port a document processor calls for
//! the pages of a PDF without a usable text layer (scanned pages).

use std::time::Duration;

/// Why one page's text could not be recognised. The page is skipped with this reason; a
/// document fails only when none of its pages has text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecognitionError {
    /// Rendering and recognising the page took longer than the limit per page.
    #[error("OCR took longer than its {} s limit", .0.as_secs_f64())]
    TimedOut(Duration),
    /// The page could not be rendered to an image (damaged page content or images).
    #[error("the page could not be rendered for OCR: {0}")]
    Unrenderable(String),
    /// The OCR engine itself failed (it could not start, or ended with an error).
    #[error("OCR failed: {0}")]
    Failed(String),
}

/// Recognises the text in pictures of pages. Blocking: a document processor calls it from
/// its work off the async runtime.
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
}
