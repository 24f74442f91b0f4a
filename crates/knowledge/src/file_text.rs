//! A processed document's whole text, for chat attachments: the file itself for formats
//! whose extracted text is the file's text (txt, md, csv), else the chunks joined back
//! together by their character offsets, overlaps removed.

use tessera_kernel::DomainError;

use crate::{FileFormat, FileService, FileStatus, StoredChunk, StoredFile};

/// A document's text, or how long it would have been.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentText {
    Text(String),
    /// Longer than asked for: at least `chars` characters.
    TooLong {
        chars: usize,
    },
}

impl FileService {
    /// The text of a `ready` document, if it has at most `max_chars` characters.
    pub async fn document_text(
        &self,
        file: &StoredFile,
        max_chars: usize,
    ) -> Result<DocumentText, DomainError> {
        if file.format.is_image() || file.status != FileStatus::Ready {
            return Err(DomainError::internal(format!(
                "file {} is no ready document",
                file.id
            )));
        }
        let text = match file.format {
            FileFormat::Txt | FileFormat::Md | FileFormat::Csv => {
                // UTF-8 takes at most 4 bytes a character.
                let at_least = usize::try_from(file.size / 4).unwrap_or(usize::MAX);
                if at_least > max_chars {
                    return Ok(DocumentText::TooLong { chars: at_least });
                }
                let content = self.bytes(file).await?;
                let text = String::from_utf8(content).map_err(|_| {
                    DomainError::internal(format!("file {}: processed, yet not UTF-8", file.id))
                })?;
                match text.strip_prefix('\u{feff}') {
                    Some(rest) => rest.to_owned(),
                    None => text,
                }
            }
            _ => {
                let chunks = self
                    .file_store()
                    .chunks(&file.organization, &file.id)
                    .await?;
                join_chunks(chunks)
            }
        };
        let chars = text.chars().count();
        Ok(if chars > max_chars {
            DocumentText::TooLong { chars }
        } else {
            DocumentText::Text(text)
        })
    }
}

/// The extracted text from its chunks: each chunk's text from where the previous one ended
/// (chunks overlap), a blank line where the offsets skip text (between pdf pages, around
/// docx tables).
fn join_chunks(mut chunks: Vec<StoredChunk>) -> String {
    chunks.sort_by_key(|chunk| (chunk.location.char_start, chunk.location.char_end));
    let mut text = String::new();
    let mut end = 0;
    for chunk in chunks {
        let (start, stop) = (chunk.location.char_start, chunk.location.char_end);
        if text.is_empty() {
            text.push_str(&chunk.text);
        } else if stop <= end {
            continue;
        } else if start >= end {
            if start > end {
                text.push_str("\n\n");
            }
            text.push_str(&chunk.text);
        } else {
            let overlap = usize::try_from(end - start).unwrap_or(usize::MAX);
            text.extend(chunk.text.chars().skip(overlap));
        }
        end = end.max(stop);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChunkLocation;

    fn chunk(ordinal: u32, text: &str, char_start: u64) -> StoredChunk {
        StoredChunk {
            ordinal,
            text: text.into(),
            token_count: 1,
            location: ChunkLocation {
                page: None,
                section: None,
                char_start,
                char_end: char_start + text.chars().count() as u64,
            },
        }
    }

    #[test]
    fn overlapping_chunks_join_into_the_text_once() {
        let text = "Grüße aus Zürich. Zweiter Satz hier. Dritter Satz.";
        let at = |piece: &str| text[..text.find(piece).unwrap()].chars().count() as u64;
        let chunks = vec![
            chunk(2, "Satz hier. Dritter Satz.", at("Satz hier")),
            chunk(0, "Grüße aus Zürich. Zweiter", 0),
            chunk(1, "Zürich. Zweiter Satz hier.", at("Zürich")),
            // Wholly inside what came before.
            chunk(3, "Zweiter", at("Zweiter")),
        ];
        assert_eq!(join_chunks(chunks), text);
    }

    #[test]
    fn skipped_text_between_chunks_becomes_a_blank_line() {
        let chunks = vec![chunk(0, "Page one.", 0), chunk(1, "Page two.", 11)];
        assert_eq!(join_chunks(chunks), "Page one.\n\nPage two.");
        assert_eq!(join_chunks(Vec::new()), "");
    }
}
