//! PDF: the text layer of each page (`pdf-extract` over `lopdf`), pages joined by a blank line,
//! each page a segment chunks do not cross.
//!
//! A document that opens with the empty user password (only an owner password restricting
//! printing or copying) is read; any other encryption is [`DocumentError::Encrypted`]. Before
//! any page is interpreted, the Flate streams that are not images are inflated through a
//! counter, so a decompression bomb is refused ([`DocumentError::TooLarge`]) instead of filling
//! memory. The extraction crates panic on some malformed input: every call into them runs under
//! `catch_unwind`. A page that cannot be read is skipped (with a warning) when other pages can
//! be; when none can, the document is [`DocumentError::Corrupt`].

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_extract::{Document, Object, OutputError, PlainTextOutput};
use tessera_knowledge::DocumentError;

use crate::Limits;
use crate::text::{Extracted, Segment, too_long};

const PAGE_SEPARATOR: &str = "\n\n";

pub(crate) fn extract(content: &[u8], limits: &Limits) -> Result<Extracted, DocumentError> {
    let document = catch_unwind(|| Document::load_mem(content))
        .map_err(|_| corrupt("the PDF structure could not be parsed"))?
        .map_err(load_error)?;
    if document.is_encrypted() {
        return Err(DocumentError::Encrypted);
    }
    check_expansion(&document, limits)?;
    let pages = document.get_pages();
    if pages.is_empty() {
        return Err(corrupt("the PDF has no pages"));
    }
    let mut extracted = Extracted::default();
    let mut chars = 0usize;
    let mut failed = 0usize;
    for &number in pages.keys() {
        let page = match page_text(&document, number) {
            Ok(page) => page,
            Err(reason) => {
                tracing::warn!(page = number, %reason, "a PDF page's text could not be extracted");
                failed += 1;
                continue;
            }
        };
        chars += page.chars().count();
        if chars > limits.max_text_chars {
            return Err(too_long(limits));
        }
        if !extracted.text.is_empty() {
            extracted.text.push_str(PAGE_SEPARATOR);
        }
        let start = extracted.text.len();
        extracted.text.push_str(&page);
        extracted.segments.push(Segment {
            start,
            end: extracted.text.len(),
            page: Some(number),
            section: None,
        });
    }
    if failed == pages.len() {
        return Err(corrupt("no page's text could be read"));
    }
    Ok(extracted)
}

/// One page's text, trimmed, without control characters other than line breaks and tabs.
fn page_text(document: &Document, number: u32) -> Result<String, String> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut text = String::new();
        let mut output = PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(document, &mut output, number).map(|()| text)
    }));
    match result {
        Ok(Ok(text)) => Ok(text
            .trim()
            .chars()
            .map(|character| if character == '\r' { '\n' } else { character })
            .filter(|character| !character.is_control() || matches!(character, '\n' | '\t'))
            .collect()),
        Ok(Err(error)) => Err(output_error(&error)),
        Err(_) => Err("the text extractor failed on this page".to_owned()),
    }
}

fn output_error(error: &OutputError) -> String {
    match error {
        OutputError::PdfError(error) => error.to_string(),
        OutputError::FormatError(_) | OutputError::IoError(_) => {
            "unreadable page content".to_owned()
        }
    }
}

fn load_error(error: pdf_extract::Error) -> DocumentError {
    match error {
        pdf_extract::Error::Decryption(_) | pdf_extract::Error::InvalidPassword => {
            DocumentError::Encrypted
        }
        other => corrupt(&format!("the PDF could not be read: {other}")),
    }
}

/// Inflates every Flate-compressed stream that is not an image (page contents, forms, fonts,
/// object streams) through a counter, refusing the document when together they expand beyond
/// the limit. Streams that fail to inflate are left for the extractor to judge.
fn check_expansion(document: &Document, limits: &Limits) -> Result<(), DocumentError> {
    let mut remaining = limits.max_expanded_bytes;
    for object in document.objects.values() {
        let Object::Stream(stream) = object else {
            continue;
        };
        let is_image = stream
            .dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .is_ok_and(|name| name == b"Image");
        if is_image || !is_flate(stream.dict.get(b"Filter").ok()) {
            continue;
        }
        let mut inflater = flate2::read::ZlibDecoder::new(stream.content.as_slice())
            .take(remaining.saturating_add(1));
        let inflated = std::io::copy(&mut inflater, &mut std::io::sink()).unwrap_or(0);
        if inflated > remaining {
            return Err(DocumentError::TooLarge(format!(
                "the PDF's streams expand to more than {} bytes",
                limits.max_expanded_bytes
            )));
        }
        remaining -= inflated;
    }
    Ok(())
}

fn is_flate(filter: Option<&Object>) -> bool {
    match filter {
        Some(Object::Name(name)) => name == b"FlateDecode" || name == b"Fl",
        Some(Object::Array(filters)) => filters.iter().any(|filter| is_flate(Some(filter))),
        _ => false,
    }
}

fn corrupt(reason: &str) -> DocumentError {
    DocumentError::Corrupt(reason.to_owned())
}
