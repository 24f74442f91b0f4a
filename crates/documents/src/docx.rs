//! DOCX: the body of `word/document.xml`, streamed from the archive through a byte budget.
//!
//! Paragraphs become lines (`w:t` text, `w:tab` as a tab, `w:br`/`w:cr` as a line break).
//! Paragraphs whose style is a heading (`Heading1`…`Heading9`, `Title`, or any style that
//! `word/styles.xml` names `heading N`/`Title` or gives an outline level, directly or through
//! `w:basedOn`) start a new segment labelled with the heading path (`"Intro > Setup"`, a title
//! outermost). Deleted text, field codes and the fallback copies of drawings are left out.
//!
//! Each top-level table becomes markdown rows, one per line, with a blank line around it:
//! `| a | b | c |`, and after the first row (the header) the separator line
//! `| --- | --- | --- |` with as many columns as the header has cells. A cell's whitespace
//! (line breaks, paragraphs, tabs) collapses to single spaces and `|` is escaped as `\|`; a
//! nested table is flattened into its cell's text; a cell spanning grid columns (`w:gridSpan`)
//! is followed by an empty cell for each further column it covers; rows without text are left
//! out. A table is a segment of its own, under the heading path in effect, so its chunks are
//! whole rows under the repeated header (`Extracted::chunks`).
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
/// The most grid columns one table cell is taken to span: Word's own limit is 63, and the
/// bound keeps a hostile `w:gridSpan` from writing millions of empty cells.
const MAX_GRID_SPAN: usize = 64;

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

/// The top-level table being read: its rows are written as markdown lines.
///
/// A row is rendered as it is read, so what it holds in memory is the text it will write
/// (counted against the character limit), not a structure per cell.
#[derive(Debug)]
struct Table {
    /// Where the header row starts and where the header row and separator line end in the
    /// text, once the first row is written.
    header: Option<(usize, usize)>,
    /// The current row so far, its cells rendered (`"| a | b "`), without the closing `|`.
    row: String,
    row_chars: usize,
    /// How many cells the current row has, and whether any holds text.
    columns: usize,
    row_has_text: bool,
    /// The text of the current cell as read.
    cell: String,
    cell_chars: usize,
    /// The grid columns the current cell spans (`w:gridSpan`).
    span: usize,
}

impl Default for Table {
    fn default() -> Self {
        Self {
            header: None,
            row: String::new(),
            row_chars: 0,
            columns: 0,
            row_has_text: false,
            cell: String::new(),
            cell_chars: 0,
            span: 1,
        }
    }
}

impl Table {
    fn begin_row(&mut self) {
        self.row.clear();
        self.row_chars = 0;
        self.columns = 0;
        self.row_has_text = false;
    }

    fn begin_cell(&mut self) {
        self.cell.clear();
        self.cell_chars = 0;
        self.span = 1;
    }

    fn write(&mut self, text: &str, chars: usize) {
        self.cell.push_str(text);
        self.cell_chars += chars;
    }

    /// A space between pieces of a cell's text (paragraphs, breaks, nested cells).
    fn space(&mut self) {
        if !self.cell.is_empty() && !self.cell.ends_with(' ') {
            self.write(" ", 1);
        }
    }

    /// Renders the cell into the row: `"| text "`, then `"|  "` for each further grid column
    /// it spans.
    fn end_cell(&mut self) {
        let text = markdown_cell(&self.cell);
        self.row_has_text |= !text.is_empty();
        let before = self.row.len();
        self.row.push_str("| ");
        self.row.push_str(&text);
        self.row.push(' ');
        for _ in 1..self.span {
            self.row.push_str("|  ");
        }
        self.row_chars += self
            .row
            .get(before..)
            .map_or(0, |cell| cell.chars().count());
        self.columns += self.span;
        self.begin_cell();
    }

    /// Characters read into the row and cell, not yet written.
    fn unwritten_chars(&self) -> usize {
        self.row_chars + self.cell_chars
    }
}

/// A cell's text on one line: whitespace collapsed to single spaces, `|` escaped.
fn markdown_cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// `| --- | --- |`: the line below a header of `columns` cells.
fn header_separator(columns: usize) -> String {
    format!("|{}", " --- |".repeat(columns))
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
    /// How many tables are open (more than one: nested in the top-level one).
    table_depth: usize,
    table: Table,
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
            table_depth: 0,
            table: Table::default(),
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
            if self.chars + self.table.unwritten_chars() > self.max_chars {
                return Err(DocumentError::TooLarge(format!(
                    "the extracted text is longer than {} characters",
                    self.max_chars
                )));
            }
            buffer.clear();
        }
        drop(reader);
        budget.charge(&input)?;
        self.close_table();
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
            "br" | "cr" if self.in_run() => self.separate(Separator::Line),
            "noBreakHyphen" if self.in_run() => self.write("-"),
            "tbl" => {
                self.separate(Separator::Blank);
                self.table_depth += 1;
            }
            "tr" if self.table_depth == 1 => self.table.begin_row(),
            "tc" if self.table_depth == 1 => self.table.begin_cell(),
            // Nested tables flatten into the cell that holds them.
            "tr" | "tc" => self.separate(Separator::Space),
            "gridSpan" if self.table_depth == 1 => {
                let span = val(element).and_then(|span| span.parse::<usize>().ok());
                self.table.span = span.unwrap_or(1).clamp(1, MAX_GRID_SPAN);
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
                if self.table_depth == 0
                    && let (Some(level), Some(start)) = (paragraph.level, paragraph.start)
                {
                    self.heading(level, start);
                }
                self.separate(Separator::Line);
            }
            "tc" if self.table_depth == 1 => self.table.end_cell(),
            "tr" if self.table_depth == 1 => self.write_row(),
            "tbl" if self.table_depth > 0 => {
                self.table_depth -= 1;
                if self.table_depth == 0 {
                    self.close_table();
                }
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

    /// Inside a table every separator is a space within the cell: a row is one line.
    fn separate(&mut self, separator: Separator) {
        if self.table_depth > 0 {
            if separator != Separator::None {
                self.table.space();
            }
        } else {
            self.pending = self.pending.max(separator);
        }
    }

    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.table_depth > 0 {
            self.table.write(text, text.chars().count());
            return;
        }
        self.chars += text.chars().count();
        self.write_pending();
        if let Some(paragraph) = self.paragraphs.last_mut() {
            paragraph.start.get_or_insert(self.out.text.len());
        }
        self.out.text.push_str(text);
    }

    /// Writes the pending separator (none at the very start).
    fn write_pending(&mut self) {
        if !self.out.text.is_empty() {
            let pending = self.pending.as_str();
            self.out.text.push_str(pending);
        }
        self.pending = Separator::None;
    }

    /// Writes the row just read as a markdown line, unless it has no text. The first row is
    /// the header: the segment before the table ends where it starts, and the separator line
    /// follows it.
    fn write_row(&mut self) {
        if !self.table.row_has_text {
            self.table.begin_row();
            return;
        }
        let before = self.out.text.len();
        if self.table.header.is_none() {
            self.write_pending();
            let start = self.out.text.len();
            self.close_segment(start);
            self.segment_start = start;
            self.out.text.push_str(&self.table.row);
            self.out.text.push_str("|\n");
            self.out
                .text
                .push_str(&header_separator(self.table.columns));
            self.table.header = Some((start, self.out.text.len()));
        } else {
            self.out.text.push('\n');
            self.out.text.push_str(&self.table.row);
            self.out.text.push('|');
        }
        self.chars += self
            .out
            .text
            .get(before..)
            .map_or(0, |line| line.chars().count());
        self.table.begin_row();
    }

    /// Ends the top-level table: its rows, if any were written, are a segment of their own.
    fn close_table(&mut self) {
        let table = std::mem::take(&mut self.table);
        self.table_depth = 0;
        let Some((start, header_end)) = table.header else {
            return;
        };
        let end = self.out.text.len();
        self.out.segments.push(Segment {
            start,
            end,
            page: None,
            section: self.section.clone(),
            table_header: Some(header_end),
        });
        self.segment_start = end;
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
        // A paragraph that holds a table (in a text box) started before the table's segment:
        // it is not taken for a heading.
        if title.is_empty() || start < self.segment_start {
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
                table_header: None,
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
            "Guide\nHello world & more\tx\ny\nSetup\n\n| a b |  | c |\n| --- | --- | --- |\n| 1 | 2 | 3 |\n\nafter"
        );
        assert_eq!(
            segments(&extracted),
            [
                ("Guide\nHello world & more\tx\ny\n", Some("Guide"), false),
                ("Setup\n\n", Some("Guide > Setup"), false),
                (
                    "| a b |  | c |\n| --- | --- | --- |\n| 1 | 2 | 3 |",
                    Some("Guide > Setup"),
                    true
                ),
                ("\n\nafter", Some("Guide > Setup"), false),
            ]
        );
    }

    /// Each segment's text, section and whether it is a table.
    fn segments(extracted: &Extracted) -> Vec<(&str, Option<&str>, bool)> {
        extracted
            .segments
            .iter()
            .map(|segment| {
                (
                    &extracted.text[segment.start..segment.end],
                    segment.section.as_deref(),
                    segment.table_header.is_some(),
                )
            })
            .collect()
    }

    fn cell(xml: &str) -> String {
        format!("<w:tc><w:p><w:r><w:t xml:space=\"preserve\">{xml}</w:t></w:r></w:p></w:tc>")
    }

    fn row(cells: &[&str]) -> String {
        let cells: String = cells.iter().map(|text| cell(text)).collect();
        format!("<w:tr>{cells}</w:tr>")
    }

    fn document(body: &str) -> String {
        format!("<w:document xmlns:w=\"w\"><w:body>{body}</w:body></w:document>")
    }

    #[test]
    fn a_table_is_markdown_rows_under_a_header_separator() {
        let table = format!(
            "<w:tbl>{}{}{}</w:tbl>",
            row(&["Name", "Price", "Note"]),
            row(&["Kettle", "35", ""]),
            row(&["a | b", "", "pipe"]),
        );
        let extracted = body(&document(&format!(
            "<w:p><w:r><w:t>Before</w:t></w:r></w:p>{table}<w:p><w:r><w:t>After</w:t></w:r></w:p>"
        )));
        let rows = "| Name | Price | Note |\n| --- | --- | --- |\n| Kettle | 35 |  |\n| a \\| b |  | pipe |";
        assert_eq!(extracted.text, format!("Before\n\n{rows}\n\nAfter"));
        assert_eq!(
            segments(&extracted),
            [
                ("Before\n\n", None, false),
                (rows, None, true),
                ("\n\nAfter", None, false)
            ]
        );
        let table = &extracted.segments[1];
        assert_eq!(
            &extracted.text[table.start..table.table_header.unwrap()],
            "| Name | Price | Note |\n| --- | --- | --- |"
        );
    }

    #[test]
    fn cell_breaks_and_nested_tables_stay_on_the_row_line() {
        let nested = format!(
            "<w:tbl>{}{}</w:tbl>",
            row(&["in 1", "in 2"]),
            row(&["in 3", ""])
        );
        let breaks = "<w:tc><w:p><w:r><w:t>one</w:t><w:br/><w:t>two</w:t><w:tab/><w:t>three</w:t></w:r></w:p><w:p><w:r><w:t>  four  </w:t></w:r></w:p></w:tc>";
        let xml = document(&format!(
            "<w:tbl>{}<w:tr>{breaks}<w:tc><w:p><w:r><w:t>outer</w:t></w:r></w:p>{nested}<w:p><w:r><w:t>end</w:t></w:r></w:p></w:tc></w:tr></w:tbl>",
            row(&["A", "B"])
        ));
        assert_eq!(
            body(&xml).text,
            "| A | B |\n| --- | --- |\n| one two three four | outer in 1 in 2 in 3 end |"
        );
    }

    #[test]
    fn the_separator_counts_the_header_cells_and_spans() {
        let spanning = "<w:tc><w:tcPr><w:gridSpan w:val=\"2\"/></w:tcPr><w:p><w:r><w:t>Both</w:t></w:r></w:p></w:tc>";
        let huge = "<w:tc><w:tcPr><w:gridSpan w:val=\"4000000000\"/></w:tcPr></w:tc>";
        let xml = document(&format!(
            "<w:tbl><w:tr><w:tc/><w:tc/></w:tr><w:tr>{spanning}{}</w:tr>{}<w:tr>{huge}{}</w:tr></w:tbl>",
            cell("C"),
            row(&["1", "2", "3", "4"]),
            cell("x"),
        ));
        let extracted = body(&xml);
        let lines: Vec<&str> = extracted.text.lines().collect();
        // The empty first row is left out: the row below is the header.
        assert_eq!(
            lines[..3],
            [
                "| Both |  | C |",
                "| --- | --- | --- |",
                "| 1 | 2 | 3 | 4 |"
            ]
        );
        // A span is bounded.
        assert_eq!(lines[3].matches(" |").count(), MAX_GRID_SPAN + 1);
    }

    #[test]
    fn empty_cells_count_against_the_character_limit() {
        let spanning = "<w:tc><w:tcPr><w:gridSpan w:val=\"64\"/></w:tcPr></w:tc>".repeat(100);
        let xml = document(&format!(
            "<w:tbl><w:tr>{spanning}{}</w:tr></w:tbl>",
            cell("x")
        ));
        let styles = Styles::default();
        let mut budget = Budget {
            remaining: 1 << 20,
            limit: 1 << 20,
        };
        let reader = budget.reader(xml.as_bytes());
        let error = Body::new(&styles, 10_000)
            .read(reader, &mut budget)
            .unwrap_err();
        assert!(matches!(error, DocumentError::TooLarge(_)), "{error:?}");
    }

    #[test]
    fn tables_without_text_and_headings_after_tables() {
        let xml = document(&format!(
            "<w:tbl><w:tr><w:tc><w:p/></w:tc></w:tr></w:tbl><w:tbl/>\
<w:p><w:pPr><w:pStyle w:val=\"Heading1\"/></w:pPr><w:r><w:t>Prices</w:t></w:r></w:p>\
<w:tbl>{}{}</w:tbl><w:tbl>{}</w:tbl>\
<w:p><w:pPr><w:pStyle w:val=\"Heading2\"/></w:pPr><w:r><w:t>Notes</w:t></w:r></w:p>",
            row(&["k", "v"]),
            row(&["a", "1"]),
            row(&["only", "header"]),
        ));
        let extracted = body(&xml);
        assert_eq!(
            segments(&extracted),
            [
                ("Prices\n\n", Some("Prices"), false),
                ("| k | v |\n| --- | --- |\n| a | 1 |", Some("Prices"), true),
                ("\n\n", Some("Prices"), false),
                ("| only | header |\n| --- | --- |", Some("Prices"), true),
                ("\n\n", Some("Prices"), false),
                ("Notes", Some("Prices > Notes"), false),
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
