//! Helpers of the format tests; the documents themselves are built by `tessera_documents::testing`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, dead_code)]

use tessera_documents::DocumentChunker;
pub use tessera_documents::testing::*;
use tessera_knowledge::{
    ChunkDraft, ChunkingSettings, DocumentError, DocumentProcessor, FileFormat, ignore_progress,
};

pub fn settings(max_tokens: usize, overlap_tokens: usize) -> ChunkingSettings {
    ChunkingSettings {
        max_tokens,
        overlap_tokens,
    }
}

pub async fn chunks(
    format: FileFormat,
    content: impl Into<Vec<u8>>,
    settings: ChunkingSettings,
) -> Result<Vec<ChunkDraft>, DocumentError> {
    DocumentChunker::default()
        .chunks(format, content.into(), settings, ignore_progress())
        .await
}

pub fn count(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len()
}

/// What every chunk promises: text, an exact token count within the limit, ordered offsets.
pub fn assert_valid(chunks: &[ChunkDraft], max_tokens: usize) {
    assert!(!chunks.is_empty());
    let mut previous_start = 0;
    for chunk in chunks {
        assert!(!chunk.text.trim().is_empty(), "blank chunk");
        assert_eq!(
            chunk.token_count as usize,
            count(&chunk.text),
            "exact count: {chunk:?}"
        );
        assert!(
            chunk.token_count as usize <= max_tokens,
            "{} > {max_tokens}: {chunk:?}",
            chunk.token_count
        );
        assert!(chunk.location.char_start < chunk.location.char_end);
        assert!(
            chunk.location.char_start >= previous_start,
            "document order"
        );
        previous_start = chunk.location.char_start;
    }
}

/// The characters `start..end` of `text`.
pub fn slice(text: &str, start: u64, end: u64) -> String {
    text.chars()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect()
}

/// Checks the chunks of one table whose extracted text is `text`: each starts with `header`
/// (the header row and the separator line) followed by whole rows of `rows` only, every row
/// is in some chunk, and the offsets give the first chunk's text from the header on and each
/// other chunk's rows. `context` names the case in failures.
pub fn assert_whole_rows_under_the_header(
    table: &[&ChunkDraft],
    header: &str,
    rows: &[String],
    text: &str,
    context: &str,
) {
    let mut seen = vec![false; rows.len()];
    for (index, chunk) in table.iter().enumerate() {
        let body = chunk
            .text
            .strip_prefix(header)
            .unwrap_or_else(|| panic!("{context}: header first in {chunk:#?}"));
        for line in body.lines() {
            let row = rows
                .iter()
                .position(|row| row == line)
                .unwrap_or_else(|| panic!("{context}: not a whole row: {line:?}"));
            seen[row] = true;
        }
        let span = slice(text, chunk.location.char_start, chunk.location.char_end);
        let expected = if index == 0 {
            chunk.text.as_str()
        } else {
            body
        };
        assert_eq!(span, expected, "{context}: the offsets of chunk {index}");
    }
    assert!(
        seen.iter().all(|seen| *seen),
        "{context}: every row in a chunk"
    );
}
