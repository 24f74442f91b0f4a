//! CSV: whole rows under the header line, which every chunk repeats.
//!
//! Rows are records as the `csv` crate reads them (a quoted field may hold line breaks), taken
//! verbatim from the file. Each chunk is the header line, then whole rows; a row is cut only
//! when it alone does not fit under the header. Rows are numbered from 1 with the header as
//! row 1, so `section` reads `"rows 2-40"` (or `"row 7"`). A header longer than half of
//! `max_tokens` is not repeated: it is then chunked as row 1 like any other row.

use tessera_knowledge::{ChunkDraft, DocumentError};

use crate::chunking::{Chunker, Line, draft};
use crate::text::CharCursor;

pub(crate) fn chunks(text: &str, chunker: &Chunker<'_>) -> Result<Vec<ChunkDraft>, DocumentError> {
    let mut cursor = CharCursor::default();
    let rows: Vec<Line<'_>> = records(text)?
        .into_iter()
        .filter_map(|(start, end)| {
            let row = text.get(start..end)?;
            Some(Line {
                text: row,
                char_start: cursor.char_at(text, start),
            })
        })
        .collect();
    let Some((header, data)) = rows.split_first() else {
        return Ok(Vec::new());
    };
    let repeat_header =
        !data.is_empty() && (chunker.count(header.text) + 1) * 2 <= chunker.max_tokens();
    let (lines, header, first_number) = if repeat_header {
        (data, Some(header.text), 2)
    } else {
        (&rows[..], None, 1)
    };
    let chunks = chunker
        .pack_lines(lines, header)
        .into_iter()
        .map(|packed| {
            let (first, last) = (packed.first + first_number, packed.last + first_number);
            let section = if first == last {
                format!("row {first}")
            } else {
                format!("rows {first}-{last}")
            };
            draft(
                packed.text,
                packed.tokens,
                packed.char_start..packed.char_end,
                None,
                Some(section),
            )
        })
        .collect();
    Ok(chunks)
}

/// The byte range of every record that is not blank, without its line ending.
fn records(text: &str) -> Result<Vec<(usize, usize)>, DocumentError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut record = csv::ByteRecord::new();
    let mut ranges = Vec::new();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => return Err(DocumentError::Corrupt(format!("unreadable CSV: {error}"))),
        }
        let Some(start) = record
            .position()
            .and_then(|position| usize::try_from(position.byte()).ok())
        else {
            continue;
        };
        let end = usize::try_from(reader.position().byte())
            .unwrap_or(text.len())
            .min(text.len());
        let Some(row) = text.get(start..end) else {
            continue;
        };
        // A record's position can include the line ending before it.
        let trimmed = row.trim_start_matches(['\r', '\n']);
        let start = start + (row.len() - trimmed.len());
        let row = trimmed.trim_end_matches(['\r', '\n']);
        if !row.trim().is_empty() {
            ranges.push((start, start + row.len()));
        }
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn records_keep_quoted_line_breaks_and_skip_blank_lines() {
        let text = "a,b\r\n1,\"two\nlines\"\n\n3,4";
        let rows: Vec<&str> = records(text)
            .unwrap()
            .into_iter()
            .map(|(start, end)| &text[start..end])
            .collect();
        assert_eq!(rows, ["a,b", "1,\"two\nlines\"", "3,4"]);
    }
}
