//! Receiving an upload: the name and format are checked first, then the content is checked
//! (size limit, signature, text encoding) while it streams into blob storage, so nothing is
//! stored for a refused upload and no upload is ever held in memory whole.

use futures_util::{Stream, StreamExt, stream::LocalBoxStream};

use crate::{BlobError, BlobRef, BlobStore, FileFormat, FormatError, TextCheck};

/// The longest file name kept, in characters.
pub const MAX_FILE_NAME_CHARS: usize = 255;

/// Why an upload was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadError {
    #[error("the file name is empty, too long or contains control characters")]
    BadName,
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("the file is larger than the {limit} bytes allowed for {format} files")]
    TooLarge { format: &'static str, limit: u64 },
    #[error("the file is empty")]
    Empty,
    /// The request body ended early or could not be read.
    #[error("the upload was interrupted: {0}")]
    Interrupted(String),
    #[error(transparent)]
    Storage(#[from] BlobError),
    /// What decides how the file is stored could not be read (its organization's settings).
    #[error("the upload could not be admitted: {0}")]
    Unavailable(String),
}

/// An upload as it arrives: the client's file name and the content in pieces.
pub struct Upload<'a> {
    pub file_name: String,
    /// What an OpenAI client uploads it for, when known before the content.
    pub purpose: Option<crate::FilePurpose>,
    pub content: LocalBoxStream<'a, Result<Vec<u8>, UploadError>>,
}

/// The name kept for a file: the last path component, trimmed; no control characters.
pub fn clean_file_name(raw: &str) -> Result<String, UploadError> {
    let name = raw.rsplit(['/', '\\']).next().unwrap_or(raw).trim();
    if name.is_empty()
        || name == "."
        || name == ".."
        || name.chars().count() > MAX_FILE_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(UploadError::BadName);
    }
    Ok(name.to_owned())
}

/// Streams checked content into the blob store; returns the stored blob. Generic over the
/// stream so that content already in memory (a batch's output) is received by a `Send`
/// future, and a request body (which is not `Send`) too.
pub(crate) async fn receive(
    format: FileFormat,
    mut content: impl Stream<Item = Result<Vec<u8>, UploadError>> + Unpin,
    blobs: &dyn BlobStore,
) -> Result<BlobRef, UploadError> {
    let limit = format.max_bytes();
    let mut writer = blobs.writer().await?;
    let mut head: Vec<u8> = Vec::with_capacity(FileFormat::SIGNATURE_BYTES);
    let mut text = format.is_text().then(TextCheck::default);
    let mut size: u64 = 0;
    while let Some(piece) = content.next().await {
        let piece = piece?;
        size += piece.len() as u64;
        if size > limit {
            return Err(UploadError::TooLarge {
                format: format.as_str(),
                limit,
            });
        }
        if head.len() < FileFormat::SIGNATURE_BYTES {
            let wanted = FileFormat::SIGNATURE_BYTES - head.len();
            head.extend_from_slice(&piece[..wanted.min(piece.len())]);
            if head.len() == FileFormat::SIGNATURE_BYTES {
                format.check_signature(&head)?;
            }
        }
        if let Some(check) = text.as_mut() {
            check.feed(&piece, format)?;
        }
        writer.write(&piece).await?;
    }
    if size == 0 {
        return Err(UploadError::Empty);
    }
    if head.len() < FileFormat::SIGNATURE_BYTES {
        format.check_signature(&head)?;
    }
    if let Some(check) = text {
        check.finish(format)?;
    }
    Ok(writer.commit().await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_keep_the_last_component() {
        assert_eq!(clean_file_name("C:\\docs\\a.pdf").as_deref(), Ok("a.pdf"));
        assert_eq!(clean_file_name("../../etc/x.md ").as_deref(), Ok("x.md"));
        assert_eq!(clean_file_name("dir/"), Err(UploadError::BadName));
        assert_eq!(clean_file_name("a\nb.txt"), Err(UploadError::BadName));
        assert_eq!(clean_file_name(&"x".repeat(300)), Err(UploadError::BadName));
    }
}
