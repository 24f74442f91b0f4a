//! PDFs with text placed at chosen positions in Helvetica, for tests of what a page's layout
//! means: tables of aligned columns between paragraphs, prose in two columns, text rotated
//! or on a page without a media box.

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

/// The font size of [`layout`]'s text.
pub const SIZE: f64 = 10.0;
/// From one baseline to the next within a block of [`layout`].
pub const LEADING: f64 = 13.0;
/// Added between two blocks of [`layout`]: a paragraph's gap.
pub const BLOCK_GAP: f64 = 10.0;
const MARGIN: f64 = 72.0;
/// Between the widest cell of a table column and the next column.
const COLUMN_GAP: f64 = 18.0;
/// Between the two columns of [`Block::Columns`].
const GUTTER: f64 = 24.0;

/// Text drawn from `x` on a baseline `y` points below the top edge of its page.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub x: f64,
    pub y: f64,
    pub size: f64,
    pub text: String,
    /// Drawn turned a quarter left (up the page) instead of left to right.
    pub rotated: bool,
}

impl Placed {
    pub fn new(x: f64, y: f64, text: impl Into<String>) -> Self {
        Self {
            x,
            y,
            size: SIZE,
            text: text.into(),
            rotated: false,
        }
    }
}

/// One page of [`placed_pdf`].
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedPage {
    pub width: f64,
    pub height: f64,
    pub texts: Vec<Placed>,
    /// Without a media box (a required entry whose absence makes the text extractor panic).
    pub no_media_box: bool,
}

/// A block of [`layout`], below the one before it.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Lines of prose, one below the other.
    Paragraph(Vec<String>),
    /// Rows of cells (the first is the header), each column left-aligned.
    Table(Vec<Vec<String>>),
    /// Two columns of prose lines side by side, as a two-column page sets them.
    Columns(Vec<String>, Vec<String>),
}

/// A page of `blocks` top-down in [`SIZE`]-point Helvetica from a one-inch margin, lines
/// [`LEADING`] apart and blocks [`BLOCK_GAP`] more; at least US Letter, larger when the
/// blocks need it.
pub fn layout(blocks: &[Block]) -> PlacedPage {
    let mut texts = Vec::new();
    let mut y = MARGIN;
    let mut extent = 0.0f64;
    for (index, block) in blocks.iter().enumerate() {
        if index > 0 {
            y += BLOCK_GAP;
        }
        let rows: Vec<Vec<(f64, &str)>> = match block {
            Block::Paragraph(lines) => lines
                .iter()
                .map(|line| vec![(MARGIN, line.as_str())])
                .collect(),
            Block::Table(rows) => {
                let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
                let mut x = MARGIN;
                let mut starts = Vec::new();
                for column in 0..columns {
                    starts.push(x);
                    let widest = rows
                        .iter()
                        .filter_map(|row| row.get(column))
                        .map(|cell| width(cell, SIZE))
                        .fold(0.0, f64::max);
                    x += widest + COLUMN_GAP;
                }
                rows.iter()
                    .map(|row| {
                        starts
                            .iter()
                            .copied()
                            .zip(row.iter().map(String::as_str))
                            .collect()
                    })
                    .collect()
            }
            Block::Columns(left, right) => {
                let second = MARGIN
                    + left
                        .iter()
                        .map(|line| width(line, SIZE))
                        .fold(0.0, f64::max)
                    + GUTTER;
                (0..left.len().max(right.len()))
                    .map(|line| {
                        let mut row = Vec::new();
                        if let Some(text) = left.get(line) {
                            row.push((MARGIN, text.as_str()));
                        }
                        if let Some(text) = right.get(line) {
                            row.push((second, text.as_str()));
                        }
                        row
                    })
                    .collect()
            }
        };
        for row in rows {
            y += LEADING;
            for (x, text) in row {
                extent = extent.max(x + width(text, SIZE));
                texts.push(Placed::new(x, y, text));
            }
        }
    }
    PlacedPage {
        width: (extent + MARGIN).max(612.0),
        height: (y + MARGIN).max(792.0),
        texts,
        no_media_box: false,
    }
}

/// A page of prose lines `before`, the table of `rows` and prose lines `after`, each block
/// left out when empty.
pub fn table_page(before: &[&str], rows: &[Vec<String>], after: &[&str]) -> PlacedPage {
    let paragraph =
        |lines: &[&str]| Block::Paragraph(lines.iter().map(|line| (*line).to_owned()).collect());
    let mut blocks = Vec::new();
    if !before.is_empty() {
        blocks.push(paragraph(before));
    }
    blocks.push(Block::Table(rows.to_vec()));
    if !after.is_empty() {
        blocks.push(paragraph(after));
    }
    layout(&blocks)
}

/// A table of a header (`"Column 1"`, …) and `rows` rows of `columns` short cells (`"r3c2"`).
pub fn grid(rows: usize, columns: usize) -> Vec<Vec<String>> {
    let header = (1..=columns)
        .map(|column| format!("Column {column}"))
        .collect();
    let body = (1..=rows).map(|row| {
        (1..=columns)
            .map(|column| format!("r{row}c{column}"))
            .collect()
    });
    std::iter::once(header).chain(body).collect()
}

/// `text`'s words in lines no wider than `max_width` points at [`SIZE`].
pub fn wrap(text: &str, max_width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if width(&format!("{line} {word}"), SIZE) <= max_width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

/// At least the width of `text` in Helvetica at `size` points (the widest glyph of each
/// class of characters), so that laid-out text never overlaps.
pub fn width(text: &str, size: f64) -> f64 {
    let em = |character: char| match character {
        ' ' | '\'' | '.' | ',' | ':' | ';' | '!' | '|' | 'i' | 'j' | 'l' => 0.28,
        'f' | 't' | 'r' | 'I' | '(' | ')' | '-' | '[' | ']' | '/' => 0.34,
        '+' | '<' | '=' | '>' | '~' => 0.6,
        'm' | 'w' | 'M' | 'W' | '@' | '%' => 1.02,
        'A'..='Z' | '&' => 0.78,
        _ if character.is_ascii() => 0.56,
        _ => 1.0,
    };
    text.chars().map(em).sum::<f64>() * size
}

/// The bytes of a PDF of `pages`.
pub fn placed_pdf(pages: &[PlacedPage]) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = super::helvetica(&mut doc);
    let mut kids = Vec::new();
    for page in pages {
        let operations: Vec<Operation> = page
            .texts
            .iter()
            .flat_map(|placed| operations(placed, page.height))
            .collect();
        let content = Content { operations };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let mut dictionary = dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font_id } },
        };
        if !page.no_media_box {
            let media_box =
                [0.0, 0.0, page.width, page.height].map(|value| Object::Real(value as f32));
            dictionary.set("MediaBox", media_box.to_vec());
        }
        kids.push(doc.add_object(dictionary).into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    doc.compress();
    super::save(&mut doc)
}

/// Draws `placed` on a page `height` points tall in a text object of its own, placed by its
/// text matrix.
fn operations(placed: &Placed, height: f64) -> Vec<Operation> {
    let (x, y) = (placed.x as f32, (height - placed.y) as f32);
    let matrix: [f32; 6] = if placed.rotated {
        [0.0, 1.0, -1.0, 0.0, x, y]
    } else {
        [1.0, 0.0, 0.0, 1.0, x, y]
    };
    vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), Object::Real(placed.size as f32)]),
        Operation::new("Tm", matrix.map(Object::Real).to_vec()),
        Operation::new("Tj", vec![Object::string_literal(placed.text.as_str())]),
        Operation::new("ET", vec![]),
    ]
}
