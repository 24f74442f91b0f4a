//! One page's text layer, with its tables: a single pass of `pdf-extract` feeds both its plain
//! text output and the [`Collector`] of positioned words. A page with a table is written
//! from the positioned lines (prose lines top-down, each table as markdown, a blank line
//! between them); any other page keeps the plain text exactly as before tables were looked
//! for, and so does a page whose positions cannot be read (the pass panics, the positions
//! are not trusted, or finding tables fails).

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_extract::{Document, MediaBox, OutputDev, OutputError, PlainTextOutput, Transform};

use super::positioned::{Collector, Line};
use super::tables::{Table, detect, markdown};

/// Lines farther apart than this (in font sizes) start a new paragraph (a blank line), as in
/// `pdf-extract`'s plain text output.
const PARAGRAPH_GAP: f64 = 1.5;

/// A page's text and where its tables are in it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct PageText {
    pub text: String,
    pub tables: Vec<TableSpan>,
}

/// A markdown table in [`PageText::text`]: byte offsets of its start, of the end of its
/// header row and separator line, and of its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TableSpan {
    pub start: usize,
    pub header_end: usize,
    pub end: usize,
}

impl PageText {
    fn plain(text: String) -> Self {
        Self {
            text,
            tables: Vec::new(),
        }
    }
}

/// Page `number`'s text, with the tables its positioned words show.
pub(super) fn read(document: &Document, number: u32) -> Result<PageText, String> {
    let mut plain = String::new();
    let mut collector = Collector::default();
    let pass = catch_unwind(AssertUnwindSafe(|| {
        let mut output = PlainTextOutput::new(&mut plain);
        let mut both = Tee {
            plain: &mut output,
            positioned: &mut collector,
        };
        pdf_extract::output_doc_page(document, &mut both, number)
    }));
    match pass {
        Ok(Ok(())) => {}
        // The plain output alone would have met the same error.
        Ok(Err(error)) => return Err(output_error(&error)),
        Err(_) => return plain_page_text(document, number).map(PageText::plain),
    }
    let plain = clean(&plain);
    let with_tables = catch_unwind(AssertUnwindSafe(|| {
        let lines = collector.finish()?;
        let tables = detect(&lines);
        (!tables.is_empty()).then(|| compose(&lines, &tables))
    }));
    match with_tables {
        Ok(Some(page)) if !page.text.is_empty() => Ok(page),
        _ => Ok(PageText::plain(plain)),
    }
}

/// The page written from its lines: prose before, between and after the tables, each table
/// as markdown, a blank line between them.
fn compose(lines: &[Line], tables: &[Table]) -> PageText {
    let mut page = PageText::default();
    let mut next = 0;
    for table in tables {
        push_prose(&mut page.text, lines.get(next..table.lines.start));
        let (markdown, header_len) = markdown(&table.rows);
        separate(&mut page.text);
        let start = page.text.len();
        page.text.push_str(&markdown);
        page.tables.push(TableSpan {
            start,
            header_end: start + header_len,
            end: page.text.len(),
        });
        next = table.lines.end;
    }
    push_prose(&mut page.text, lines.get(next..));
    page
}

/// Writes `lines` as prose: words joined by a space, lines by a line break, or a blank line
/// where the gap above a line is a paragraph's.
fn push_prose(text: &mut String, lines: Option<&[Line]>) {
    let mut above: Option<&Line> = None;
    for line in lines.unwrap_or_default() {
        let words: Vec<&str> = line.words.iter().map(|word| word.text.as_str()).collect();
        let written = clean(&words.join(" "));
        if written.is_empty() {
            continue;
        }
        match above {
            Some(above) if above.y - line.y <= PARAGRAPH_GAP * above.size.max(line.size) => {
                text.push('\n');
            }
            _ => separate(text),
        }
        text.push_str(&written);
        above = Some(line);
    }
}

/// A blank line after text already written.
fn separate(text: &mut String) {
    if !text.is_empty() {
        text.push_str("\n\n");
    }
}

/// The prose parts of a page's `text` with `tables`: the byte ranges outside the tables,
/// without the blank lines around them.
pub(super) fn prose_ranges(text: &str, tables: &[TableSpan]) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let bounds = tables
        .iter()
        .map(|table| (table.start, table.end))
        .chain(std::iter::once((text.len(), text.len())));
    for (table_start, table_end) in bounds {
        let gap = text.get(start..table_start).unwrap_or_default();
        let leading = gap.len() - gap.trim_start().len();
        let trailing = gap.len() - gap.trim_end().len();
        if !gap.trim().is_empty() {
            ranges.push(start + leading..table_start - trailing);
        }
        start = table_end;
    }
    ranges
}

/// Passes every call to `pdf-extract`'s plain text output and to the collector of positions
/// (neither draws paths: the plain output ignores them as the default methods do).
struct Tee<'a> {
    plain: &'a mut dyn OutputDev,
    positioned: &'a mut Collector,
}

impl OutputDev for Tee<'_> {
    fn begin_page(
        &mut self,
        page_num: u32,
        media_box: &MediaBox,
        art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.plain.begin_page(page_num, media_box, art_box)?;
        self.positioned.begin_page(page_num, media_box, art_box)
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        self.plain.end_page()?;
        self.positioned.end_page()
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        spacing: f64,
        font_size: f64,
        text: &str,
    ) -> Result<(), OutputError> {
        self.plain
            .output_character(trm, width, spacing, font_size, text)?;
        self.positioned
            .output_character(trm, width, spacing, font_size, text)
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.plain.begin_word()?;
        self.positioned.begin_word()
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        self.plain.end_word()?;
        self.positioned.end_word()
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        self.plain.end_line()?;
        self.positioned.end_line()
    }
}

/// One page's text, trimmed, without control characters other than line breaks and tabs;
/// how every page was read before tables were looked for, and still is when that pass panics.
fn plain_page_text(document: &Document, number: u32) -> Result<String, String> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut text = String::new();
        let mut output = PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(document, &mut output, number).map(|()| text)
    }));
    match result {
        Ok(Ok(text)) => Ok(clean(&text)),
        Ok(Err(error)) => Err(output_error(&error)),
        Err(_) => Err("the text extractor failed on this page".to_owned()),
    }
}

/// A page's (or an image's) text trimmed, without control characters other than line breaks
/// and tabs (OCR ends pages with a form feed).
pub(crate) fn clean(text: &str) -> String {
    text.trim()
        .chars()
        .map(|character| if character == '\r' { '\n' } else { character })
        .filter(|character| !character.is_control() || matches!(character, '\n' | '\t'))
        .collect::<String>()
        .trim()
        .to_owned()
}

fn output_error(error: &OutputError) -> String {
    match error {
        OutputError::PdfError(error) => error.to_string(),
        OutputError::FormatError(_) | OutputError::IoError(_) => {
            "unreadable page content".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::positioned::{Word, lines};
    use super::*;

    /// A line at `y` of 10-point words, one per space-separated piece of each `(x, text)`.
    fn line(y: f64, cells: &[(f64, &str)]) -> Vec<Word> {
        let mut words = Vec::new();
        for &(x, text) in cells {
            let mut x = x;
            for piece in text.split(' ') {
                let width = piece.chars().count() as f64 * 5.0;
                words.push(Word {
                    x0: x,
                    x1: x + width,
                    y,
                    size: 10.0,
                    text: piece.to_owned(),
                });
                x += width + 3.0;
            }
        }
        words
    }

    #[test]
    fn prose_and_tables_are_written_top_down() {
        let words = [
            line(700.0, &[(72.0, "Stock on hand")]),
            line(687.0, &[(72.0, "at the end of May.")]),
            line(660.0, &[(72.0, "SKU"), (150.0, "Count")]),
            line(647.0, &[(72.0, "A-1"), (150.0, "12")]),
            line(634.0, &[(72.0, "A-2"), (150.0, "7")]),
            line(610.0, &[(72.0, "Counted by hand.")]),
        ]
        .concat();
        let lines = lines(words);
        let tables = detect(&lines);
        let page = compose(&lines, &tables);
        let table = "| SKU | Count |\n| --- | --- |\n| A-1 | 12 |\n| A-2 | 7 |";
        assert_eq!(
            page.text,
            format!("Stock on hand\nat the end of May.\n\n{table}\n\nCounted by hand.")
        );
        let span = &page.tables[0];
        assert_eq!(&page.text[span.start..span.end], table);
        assert_eq!(
            &page.text[span.start..span.header_end],
            "| SKU | Count |\n| --- | --- |"
        );
        let prose: Vec<&str> = prose_ranges(&page.text, &page.tables)
            .into_iter()
            .map(|range| &page.text[range])
            .collect();
        assert_eq!(
            prose,
            ["Stock on hand\nat the end of May.", "Counted by hand."]
        );
    }

    #[test]
    fn a_page_that_is_one_table_has_no_prose() {
        let words = [
            line(700.0, &[(72.0, "SKU"), (150.0, "Count")]),
            line(687.0, &[(72.0, "A-1"), (150.0, "12")]),
            line(674.0, &[(72.0, "A-2"), (150.0, "7")]),
        ]
        .concat();
        let lines = lines(words);
        let page = compose(&lines, &detect(&lines));
        assert_eq!(page.tables[0].start, 0);
        assert_eq!(page.tables[0].end, page.text.len());
        assert!(prose_ranges(&page.text, &page.tables).is_empty());
        let whole = prose_ranges("only prose", &[]);
        assert_eq!((whole.len(), whole.first()), (1, Some(&(0..10))));
    }
}
