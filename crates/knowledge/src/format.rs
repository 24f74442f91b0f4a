//! What an upload may be: the accepted extensions, their size limits and the bytes their
//! content must start with, so a renamed executable is never stored as a "pdf".

/// Documents (extracted, chunked and embedded) up to 50 MB.
pub const MAX_DOCUMENT_BYTES: u64 = 50 * 1024 * 1024;
/// Images (kept for vision chats; read by OCR and embedded only where their organization
/// opted in) up to 20 MB.
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// An accepted file format, known from the file name's extension and confirmed by its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileFormat {
    Pdf,
    Docx,
    Txt,
    Csv,
    Json,
    Md,
    Png,
    Jpeg,
    Gif,
    Webp,
}

/// Why an upload is refused before it is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("files with the extension {0:?} are not accepted; accepted: {ACCEPTED}")]
    UnsupportedExtension(String),
    #[error("the file name has no extension; accepted: {ACCEPTED}")]
    MissingExtension,
    #[error("the content is not a {0} file")]
    ContentMismatch(&'static str),
}

const ACCEPTED: &str = ".pdf .docx .txt .jsonl .csv .json .md .png .jpg .jpeg .gif .webp";

impl FileFormat {
    pub const ALL: [Self; 10] = [
        Self::Pdf,
        Self::Docx,
        Self::Txt,
        Self::Csv,
        Self::Json,
        Self::Md,
        Self::Png,
        Self::Jpeg,
        Self::Gif,
        Self::Webp,
    ];

    /// The format a file name's extension names (case-insensitive).
    pub fn from_file_name(name: &str) -> Result<Self, FormatError> {
        let extension = name
            .rsplit_once('.')
            .map(|(_, extension)| extension)
            .filter(|extension| !extension.is_empty())
            .ok_or(FormatError::MissingExtension)?;
        Self::from_extension(extension)
            .ok_or_else(|| FormatError::UnsupportedExtension(format!(".{extension}")))
    }

    fn from_extension(extension: &str) -> Option<Self> {
        Some(match extension.to_ascii_lowercase().as_str() {
            "pdf" => Self::Pdf,
            "docx" => Self::Docx,
            // JSON Lines (a batch's requests) is stored and read as plain text.
            "txt" | "jsonl" => Self::Txt,
            "csv" => Self::Csv,
            "json" => Self::Json,
            "md" => Self::Md,
            "png" => Self::Png,
            "jpg" | "jpeg" => Self::Jpeg,
            "gif" => Self::Gif,
            "webp" => Self::Webp,
            _ => return None,
        })
    }

    /// The stored name of the format (`pdf`, `jpeg`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pdf => "pdf",
            Self::Docx => "docx",
            Self::Txt => "txt",
            Self::Csv => "csv",
            Self::Json => "json",
            Self::Md => "md",
            Self::Png => "png",
            Self::Jpeg => "jpeg",
            Self::Gif => "gif",
            Self::Webp => "webp",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.as_str() == text)
    }

    pub fn media_type(self) -> &'static str {
        match self {
            Self::Pdf => "application/pdf",
            Self::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Self::Txt => "text/plain; charset=utf-8",
            Self::Csv => "text/csv; charset=utf-8",
            Self::Json => "application/json",
            Self::Md => "text/markdown; charset=utf-8",
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// Images are stored for vision chats; their text is extracted (by OCR) and embedded only
    /// where the service reads their format and their organization opted in.
    pub fn is_image(self) -> bool {
        matches!(self, Self::Png | Self::Jpeg | Self::Gif | Self::Webp)
    }

    /// Text formats must be UTF-8 without NUL bytes throughout, checked while streaming.
    pub fn is_text(self) -> bool {
        matches!(self, Self::Txt | Self::Csv | Self::Json | Self::Md)
    }

    pub fn max_bytes(self) -> u64 {
        if self.is_image() {
            MAX_IMAGE_BYTES
        } else {
            MAX_DOCUMENT_BYTES
        }
    }

    /// How many leading bytes [`FileFormat::check_signature`] needs to decide.
    pub const SIGNATURE_BYTES: usize = 12;

    /// Checks the content's first bytes (up to [`Self::SIGNATURE_BYTES`]; fewer only when the
    /// whole file is shorter). Text formats are checked by [`TextCheck`] instead.
    pub fn check_signature(self, head: &[u8]) -> Result<(), FormatError> {
        let ok = match self {
            Self::Pdf => head.starts_with(b"%PDF-"),
            // A docx is a zip archive; its parts are checked when it is extracted.
            Self::Docx => head.starts_with(b"PK\x03\x04"),
            Self::Png => head.starts_with(b"\x89PNG\r\n\x1a\n"),
            Self::Jpeg => head.starts_with(b"\xff\xd8\xff"),
            Self::Gif => head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a"),
            Self::Webp => head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP",
            Self::Txt | Self::Csv | Self::Json | Self::Md => true,
        };
        if ok {
            Ok(())
        } else {
            Err(FormatError::ContentMismatch(self.as_str()))
        }
    }
}

/// Checks that streamed content is UTF-8 text without NUL bytes, across chunk boundaries.
#[derive(Debug, Default)]
pub struct TextCheck {
    /// The bytes of a character split by the last chunk boundary.
    pending: Vec<u8>,
}

impl TextCheck {
    /// Feeds the next piece of the content; an error means it is not text.
    pub fn feed(&mut self, piece: &[u8], format: FileFormat) -> Result<(), FormatError> {
        let mismatch = || FormatError::ContentMismatch(format.as_str());
        if piece.contains(&0) {
            return Err(mismatch());
        }
        let mut joined;
        let bytes = if self.pending.is_empty() {
            piece
        } else {
            joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(piece);
            &joined[..]
        };
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            // An incomplete character at the end: keep it for the next piece.
            Err(error) if error.error_len().is_none() => {
                self.pending = bytes[error.valid_up_to()..].to_vec();
                Ok(())
            }
            Err(_) => Err(mismatch()),
        }
    }

    /// Ends the content; a character left incomplete means it is not text.
    pub fn finish(self, format: FileFormat) -> Result<(), FormatError> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(FormatError::ContentMismatch(format.as_str()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_case_insensitive_and_limited_to_the_list() {
        assert_eq!(
            FileFormat::from_file_name("Report.PDF"),
            Ok(FileFormat::Pdf)
        );
        assert_eq!(FileFormat::from_file_name("a.b.jpg"), Ok(FileFormat::Jpeg));
        assert_eq!(
            FileFormat::from_file_name("run.exe"),
            Err(FormatError::UnsupportedExtension(".exe".into()))
        );
        assert_eq!(
            FileFormat::from_file_name("README"),
            Err(FormatError::MissingExtension)
        );
        assert_eq!(
            FileFormat::from_file_name("dot."),
            Err(FormatError::MissingExtension)
        );
        for format in FileFormat::ALL {
            assert_eq!(FileFormat::parse(format.as_str()), Some(format));
        }
    }

    #[test]
    fn signatures_are_checked() {
        assert!(FileFormat::Pdf.check_signature(b"%PDF-1.7\n").is_ok());
        assert!(FileFormat::Pdf.check_signature(b"MZ\x90\x00").is_err());
        assert!(FileFormat::Docx.check_signature(b"PK\x03\x04rest").is_ok());
        assert!(
            FileFormat::Png
                .check_signature(b"\x89PNG\r\n\x1a\n....")
                .is_ok()
        );
        assert!(
            FileFormat::Jpeg
                .check_signature(b"\x89PNG\r\n\x1a\n")
                .is_err()
        );
        assert!(
            FileFormat::Webp
                .check_signature(b"RIFF\x10\x00\x00\x00WEBPVP8 ")
                .is_ok()
        );
        assert!(
            FileFormat::Webp
                .check_signature(b"RIFF\x10\x00\x00\x00WAVE")
                .is_err()
        );
        assert!(FileFormat::Gif.check_signature(b"GIF89a..").is_ok());
    }

    #[test]
    fn text_check_accepts_characters_split_across_pieces() {
        let text = "grüße – 日本".as_bytes();
        for split in 0..text.len() {
            let mut check = TextCheck::default();
            check.feed(&text[..split], FileFormat::Txt).unwrap();
            check.feed(&text[split..], FileFormat::Txt).unwrap();
            check.finish(FileFormat::Txt).unwrap();
        }
    }

    #[test]
    fn text_check_rejects_binary_and_truncated_characters() {
        let mut check = TextCheck::default();
        assert!(check.feed(b"abc\0def", FileFormat::Md).is_err());
        let mut check = TextCheck::default();
        assert!(check.feed(b"\xff\xfe", FileFormat::Csv).is_err());
        let mut check = TextCheck::default();
        check
            .feed("ü".as_bytes().split_at(1).0, FileFormat::Json)
            .unwrap();
        assert!(check.finish(FileFormat::Json).is_err());
    }
}
