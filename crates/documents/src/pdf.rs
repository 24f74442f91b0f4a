//! PDF: the text layer of each page (`pdf-extract` over `lopdf`), pages joined by a blank line,
//! each page a segment chunks do not cross. A page without a usable text layer (fewer than
//! [`MIN_LAYER_CHARS`] letters or digits: a scanned page, or one the extractor cannot read)
//! is read by OCR when a [`TextRecognizer`] is configured, and keeps whichever of the two
//! texts has more letters and digits; its page number stays its own.
//!
//! A document that opens with the empty user password (only an owner password restricting
//! printing or copying) is read; any other encryption is [`DocumentError::Encrypted`]. Before
//! any page is interpreted, the Flate streams that are not images are inflated through a
//! counter, so a decompression bomb is refused ([`DocumentError::TooLarge`]) instead of filling
//! memory. The extraction crates panic on some malformed input: every call into them runs under
//! `catch_unwind`. A page that cannot be read (neither its text layer nor, where configured, by
//! OCR, within its time limit) is skipped with a warning when other pages have text; when none
//! has, the document is [`DocumentError::Corrupt`] with the pages' reasons, or
//! [`DocumentError::Empty`] when every page was read and is blank.
//!
//! A table on a page with a text layer (lines whose words line up in columns) becomes a
//! markdown table segment of that page, chunked like a DOCX table; the prose around it stays
//! prose of the same page (`pdf/page_text.rs`, decision 0038).

use std::collections::BTreeMap;
use std::io::Read;
use std::panic::catch_unwind;

use pdf_extract::{Document, Object, ObjectId};
use tessera_knowledge::{DocumentError, ExtractionProgress, TextRecognizer};

use crate::Limits;
use crate::text::{Extracted, Segment, too_long};

pub(crate) use self::page_text::clean;
use self::page_text::{PageText, TableSpan};

mod images;
mod page_text;
mod positioned;
mod tables;

const PAGE_SEPARATOR: &str = "\n\n";
/// Fewer letters and digits than this in a page's text layer send the page to OCR: a scanned
/// page often carries a page number or a stamp as text, and nothing else.
pub(crate) const MIN_LAYER_CHARS: usize = 16;
/// How many skipped pages' reasons a failure names.
const REASONS_NAMED: usize = 3;

/// OCR for pages without text, and where to report its progress.
pub(crate) struct Ocr<'a> {
    pub recognizer: &'a dyn TextRecognizer,
    pub progress: &'a dyn Fn(ExtractionProgress),
}

/// One page as read: its text, or why it has none, and the tables in its text layer.
struct PageRead {
    number: u32,
    text: Result<String, String>,
    tables: Vec<TableSpan>,
}

impl PageRead {
    fn new(number: u32, read: Result<PageText, String>) -> Self {
        match read {
            Ok(page) => Self {
                number,
                text: Ok(page.text),
                tables: page.tables,
            },
            Err(reason) => Self {
                number,
                text: Err(reason),
                tables: Vec::new(),
            },
        }
    }

    fn letters(&self) -> usize {
        self.text.as_deref().map_or(0, letters)
    }
}

pub(crate) fn extract(
    content: &[u8],
    limits: &Limits,
    ocr: Option<Ocr<'_>>,
) -> Result<Extracted, DocumentError> {
    let document = catch_unwind(|| Document::load_mem(content))
        .map_err(|_| corrupt("the PDF structure could not be parsed"))?
        .map_err(load_error)?;
    if document.is_encrypted() {
        return Err(DocumentError::Encrypted);
    }
    check_expansion(&document, limits)?;
    let page_ids = document.get_pages();
    if page_ids.is_empty() {
        return Err(corrupt("the PDF has no pages"));
    }
    let mut pages: Vec<PageRead> = page_ids
        .keys()
        .map(|&number| PageRead::new(number, page_text::read(&document, number)))
        .collect();
    if let Some(ocr) = ocr {
        recognize(&document, &page_ids, content, &mut pages, &ocr);
    }
    join(&pages, limits)
}

/// Reads by OCR every page whose text layer is missing or too thin, keeping the better text.
/// A page whose every image is damaged is not sent: the renderer would draw it blank without
/// a word, and the damage is the reason to give.
fn recognize(
    document: &Document,
    page_ids: &BTreeMap<u32, ObjectId>,
    content: &[u8],
    pages: &mut [PageRead],
    ocr: &Ocr<'_>,
) {
    let mut wanted = Vec::new();
    for page in pages.iter_mut() {
        if page.letters() >= MIN_LAYER_CHARS {
            continue;
        }
        let damage = page_ids
            .get(&page.number)
            .and_then(|&id| images::damage(document, id));
        match damage {
            Some(reason) if page.letters() == 0 => page.text = Err(reason),
            Some(_) => {}
            None => wanted.push(page.number),
        }
    }
    if wanted.is_empty() {
        return;
    }
    let total = u32::try_from(wanted.len()).unwrap_or(u32::MAX);
    let mut done = 0;
    (ocr.progress)(ExtractionProgress { done, total });
    ocr.recognizer
        .pdf_pages(content, &wanted, &mut |number, recognized| {
            done += 1;
            (ocr.progress)(ExtractionProgress { done, total });
            let Some(page) = pages.iter_mut().find(|page| page.number == number) else {
                return;
            };
            match recognized {
                Ok(text) => {
                    let text = clean(&text);
                    if letters(&text) > page.letters() {
                        page.text = Ok(text);
                        page.tables.clear();
                    }
                }
                Err(error) => {
                    tracing::warn!(page = number, %error, "a PDF page could not be read by OCR");
                    if page.letters() == 0 {
                        page.text = Err(error.to_string());
                    }
                }
            }
        });
}

/// The pages' texts joined by a blank line, a segment each; pages without text are skipped.
fn join(pages: &[PageRead], limits: &Limits) -> Result<Extracted, DocumentError> {
    let mut extracted = Extracted::default();
    let mut chars = 0usize;
    let mut reasons = Vec::new();
    for page in pages {
        let text = match &page.text {
            Ok(text) => text,
            Err(reason) => {
                tracing::warn!(page = page.number, %reason, "a PDF page's text could not be extracted");
                reasons.push(format!("page {}: {reason}", page.number));
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        chars += text.chars().count();
        if chars > limits.max_text_chars {
            return Err(too_long(limits));
        }
        if !extracted.text.is_empty() {
            extracted.text.push_str(PAGE_SEPARATOR);
        }
        let start = extracted.text.len();
        extracted.text.push_str(text);
        push_segments(&mut extracted, start, page);
    }
    if extracted.text.trim().is_empty() && !reasons.is_empty() {
        let named = reasons.len().min(REASONS_NAMED);
        let more = reasons.len() - named;
        let mut reason = format!(
            "no page's text could be read ({}",
            reasons[..named].join("; ")
        );
        if more > 0 {
            reason.push_str(&format!("; {more} more"));
        }
        reason.push(')');
        return Err(DocumentError::Corrupt(reason));
    }
    Ok(extracted)
}

/// The segments of a page written at `start`: the whole page, or its prose and tables in
/// order.
fn push_segments(extracted: &mut Extracted, start: usize, page: &PageRead) {
    let segment = |range: std::ops::Range<usize>, table_header| Segment {
        start: start + range.start,
        end: start + range.end,
        page: Some(page.number),
        section: None,
        table_header,
    };
    if page.tables.is_empty() {
        let end = extracted.text.len() - start;
        extracted.segments.push(segment(0..end, None));
        return;
    }
    let written = extracted.text.get(start..).unwrap_or_default();
    let mut segments: Vec<Segment> = page_text::prose_ranges(written, &page.tables)
        .into_iter()
        .map(|range| segment(range, None))
        .chain(
            page.tables
                .iter()
                .map(|table| segment(table.start..table.end, Some(start + table.header_end))),
        )
        .collect();
    segments.sort_by_key(|segment| segment.start);
    extracted.segments.extend(segments);
}

/// Letters and digits: what makes a text layer worth keeping.
fn letters(text: &str) -> usize {
    text.chars()
        .filter(|character| character.is_alphanumeric())
        .count()
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
