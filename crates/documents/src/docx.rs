//! DOCX: the body of `word/document.xml`, streamed from the archive through a byte budget.
//!
//! Paragraphs become lines (`w:t` text, `w:tab` as a tab, `w:br`/`w:cr` as a line break);
//! table rows become lines with cells joined by `" | "`, a blank line around each table.
//! Paragraphs whose style is a heading (`Heading1`…`Heading9`, `Title`, or any style that
//! `word/styles.xml` names `heading N`/`Title` or gives an outline level, directly or through
//! `w:basedOn`) start a new segment labelled with the heading path (`"Intro > Setup"`, a title
//! outermost). Deleted text, field codes and the fallback copies of drawings are left out.
//!
//! Defences: an OLE compound file (what Office writes for password-protected documents) is
//! [`DocumentError::Encrypted`] when it holds an `EncryptedPackage`; anything else that is not
//! a zip archive with a `word/document.xml` is [`DocumentError::Corrupt`]. The parts are read
//! through a counter, never trusting the sizes the archive declares, so a decompression bomb
//! stops at [`crate::Limits::max_expanded_bytes`] with [`DocumentError::TooLarge`]; and no
//! single XML text or tag may run past [`MAX_XML_RUN`] bytes, since the XML reader holds a
//! whole event in memory (a bomb of one giant text node would otherwise cost its size twice
//! over before the counter refused it).

use std::collections::HashMap;
use std::io::{BufReader, Cursor, Read};

use quick_xml::Reader;
use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use tessera_knowledge::DocumentError;
use zip::ZipArchive;
use zip::result::ZipError;

use crate::Limits;
use crate::text::{Extracted, Segment};

const OLE_SIGNATURE: [u8; 4] = [0xD0, 0xCF, 0x11, 0xE0];
/// The longest run of XML bytes without a `<` (one text node, or one tag with its
/// attributes) a part may hold: far above any real document's, and a bound on the memory the
/// XML reader's event buffer can take.
pub(crate) const MAX_XML_RUN: u64 = 1 << 20;
/// A heading level for `Title`, outside `Heading1`.
const TITLE_LEVEL: u8 = 0;

pub(crate) fn extract(content: &[u8], limits: &Limits) -> Result<Extracted, DocumentError> {
    if content.starts_with(&OLE_SIGNATURE) {
        return Err(if holds_encrypted_package(content) {
            DocumentError::Encrypted
        } else {
            corrupt("an OLE compound file (such as a legacy .doc), not a docx archive")
        });
    }
    let mut archive = ZipArchive::new(Cursor::new(content)).map_err(zip_error)?;
    let mut budget = Budget {
        remaining: limits.max_expanded_bytes,
        limit: limits.max_expanded_bytes,
    };
    let styles = match archive.by_name("word/styles.xml") {
        Ok(part) => Styles::read(budget.reader(part), &mut budget)?,
        Err(ZipError::FileNotFound) => Styles::default(),
        Err(error) => return Err(zip_error(error)),
    };
    let part = match archive.by_name("word/document.xml") {
        Ok(part) => part,
        Err(ZipError::FileNotFound) => return Err(corrupt("the archive has no word/document.xml")),
        Err(error) => return Err(zip_error(error)),
    };
    let reader = budget.reader(part);
    Body::new(&styles, limits.max_text_chars).read(reader, &mut budget)
}

/// An encrypted Office document is an OLE compound file with an `EncryptedPackage` stream,
/// whose name its directory holds in UTF-16LE.
fn holds_encrypted_package(content: &[u8]) -> bool {
    let name: Vec<u8> = "EncryptedPackage"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    content
        .windows(name.len())
        .any(|window| window == name.as_slice())
}

fn zip_error(error: ZipError) -> DocumentError {
    match error {
        ZipError::UnsupportedArchive(reason) if reason == ZipError::PASSWORD_REQUIRED => {
            DocumentError::Encrypted
        }
        ZipError::InvalidPassword => DocumentError::Encrypted,
        ZipError::DecompressedSizeLimitExceeded { limit, .. } => {
            DocumentError::TooLarge(format!("the archive expands to more than {limit} bytes"))
        }
        ZipError::CompressionMethodNotSupported(method) => corrupt(&format!(
            "the archive uses an unsupported compression method ({method})"
        )),
        other => corrupt(&format!("not a readable docx archive: {other}")),
    }
}

fn corrupt(reason: &str) -> DocumentError {
    DocumentError::Corrupt(reason.to_owned())
}

/// How many more bytes the archive's parts may expand to.
struct Budget {
    remaining: u64,
    limit: u64,
}

/// A part as the XML reader reads it: through the byte budget and the run limit.
type PartReader<R> = BufReader<RunLimit<std::io::Take<R>>>;

/// Fails a read once more than [`MAX_XML_RUN`] bytes have passed without a `<`.
struct RunLimit<R> {
    inner: R,
    run: u64,
}

/// The error [`RunLimit`] fails with, recognised when quick-xml hands it back.
#[derive(Debug, thiserror::Error)]
#[error("an XML text or tag longer than {MAX_XML_RUN} bytes")]
struct RunTooLong;

impl<R: Read> Read for RunLimit<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(out)?;
        let bytes = &out[..read];
        self.run = match bytes.iter().rposition(|&b| b == b'<') {
            Some(last) => (read - last - 1) as u64,
            None => self.run + read as u64,
        };
        if self.run > MAX_XML_RUN {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                RunTooLong,
            ));
        }
        Ok(read)
    }
}

impl Budget {
    /// Reads `part` through the budget: at most `remaining + 1` bytes, so reading past the
    /// budget is seen.
    fn reader<R: Read>(&self, part: R) -> PartReader<R> {
        BufReader::new(RunLimit {
            inner: part.take(self.remaining.saturating_add(1)),
            run: 0,
        })
    }

    /// Charges what `reader` has read, refusing the document past the budget.
    fn charge<R: Read>(&mut self, reader: &PartReader<R>) -> Result<(), DocumentError> {
        let allowed = self.remaining.saturating_add(1);
        let read = allowed.saturating_sub(reader.get_ref().inner.limit());
        if read > self.remaining {
            return Err(DocumentError::TooLarge(format!(
                "the document expands to more than {} bytes",
                self.limit
            )));
        }
        self.remaining -= read;
        Ok(())
    }

    /// Maps an XML error: past the budget or the run limit it is too large, otherwise damage.
    fn xml_error<R: Read>(
        &mut self,
        reader: &PartReader<R>,
        part: &str,
        error: &quick_xml::Error,
    ) -> DocumentError {
        if let quick_xml::Error::Io(io) = error
            && io.get_ref().is_some_and(|inner| inner.is::<RunTooLong>())
        {
            return DocumentError::TooLarge(format!("{part} holds {RunTooLong}"));
        }
        match self.charge(reader) {
            Err(too_large) => too_large,
            Ok(()) => corrupt(&format!("{part} is not well-formed: {error}")),
        }
    }
}

/// The `val` attribute of an element (`w:val`).
fn val(element: &BytesStart<'_>) -> Option<String> {
    attribute(element, "val")
}

/// An attribute by local name, unescaped.
fn attribute(element: &BytesStart<'_>, name: &str) -> Option<String> {
    element
        .attributes()
        .with_checks(false)
        .flatten()
        .find(|attribute| attribute.key.local_name().as_ref() == name)
        .and_then(|attribute| {
            attribute
                .normalized_value(XmlVersion::Implicit1_0)
                .ok()
                .map(|value| value.into_owned())
        })
}

fn local(element: &BytesStart<'_>) -> String {
    element.local_name().as_ref().to_owned()
}

/// The heading level a style name stands for (`heading 2` → 2, `Title` → 0).
fn level_of_name(name: &str) -> Option<u8> {
    let lower = name.trim().to_ascii_lowercase();
    if lower == "title" {
        return Some(TITLE_LEVEL);
    }
    let number = lower.strip_prefix("heading")?.trim();
    number
        .parse::<u8>()
        .ok()
        .filter(|level| (1..=9).contains(level))
}

/// An outline level attribute (0-based, 9 = body text) as a heading level.
fn level_of_outline(value: &str) -> Option<u8> {
    value
        .parse::<u8>()
        .ok()
        .filter(|level| *level < 9)
        .map(|level| level + 1)
}

/// Heading levels of paragraph styles, from `word/styles.xml`.
#[derive(Debug, Default)]
struct Styles {
    levels: HashMap<String, u8>,
    based_on: HashMap<String, String>,
}

impl Styles {
    fn read<R: Read>(mut input: PartReader<R>, budget: &mut Budget) -> Result<Self, DocumentError> {
        let mut styles = Self::default();
        let mut reader = Reader::from_reader(&mut input);
        let mut buffer = Vec::new();
        let mut current: Option<String> = None;
        loop {
            let event = match reader.read_event_into(&mut buffer) {
                Ok(event) => event,
                Err(error) => {
                    drop(reader);
                    return Err(budget.xml_error(&input, "word/styles.xml", &error));
                }
            };
            match event {
                Event::Start(element) | Event::Empty(element) => match local(&element).as_str() {
                    "style" => {
                        let paragraph =
                            attribute(&element, "type").is_none_or(|kind| kind == "paragraph");
                        current = attribute(&element, "styleId").filter(|_| paragraph);
                    }
                    "name" => {
                        if let (Some(id), Some(level)) =
                            (&current, val(&element).as_deref().and_then(level_of_name))
                        {
                            styles.levels.insert(id.clone(), level);
                        }
                    }
                    "outlineLvl" => {
                        if let (Some(id), Some(level)) = (
                            &current,
                            val(&element).as_deref().and_then(level_of_outline),
                        ) {
                            styles.levels.entry(id.clone()).or_insert(level);
                        }
                    }
                    "basedOn" => {
                        if let (Some(id), Some(parent)) = (&current, val(&element)) {
                            styles.based_on.insert(id.clone(), parent);
                        }
                    }
                    _ => {}
                },
                Event::End(element) if element.local_name().as_ref() == "style" => current = None,
                Event::Eof => break,
                _ => {}
            }
            buffer.clear();
        }
        drop(reader);
        budget.charge(&input)?;
        Ok(styles)
    }

    /// The heading level of a paragraph style, following `basedOn`; built-in style ids
    /// (`Heading1`, `Title`) count when `styles.xml` is missing.
    fn level(&self, style: &str) -> Option<u8> {
        let mut id = style;
        for _ in 0..16 {
            if let Some(level) = self.levels.get(id) {
                return Some(*level);
            }
            match self.based_on.get(id) {
                Some(parent) => id = parent,
                None => break,
            }
        }
        let lower = style.to_ascii_lowercase();
        if lower == "title" {
            return Some(TITLE_LEVEL);
        }
        lower
            .strip_prefix("heading")
            .and_then(|number| number.parse::<u8>().ok())
            .filter(|level| (1..=9).contains(level))
    }
}

/// What separates the next text from the text before it; the strongest pending one wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Separator {
    None,
    Space,
    Line,
    Blank,
}

impl Separator {
    fn as_str(self) -> &'static str {
        match self {
            Self::None => "",
            Self::Space => " ",
            Self::Line => "\n",
            Self::Blank => "\n\n",
        }
    }
}

#[derive(Debug, Default)]
struct Paragraph {
    level: Option<u8>,
    /// Where the paragraph's first text was written.
    start: Option<usize>,
}

/// The state of reading `word/document.xml`.
struct Body<'s> {
    styles: &'s Styles,
    out: Extracted,
    pending: Separator,
    paragraphs: Vec<Paragraph>,
    /// One entry per open table: the number of cells begun in its current row.
    tables: Vec<usize>,
    in_text: usize,
    /// Depth of open runs (`w:r`): tabs and breaks outside them (tab stops) are not text.
    runs: usize,
    /// Depth inside an element whose content is skipped (`mc:Fallback`, `w:del`).
    skipping: usize,
    path: Vec<(u8, String)>,
    segment_start: usize,
    section: Option<String>,
    /// Characters written, and the most allowed.
    chars: usize,
    max_chars: usize,
}

impl<'s> Body<'s> {
    fn new(styles: &'s Styles, max_chars: usize) -> Self {
        Self {
            chars: 0,
            max_chars,
            styles,
            out: Extracted::default(),
            pending: Separator::None,
            paragraphs: Vec::new(),
            tables: Vec::new(),
            in_text: 0,
            runs: 0,
            skipping: 0,
            path: Vec::new(),
            segment_start: 0,
            section: None,
        }
    }

    fn read<R: Read>(
        mut self,
        mut input: PartReader<R>,
        budget: &mut Budget,
    ) -> Result<Extracted, DocumentError> {
        let mut reader = Reader::from_reader(&mut input);
        let mut buffer = Vec::new();
        loop {
            let event = match reader.read_event_into(&mut buffer) {
                Ok(event) => event,
                Err(error) => {
                    drop(reader);
                    return Err(budget.xml_error(&input, "word/document.xml", &error));
                }
            };
            match event {
                Event::Start(element) => self.start(&element, false),
                Event::Empty(element) if self.skipping == 0 => {
                    self.start(&element, true);
                    self.end(element.local_name().as_ref());
                }
                Event::End(element) => self.end(element.local_name().as_ref()),
                Event::Text(text) if self.in_text > 0 && self.skipping == 0 => {
                    self.write(&text.xml10_content());
                }
                Event::CData(data) if self.in_text > 0 && self.skipping == 0 => {
                    self.write(&data);
                }
                Event::GeneralRef(reference) if self.in_text > 0 && self.skipping == 0 => {
                    let resolved = match reference.resolve_char_ref() {
                        Ok(Some(character)) => Some(character.to_string()),
                        _ => quick_xml::escape::resolve_predefined_entity(&reference)
                            .map(str::to_owned),
                    };
                    if let Some(resolved) = resolved {
                        self.write(&resolved);
                    }
                }
                Event::Eof => break,
                _ => {}
            }
            if self.chars > self.max_chars {
                return Err(DocumentError::TooLarge(format!(
                    "the extracted text is longer than {} characters",
                    self.max_chars
                )));
            }
            buffer.clear();
        }
        drop(reader);
        budget.charge(&input)?;
        self.close_segment(self.out.text.len());
        Ok(self.out)
    }

    fn start(&mut self, element: &BytesStart<'_>, empty: bool) {
        let name = local(element);
        if self.skipping > 0 {
            if !empty {
                self.skipping += 1;
            }
            return;
        }
        match name.as_str() {
            "Fallback" | "del" | "moveFrom" if !empty => self.skipping = 1,
            "p" => self.paragraphs.push(Paragraph::default()),
            "pStyle" => {
                let level = val(element).and_then(|style| self.styles.level(&style));
                if let Some(paragraph) = self.paragraphs.last_mut() {
                    paragraph.level = paragraph.level.or(level);
                }
            }
            "outlineLvl" => {
                let level = val(element).as_deref().and_then(level_of_outline);
                if let Some(paragraph) = self.paragraphs.last_mut() {
                    paragraph.level = level.or(paragraph.level);
                }
            }
            "t" => self.in_text += 1,
            "r" => self.runs += 1,
            "tab" if self.in_run() => self.write("\t"),
            "br" | "cr" if self.in_run() => {
                let separator = if self.tables.is_empty() {
                    Separator::Line
                } else {
                    Separator::Space
                };
                self.separate(separator);
            }
            "noBreakHyphen" if self.in_run() => self.write("-"),
            "tbl" => {
                self.separate(Separator::Blank);
                self.tables.push(0);
            }
            "tr" => {
                if let Some(cells) = self.tables.last_mut() {
                    *cells = 0;
                }
                self.separate(Separator::Line);
            }
            "tc" => {
                if let Some(cells) = self.tables.last_mut() {
                    *cells += 1;
                    if *cells > 1 {
                        self.write_raw(" | ");
                    }
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, name: &str) {
        if self.skipping > 0 {
            self.skipping -= 1;
            return;
        }
        match name {
            "t" => self.in_text = self.in_text.saturating_sub(1),
            "r" => self.runs = self.runs.saturating_sub(1),
            "p" => {
                let paragraph = self.paragraphs.pop().unwrap_or_default();
                if self.tables.is_empty() {
                    if let (Some(level), Some(start)) = (paragraph.level, paragraph.start) {
                        self.heading(level, start);
                    }
                    self.separate(Separator::Line);
                } else {
                    self.separate(Separator::Space);
                }
            }
            // Paragraph breaks inside a cell do not reach past it.
            "tc" if self.pending == Separator::Space => self.pending = Separator::None,
            "tr" => self.separate(Separator::Line),
            "tbl" => {
                self.tables.pop();
                self.separate(Separator::Blank);
            }
            _ => {}
        }
    }

    /// Whether a tab or break now belongs to a run (outside runs, as in tab stop definitions,
    /// they are not text).
    fn in_run(&self) -> bool {
        self.runs > 0
    }

    fn separate(&mut self, separator: Separator) {
        self.pending = self.pending.max(separator);
    }

    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if !self.out.text.is_empty() {
            let pending = self.pending.as_str();
            self.out.text.push_str(pending);
        }
        self.pending = Separator::None;
        if let Some(paragraph) = self.paragraphs.last_mut() {
            paragraph.start.get_or_insert(self.out.text.len());
        }
        self.chars += text.chars().count();
        self.out.text.push_str(text);
    }

    /// Writes a cell separator, kept even around empty cells.
    fn write_raw(&mut self, text: &str) {
        if !self.out.text.is_empty() {
            let pending = self.pending.as_str();
            self.out.text.push_str(pending);
        }
        self.pending = Separator::None;
        self.out.text.push_str(text);
    }

    /// A heading paragraph written from `start`: the segment before it ends there and a new
    /// one, labelled with the updated heading path, begins.
    fn heading(&mut self, level: u8, start: usize) {
        let title = self
            .out
            .text
            .get(start..)
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if title.is_empty() {
            return;
        }
        self.close_segment(start);
        self.path.retain(|(outer, _)| *outer < level);
        self.path.push((level, title));
        self.section = Some(
            self.path
                .iter()
                .map(|(_, title)| title.as_str())
                .collect::<Vec<_>>()
                .join(" > "),
        );
        self.segment_start = start;
    }

    fn close_segment(&mut self, end: usize) {
        if end > self.segment_start {
            self.out.segments.push(Segment {
                start: self.segment_start,
                end,
                page: None,
                section: self.section.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn body(xml: &str) -> Extracted {
        let styles = Styles::default();
        let mut budget = Budget {
            remaining: 1 << 20,
            limit: 1 << 20,
        };
        let reader = budget.reader(xml.as_bytes());
        Body::new(&styles, usize::MAX)
            .read(reader, &mut budget)
            .unwrap()
    }

    #[test]
    fn paragraphs_tables_and_headings() {
        let xml = r#"<w:document xmlns:w="w"><w:body>
<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>Guide</w:t></w:r></w:p>
<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr><w:r><w:t xml:space="preserve">Hello </w:t></w:r><w:r><w:t>world &amp; more</w:t><w:tab/><w:t>x</w:t><w:br/><w:t>y</w:t></w:r></w:p>
<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Setup</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p><w:p><w:r><w:t>b</w:t></w:r></w:p></w:tc><w:tc><w:p/></w:tc><w:tc><w:p><w:r><w:t>c</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>1</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>2</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>3</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
<w:p><w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del><w:t>after</w:t></w:r></w:p>
</w:body></w:document>"#;
        let extracted = body(xml);
        assert_eq!(
            extracted.text,
            "Guide\nHello world & more\tx\ny\nSetup\n\na b |  | c\n1 | 2 | 3\n\nafter"
        );
        let sections: Vec<(&str, Option<&str>)> = extracted
            .segments
            .iter()
            .map(|segment| {
                (
                    &extracted.text[segment.start..segment.end],
                    segment.section.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            sections,
            [
                ("Guide\nHello world & more\tx\ny\n", Some("Guide")),
                (
                    "Setup\n\na b |  | c\n1 | 2 | 3\n\nafter",
                    Some("Guide > Setup")
                ),
            ]
        );
    }

    #[test]
    fn style_levels_follow_names_outline_levels_and_based_on() {
        let xml = r#"<w:styles xmlns:w="w">
<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style>
<w:style w:type="paragraph" w:styleId="Custom"><w:basedOn w:val="berschrift1"/></w:style>
<w:style w:type="paragraph" w:styleId="Outline"><w:pPr><w:outlineLvl w:val="2"/></w:pPr></w:style>
<w:style w:type="character" w:styleId="Heading1Char"><w:name w:val="heading 1"/></w:style>
</w:styles>"#;
        let mut budget = Budget {
            remaining: 1 << 20,
            limit: 1 << 20,
        };
        let styles = Styles::read(budget.reader(xml.as_bytes()), &mut budget).unwrap();
        assert_eq!(styles.level("berschrift1"), Some(1));
        assert_eq!(styles.level("Custom"), Some(1));
        assert_eq!(styles.level("Outline"), Some(3));
        assert_eq!(styles.level("Heading1Char"), None);
        assert_eq!(styles.level("Heading4"), Some(4));
        assert_eq!(styles.level("Normal"), None);
    }

    #[test]
    fn budget_overrun_is_too_large() {
        let styles = Styles::default();
        let xml = format!(
            "<w:document><w:body><w:p><w:r><w:t>{}</w:t></w:r></w:p></w:body></w:document>",
            "x".repeat(5000)
        );
        let mut budget = Budget {
            remaining: 1000,
            limit: 1000,
        };
        let reader = budget.reader(xml.as_bytes());
        let error = Body::new(&styles, usize::MAX)
            .read(reader, &mut budget)
            .unwrap_err();
        assert!(matches!(error, DocumentError::TooLarge(_)), "{error:?}");
    }
}
