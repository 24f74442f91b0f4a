//! Tables in a page's lines of positioned words, and their markdown.
//!
//! A line splits into cells where its words are farther apart than [`CELL_GAP`]. A table is
//! a run of at least [`MIN_LINES`] consecutive lines (a header and two rows) with the same
//! number of cells, at least two, whose columns line up down the run: each column's cells
//! share a left edge, a right edge or a centre (left-aligned text, right-aligned numbers,
//! centred marks), and a blank channel runs between every two columns through every line.
//!
//! Conservative on purpose, since a false table scrambles prose: two columns of prose side
//! by side align too, so a table also needs a column of short cells (at most
//! [`SHORT_CELL_WORDS`] words on average), and a list (bullets or numbers before single
//! lines) is not one.

use std::ops::Range;

use super::positioned::Line;

/// Words farther apart than this (in font sizes) are in different cells: wider than the
/// stretched spaces of justified text, about the padding of a table's cells.
const CELL_GAP: f64 = 0.8;
/// A header and two rows.
const MIN_LINES: usize = 3;
const MIN_COLUMNS: usize = 2;
/// How far (in font sizes) the cells of a column may stray from their common edge or centre.
const ALIGN_TOLERANCE: f64 = 0.5;
/// The narrowest blank channel (in font sizes) between two columns down the whole table.
const MIN_GUTTER: f64 = 0.5;
/// Lines farther apart than this (in font sizes, baseline to baseline) are separate blocks.
const MAX_ROW_DISTANCE: f64 = 3.0;
/// A table has a column whose cells average at most this many words: columns of prose side
/// by side have none.
const SHORT_CELL_WORDS: f64 = 3.0;

/// A table found on a page: its lines, and their cells' text (the first row is the header).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Table {
    pub lines: Range<usize>,
    pub rows: Vec<Vec<String>>,
}

/// The tables among `lines` (top-down), in order.
pub(super) fn detect(lines: &[Line]) -> Vec<Table> {
    let cells: Vec<Vec<Cell>> = lines.iter().map(cells).collect();
    let mut tables = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let end = run_end(lines, &cells, start);
        if end - start < MIN_LINES {
            start += 1;
            continue;
        }
        let run = cells.get(start..end).unwrap_or_default();
        if is_table(run) {
            tables.push(Table {
                lines: start..end,
                rows: run
                    .iter()
                    .map(|row| row.iter().map(|cell| cell.text.clone()).collect())
                    .collect(),
            });
        }
        // A run that is not a table holds none: its lines only align with each other.
        start = end;
    }
    tables
}

/// `rows` as a markdown table (the first row the header, then the separator line), and the
/// byte length of its header row and separator line.
pub(super) fn markdown(rows: &[Vec<String>]) -> (String, usize) {
    let row = |cells: &Vec<String>| {
        let cells: Vec<String> = cells.iter().map(|cell| markdown_cell(cell)).collect();
        format!("| {} |", cells.join(" | "))
    };
    let columns = rows.first().map_or(0, Vec::len);
    let mut text = rows.first().map(row).unwrap_or_default();
    text.push('\n');
    text.push('|');
    text.push_str(&" --- |".repeat(columns));
    let header_end = text.len();
    for cells in rows.iter().skip(1) {
        text.push('\n');
        text.push_str(&row(cells));
    }
    (text, header_end)
}

/// A cell on one line: whitespace collapsed, control characters dropped, `|` escaped (as a
/// DOCX table's cells are).
fn markdown_cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|character| !character.is_control())
        .collect::<String>()
        .replace('|', "\\|")
}

/// Words of a line close enough to read as one piece.
#[derive(Debug)]
struct Cell {
    x0: f64,
    x1: f64,
    words: usize,
    text: String,
}

fn cells(line: &Line) -> Vec<Cell> {
    let mut cells: Vec<Cell> = Vec::new();
    for word in &line.words {
        match cells.last_mut() {
            Some(cell) if word.x0 - cell.x1 <= CELL_GAP * line.size => {
                cell.x1 = cell.x1.max(word.x1);
                cell.words += 1;
                cell.text.push(' ');
                cell.text.push_str(&word.text);
            }
            _ => cells.push(Cell {
                x0: word.x0,
                x1: word.x1,
                words: 1,
                text: word.text.clone(),
            }),
        }
    }
    cells
}

/// The end of the longest run of lines from `start` whose cells form aligned columns
/// (`start + 1` when the line at `start` cannot begin one).
fn run_end(lines: &[Line], cells: &[Vec<Cell>], start: usize) -> usize {
    let Some(first) = cells.get(start).filter(|first| first.len() >= MIN_COLUMNS) else {
        return start + 1;
    };
    let mut columns: Vec<Column> = first.iter().map(Column::new).collect();
    let mut size = lines.get(start).map_or(0.0, |line| line.size);
    let mut end = start + 1;
    while let (Some(line), Some(row), Some(above)) =
        (lines.get(end), cells.get(end), lines.get(end - 1))
    {
        let candidate_size = size.max(line.size);
        if row.len() != columns.len() || above.y - line.y > MAX_ROW_DISTANCE * candidate_size {
            break;
        }
        let candidate: Vec<Column> = columns
            .iter()
            .zip(row)
            .map(|(column, cell)| column.with(cell))
            .collect();
        if !aligned(&candidate, candidate_size) {
            break;
        }
        columns = candidate;
        size = candidate_size;
        end += 1;
    }
    end
}

/// The extent of a column's cells so far.
#[derive(Debug, Clone, Copy)]
struct Column {
    left: Spread,
    right: Spread,
    centre: Spread,
}

impl Column {
    fn new(cell: &Cell) -> Self {
        Self {
            left: Spread::at(cell.x0),
            right: Spread::at(cell.x1),
            centre: Spread::at((cell.x0 + cell.x1) / 2.0),
        }
    }

    fn with(&self, cell: &Cell) -> Self {
        Self {
            left: self.left.with(cell.x0),
            right: self.right.with(cell.x1),
            centre: self.centre.with((cell.x0 + cell.x1) / 2.0),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Spread {
    min: f64,
    max: f64,
}

impl Spread {
    fn at(value: f64) -> Self {
        Self {
            min: value,
            max: value,
        }
    }

    fn with(self, value: f64) -> Self {
        Self {
            min: self.min.min(value),
            max: self.max.max(value),
        }
    }

    fn width(self) -> f64 {
        self.max - self.min
    }
}

/// Every column lines up on one edge or its centre, and blank channels separate them.
fn aligned(columns: &[Column], size: f64) -> bool {
    let tolerance = ALIGN_TOLERANCE * size;
    let lined_up = columns.iter().all(|column| {
        column.left.width() <= tolerance
            || column.right.width() <= tolerance
            || column.centre.width() <= tolerance
    });
    let separated = columns
        .windows(2)
        .all(|pair| matches!(pair, [left, right] if left.right.max + MIN_GUTTER * size <= right.left.min));
    lined_up && separated
}

/// Aligned lines that are a table rather than prose side by side or a list.
fn is_table(run: &[Vec<Cell>]) -> bool {
    let Some(columns) = run.first().map(Vec::len) else {
        return false;
    };
    let is_list = run
        .iter()
        .all(|row| row.first().is_some_and(|cell| is_list_marker(&cell.text)));
    let rows = run.len() as f64;
    let has_short_column = (0..columns).any(|column| {
        let words: usize = run
            .iter()
            .filter_map(|row| row.get(column))
            .map(|cell| cell.words)
            .sum();
        words as f64 / rows <= SHORT_CELL_WORDS
    });
    !is_list && has_short_column
}

/// A bullet (`•`, `-`) or an item number (`1.`, `iv)`, `(a)`).
fn is_list_marker(text: &str) -> bool {
    let mut characters = text.chars();
    if let (Some(only), None) = (characters.next(), characters.next()) {
        return !only.is_alphanumeric();
    }
    let Some(body) = text.strip_suffix(['.', ')']) else {
        return false;
    };
    let body = body.strip_prefix('(').unwrap_or(body);
    (1..=3).contains(&body.chars().count()) && body.chars().all(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::positioned::Word;
    use super::*;

    const SIZE: f64 = 10.0;

    /// A line at `y` of words `(x, text)`, each character half a font size wide.
    fn line(y: f64, words: &[(f64, &str)]) -> Line {
        Line {
            y,
            size: SIZE,
            words: words
                .iter()
                .map(|&(x, text)| Word {
                    x0: x,
                    x1: x + text.chars().count() as f64 * SIZE / 2.0,
                    y,
                    size: SIZE,
                    text: text.to_owned(),
                })
                .collect(),
        }
    }

    /// Lines 13 points apart from the top, each of cells `(x, text)` whose words are placed
    /// a space apart.
    fn page(rows: &[Vec<(f64, &str)>]) -> Vec<Line> {
        rows.iter()
            .enumerate()
            .map(|(index, cells)| {
                let mut words = Vec::new();
                for &(x, text) in cells {
                    let mut x = x;
                    for word in text.split(' ') {
                        words.push((x, word));
                        x += (word.chars().count() + 1) as f64 * SIZE / 2.0;
                    }
                }
                line(700.0 - 13.0 * index as f64, &words)
            })
            .collect()
    }

    fn prose(text: &str) -> Vec<(f64, &str)> {
        vec![(72.0, text)]
    }

    #[test]
    fn aligned_columns_between_paragraphs_are_a_table() {
        let lines = page(&[
            prose("The prices below are valid from May."),
            vec![(72.0, "Code"), (150.0, "Item"), (300.0, "Price")],
            vec![(72.0, "A-1"), (150.0, "Kettle, steel"), (300.0, "35.00")],
            vec![
                (72.0, "A-22"),
                (150.0, "Toaster | two slots"),
                (300.0, "129.50"),
            ],
            vec![(72.0, "B-3"), (150.0, "Mug"), (300.0, "4.00")],
            prose("Prices include taxes."),
        ]);
        let tables = detect(&lines);
        assert_eq!(tables.len(), 1, "{tables:?}");
        assert_eq!(tables[0].lines, 1..5);
        assert_eq!(tables[0].rows[2], ["A-22", "Toaster | two slots", "129.50"]);
        let (text, header_end) = markdown(&tables[0].rows);
        assert_eq!(
            text,
            "| Code | Item | Price |\n| --- | --- | --- |\n| A-1 | Kettle, steel | 35.00 |\n\
             | A-22 | Toaster \\| two slots | 129.50 |\n| B-3 | Mug | 4.00 |"
        );
        assert_eq!(
            &text[..header_end],
            "| Code | Item | Price |\n| --- | --- | --- |"
        );
    }

    #[test]
    fn right_aligned_and_centred_columns_line_up() {
        // Amounts end at 400, marks are centred on 470.
        let lines = page(&[
            vec![(72.0, "Month"), (370.0, "Amount"), (460.0, "Done")],
            vec![(72.0, "January"), (375.0, "120.5"), (467.5, "x")],
            vec![(72.0, "February"), (360.0, "10,120.5"), (465.0, "no")],
        ]);
        let tables = detect(&lines);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].rows[2], ["February", "10,120.5", "no"]);
    }

    #[test]
    fn a_header_and_one_row_is_not_enough() {
        let lines = page(&[
            vec![(72.0, "Code"), (150.0, "Item")],
            vec![(72.0, "A-1"), (150.0, "Kettle")],
            prose("And then some prose that follows the two lines."),
        ]);
        assert!(detect(&lines).is_empty());
    }

    #[test]
    fn justified_prose_is_not_a_table() {
        // Justified lines stretch their spaces; a loose one beyond the gap between cells.
        let words = |text: &'static str, stretch: f64| -> Vec<(f64, &'static str)> {
            let mut x = 72.0;
            text.split(' ')
                .map(|word| {
                    let at = x;
                    x += (word.chars().count() as f64 + 0.5) * SIZE / 2.0 + stretch;
                    (at, word)
                })
                .collect()
        };
        let lines: Vec<Line> = [
            words("The committee met on Tuesday to review the budget", 1.5),
            words("for the coming year and agreed that spending on", 3.0),
            words("roads should rise while the library keeps its", 9.0),
            words("hours unchanged until the next review in spring.", 4.5),
        ]
        .iter()
        .enumerate()
        .map(|(index, words)| line(700.0 - 13.0 * index as f64, words))
        .collect();
        assert!(detect(&lines).is_empty());
    }

    #[test]
    fn two_columns_of_prose_are_not_a_table() {
        let lines = page(&[
            vec![
                (72.0, "Rivers carry stone and sand"),
                (320.0, "The harbour was quiet that"),
            ],
            vec![
                (72.0, "down to the sea, where the"),
                (320.0, "night, and the lanterns on"),
            ],
            vec![
                (72.0, "currents spread them along"),
                (320.0, "the pier swung in the wind"),
            ],
            vec![
                (72.0, "the coast for many miles."),
                (320.0, "until the boats came home."),
            ],
        ]);
        assert!(detect(&lines).is_empty());
    }

    #[test]
    fn lists_are_not_tables() {
        for markers in [["1.", "2.", "3."], ["•", "•", "•"], ["(a)", "(b)", "(c)"]] {
            let lines = page(&[
                vec![(72.0, markers[0]), (100.0, "Unplug the kettle.")],
                vec![(72.0, markers[1]), (100.0, "Let it cool down.")],
                vec![(72.0, markers[2]), (100.0, "Wipe the inside dry.")],
            ]);
            assert!(detect(&lines).is_empty(), "{markers:?}");
        }
    }

    #[test]
    fn misaligned_columns_or_a_gap_between_lines_end_a_table() {
        // The fourth line's second cell starts far from the column; the table has three.
        let mut lines = page(&[
            vec![(72.0, "Code"), (150.0, "Item")],
            vec![(72.0, "A-1"), (150.0, "Kettle")],
            vec![(72.0, "A-2"), (150.0, "Mug")],
            vec![(72.0, "A-3"), (200.0, "Toaster")],
        ]);
        assert_eq!(detect(&lines)[0].lines, 0..3);
        // Far below, an aligned pair of lines is a block of its own, too short for a table.
        lines.truncate(3);
        lines.extend(
            page(&[vec![(72.0, "B-1"), (150.0, "Plate")]])
                .into_iter()
                .map(|mut line| {
                    line.y = 500.0;
                    line
                }),
        );
        assert_eq!(detect(&lines)[0].lines, 0..3);
    }

    #[test]
    fn list_markers() {
        for marker in ["1.", "12)", "iv.", "(a)", "•", "-", "–"] {
            assert!(is_list_marker(marker), "{marker}");
        }
        for text in ["A", "7", "A-1", "Total", "12.5", "(note)", "35.00"] {
            assert!(!is_list_marker(text), "{text}");
        }
    }
}
