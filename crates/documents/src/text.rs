//! Extracted text: checks every format shares, and text cut into segments (pages, heading
//! sections, tables) that chunks never span.

use std::ops::Range;

use tessera_knowledge::{ChunkDraft, DocumentError};

use crate::Limits;
use crate::chunking::{Chunker, Line, Packed, draft};

/// The content of a text format as text, without a leading byte order mark. The upload
/// checks the encoding; a file that still is not UTF-8 is reported as damaged.
pub(crate) fn utf8(content: &[u8]) -> Result<&str, DocumentError> {
    let text = std::str::from_utf8(content)
        .map_err(|error| DocumentError::Corrupt(format!("the file is not UTF-8 text ({error})")))?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Refuses extracted text that is blank or longer than the limit.
pub(crate) fn check(text: &str, limits: &Limits) -> Result<(), DocumentError> {
    // Characters never outnumber bytes: only long texts need counting.
    if text.len() > limits.max_text_chars && text.chars().count() > limits.max_text_chars {
        return Err(too_long(limits));
    }
    if text.trim().is_empty() {
        return Err(DocumentError::Empty);
    }
    Ok(())
}

pub(crate) fn too_long(limits: &Limits) -> DocumentError {
    DocumentError::TooLarge(format!(
        "the extracted text is longer than {} characters",
        limits.max_text_chars
    ))
}

/// A part of the extracted text that chunks do not cross.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    /// Byte range in [`Extracted::text`].
    pub start: usize,
    pub end: usize,
    pub page: Option<u32>,
    pub section: Option<String>,
    /// For a markdown table: the byte offset in [`Extracted::text`] where its header row and
    /// the separator line below it end; each line after them is one row. `None` for prose.
    pub table_header: Option<usize>,
}

/// A document's extracted text, cut into segments in order.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    pub text: String,
    pub segments: Vec<Segment>,
}

impl Extracted {
    /// Chunks each segment's text: prose as prose, a table as whole rows under its header.
    ///
    /// Every chunk of a table is its header row and separator line, then whole rows (a row
    /// is cut only when it alone does not fit below the header). The offsets span the rows
    /// only, except for the table's first chunk, whose offsets start at the header (it is the
    /// text from there on). A header longer than half of `max_tokens` is not repeated: it is
    /// then packed as a line of its own, like a row.
    pub fn chunks(
        &self,
        chunker: &Chunker<'_>,
        limits: &Limits,
    ) -> Result<Vec<ChunkDraft>, DocumentError> {
        check(&self.text, limits)?;
        let mut chunks = Vec::new();
        let mut cursor = CharCursor::default();
        for segment in &self.segments {
            let Some(piece) = self.text.get(segment.start..segment.end) else {
                continue;
            };
            if piece.trim().is_empty() {
                continue;
            }
            let char_start = cursor.char_at(&self.text, segment.start);
            if let Some(header_end) = segment.table_header {
                chunks.extend(self.table_chunks(segment, header_end, chunker, &mut cursor));
            } else {
                chunks.extend(chunker.prose(
                    piece,
                    char_start,
                    segment.page,
                    segment.section.as_deref(),
                ));
            }
        }
        Ok(chunks)
    }

    /// Chunks a table segment whose header (row and separator line) ends at `header_end`.
    fn table_chunks(
        &self,
        segment: &Segment,
        header_end: usize,
        chunker: &Chunker<'_>,
        cursor: &mut CharCursor,
    ) -> Vec<ChunkDraft> {
        let header_end = header_end.max(segment.start).min(segment.end);
        let header = Line {
            text: self.text.get(segment.start..header_end).unwrap_or_default(),
            char_start: cursor.char_at(&self.text, segment.start),
        };
        let rows = lines(&self.text, header_end..segment.end, cursor);
        let repeat_header =
            !rows.is_empty() && (chunker.count(header.text) + 1) * 2 <= chunker.max_tokens();
        let drafts = |packed: Vec<Packed>, first_start: Option<u64>| -> Vec<ChunkDraft> {
            packed
                .into_iter()
                .map(|packed| {
                    // The chunk that begins with the first row is the text from the header on.
                    let start = if Some(packed.char_start) == first_start {
                        header.char_start
                    } else {
                        packed.char_start
                    };
                    draft(
                        packed.text,
                        packed.tokens,
                        start..packed.char_end,
                        segment.page,
                        segment.section.clone(),
                    )
                })
                .collect()
        };
        if repeat_header {
            let first_row = rows.first().map(|row| row.char_start);
            drafts(chunker.pack_lines(&rows, Some(header.text)), first_row)
        } else {
            let every_line: Vec<Line<'_>> = std::iter::once(header).chain(rows).collect();
            drafts(chunker.pack_lines(&every_line, None), None)
        }
    }
}

/// The lines of `text[range]` that are not blank, with their character offsets.
fn lines<'t>(text: &'t str, range: Range<usize>, cursor: &mut CharCursor) -> Vec<Line<'t>> {
    let Some(body) = text.get(range.clone()) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let mut start = range.start;
    for line in body.split('\n') {
        if !line.trim().is_empty() {
            lines.push(Line {
                text: line,
                char_start: cursor.char_at(text, start),
            });
        }
        start += line.len() + 1;
    }
    lines
}

/// Converts increasing byte offsets of one text into character offsets in linear time.
#[derive(Debug, Default)]
pub(crate) struct CharCursor {
    byte: usize,
    char: u64,
}

impl CharCursor {
    /// The character offset of `byte` (a char boundary) in `text`; offsets before the last
    /// one asked are counted from the start again.
    pub fn char_at(&mut self, text: &str, byte: usize) -> u64 {
        if byte < self.byte {
            *self = Self::default();
        }
        let counted = text
            .get(self.byte..byte)
            .map_or(0, |gap| gap.chars().count());
        self.byte = byte;
        self.char += counted as u64;
        self.char
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn byte_order_mark_is_dropped_and_bad_utf8_is_corrupt() {
        assert_eq!(utf8("\u{feff}a,b".as_bytes()).unwrap(), "a,b");
        assert!(matches!(utf8(b"\xff\xfe"), Err(DocumentError::Corrupt(_))));
    }

    #[test]
    fn blank_and_long_texts_are_refused() {
        let limits = Limits {
            max_expanded_bytes: 10,
            max_text_chars: 3,
        };
        assert_eq!(check(" \n\t", &limits), Err(DocumentError::Empty));
        assert!(matches!(
            check("abcd", &limits),
            Err(DocumentError::TooLarge(_))
        ));
        // Three characters in six bytes are within the limit.
        assert_eq!(check("äöü", &limits), Ok(()));
    }

    fn chunker(max_tokens: usize, overlap_tokens: usize) -> Chunker<'static> {
        Chunker::new(
            crate::chunking::Sizer::Tiktoken(tiktoken_rs::cl100k_base_singleton()),
            tessera_knowledge::ChunkingSettings {
                max_tokens,
                overlap_tokens,
            },
        )
    }

    /// Prose, a table of `header` and `rows`, prose: three segments.
    fn with_table(header: &str, rows: &[String]) -> Extracted {
        let mut text = String::from("Über die Preise.\n\n");
        let start = text.len();
        text.push_str(header);
        let header_end = text.len();
        for row in rows {
            text.push('\n');
            text.push_str(row);
        }
        let end = text.len();
        text.push_str("\n\nDanach.");
        let segment = |start, end, table_header| Segment {
            start,
            end,
            page: None,
            section: Some("Preise".to_owned()),
            table_header,
        };
        let segments = vec![
            segment(0, start, None),
            segment(start, end, Some(header_end)),
            segment(end, text.len(), None),
        ];
        Extracted { text, segments }
    }

    fn char_slice(text: &str, chunk: &ChunkDraft) -> String {
        let location = &chunk.location;
        text.chars()
            .skip(location.char_start as usize)
            .take((location.char_end - location.char_start) as usize)
            .collect()
    }

    const HEADER: &str = "| Code | Artikel | Bemerkung |\n| --- | --- | --- |";

    fn rows(count: usize) -> Vec<String> {
        (1..=count)
            .map(|n| format!("| C-{n} | Größe {n} | eine längere Bemerkung zu Zeile {n} |"))
            .collect()
    }

    #[test]
    fn table_chunks_repeat_the_header_above_whole_rows() {
        let rows = rows(30);
        let extracted = with_table(HEADER, &rows);
        let chunks = extracted
            .chunks(&chunker(60, 10), &Limits::DEFAULT)
            .unwrap();
        let table: Vec<&ChunkDraft> = chunks
            .iter()
            .filter(|chunk| chunk.text.contains("| C-"))
            .collect();
        assert!(table.len() > 3, "{table:#?}");
        assert_eq!(chunks.first().unwrap().text, "Über die Preise.");
        assert_eq!(chunks.last().unwrap().text, "Danach.");
        let mut covered = Vec::new();
        for (index, chunk) in table.iter().enumerate() {
            assert!(chunk.token_count <= 60);
            assert_eq!(chunk.location.section.as_deref(), Some("Preise"));
            let body = chunk
                .text
                .strip_prefix(&format!("{HEADER}\n"))
                .expect("the header first");
            for line in body.lines() {
                assert!(rows.iter().any(|row| row == line), "a whole row: {line}");
                covered.push(line);
            }
            // The first chunk is the text from the header on; the others span their rows.
            let expected = if index == 0 { &chunk.text } else { body };
            assert_eq!(&char_slice(&extracted.text, chunk), expected);
        }
        for row in &rows {
            assert!(covered.contains(&row.as_str()), "{row} is in a chunk");
        }
    }

    #[test]
    fn a_row_too_long_for_a_chunk_is_cut_below_the_header() {
        let long = format!("| C-2 | {} |", "sehr lange Zeile ".repeat(60));
        let rows = vec![
            "| C-1 | kurz | a |".to_owned(),
            long,
            "| C-3 | kurz | b |".to_owned(),
        ];
        let extracted = with_table(HEADER, &rows);
        let chunks = extracted.chunks(&chunker(50, 0), &Limits::DEFAULT).unwrap();
        let pieces: Vec<&ChunkDraft> = chunks
            .iter()
            .filter(|chunk| chunk.text.contains("sehr lange"))
            .collect();
        assert!(pieces.len() > 3);
        for chunk in chunks.iter().filter(|chunk| chunk.text.contains('|')) {
            assert!(chunk.text.starts_with(&format!("{HEADER}\n")), "{chunk:?}");
            assert!(chunk.token_count <= 50);
        }
    }

    #[test]
    fn a_header_longer_than_half_a_chunk_is_not_repeated() {
        let header = format!(
            "| {} |\n| --- | --- | --- | --- | --- |",
            (1..=5)
                .map(|n| format!("Spalte mit langem Namen {n}"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let rows = rows(20);
        let extracted = with_table(&header, &rows);
        let chunker = chunker(80, 0);
        let header_tokens = chunker.count(&header);
        assert!(
            header_tokens * 2 > 80 && header_tokens < 80,
            "{header_tokens}"
        );
        let chunks = extracted.chunks(&chunker, &Limits::DEFAULT).unwrap();
        let table: Vec<&ChunkDraft> = chunks
            .iter()
            .filter(|chunk| chunk.text.contains('|'))
            .collect();
        assert!(table.len() > 2);
        assert!(table[0].text.starts_with(&header));
        for chunk in &table[1..] {
            assert!(chunk.text.starts_with("| C-"), "{chunk:?}");
        }
        // Every chunk is whole lines of the table, sliced exactly by its offsets.
        for chunk in &table {
            assert_eq!(char_slice(&extracted.text, chunk), chunk.text);
        }
    }

    #[test]
    fn char_cursor_counts_characters() {
        let text = "aä日b";
        let mut cursor = CharCursor::default();
        assert_eq!(cursor.char_at(text, 1), 1);
        assert_eq!(cursor.char_at(text, 6), 3);
        assert_eq!(cursor.char_at(text, 3), 2);
        assert_eq!(cursor.char_at(text, 7), 4);
    }
}
