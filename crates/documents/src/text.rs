//! Extracted text: checks every format shares, and text cut into segments (pages, heading
//! sections) that chunks never span.

use tessera_knowledge::{ChunkDraft, DocumentError};

use crate::Limits;
use crate::chunking::Chunker;

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
}

/// A document's extracted text, cut into segments in order.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    pub text: String,
    pub segments: Vec<Segment>,
}

impl Extracted {
    /// Chunks each segment's text as prose.
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
            chunks.extend(chunker.prose(
                piece,
                char_start,
                segment.page,
                segment.section.as_deref(),
            ));
        }
        Ok(chunks)
    }
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
