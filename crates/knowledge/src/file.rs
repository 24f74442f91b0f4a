//! Uploaded files as stored: what they are, where their content lies, and how far
//! processing got.

use chrono::{DateTime, Utc};
use tessera_kernel::{FieldError, OrganizationId};

use crate::{ChunkingSettings, FileFormat, FileId};

/// Where a file is in processing (the seed's `processing`, `ready`, `failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileStatus {
    Processing,
    Ready,
    Failed,
}

impl FileStatus {
    pub const ALL: [Self; 3] = [Self::Processing, Self::Ready, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Processing => "processing",
            Self::Ready => "ready",
            Self::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == text)
    }
}

/// What an OpenAI client uploaded a file for (`purpose` on `/openai/v1/files`). Files for
/// retrieval and model input are processed for knowledge the same way; batch inputs and
/// outputs are stored as they are, never processed. Files uploaded through `/v1` have no
/// purpose and read as `assistants`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilePurpose {
    /// For vector stores and assistants' file search.
    Assistants,
    /// For use as a model's input.
    UserData,
    /// A batch's requests, one JSON object a line.
    Batch,
    /// A batch's answers or failures, written by the service.
    BatchOutput,
}

impl FilePurpose {
    pub const ALL: [Self; 4] = [
        Self::Assistants,
        Self::UserData,
        Self::Batch,
        Self::BatchOutput,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Assistants => "assistants",
            Self::UserData => "user_data",
            Self::Batch => "batch",
            Self::BatchOutput => "batch_output",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|purpose| purpose.as_str() == text)
    }

    /// Whether a file uploaded for `purpose` is one of this purpose's: every file serves
    /// retrieval, so one uploaded through `/v1` (no purpose) counts as `assistants`.
    pub fn includes(self, purpose: Option<FilePurpose>) -> bool {
        purpose.unwrap_or(Self::Assistants) == self
    }

    /// Refuses a file name this purpose cannot take: a batch's requests come in a `.jsonl`
    /// file, one request a line (the error's location is the form's `file` part).
    pub fn check_name(self, name: &str) -> Result<(), FieldError> {
        if self == Self::Batch && !name.to_ascii_lowercase().ends_with(".jsonl") {
            return Err(FieldError::new(
                ["body".into(), "file".into()],
                "a file for batches must be a `.jsonl` file (one request a line)",
                "value_error",
            ));
        }
        Ok(())
    }

    /// Whether files of this purpose are processed for search (batch files are not).
    pub fn is_processed(self) -> bool {
        matches!(self, Self::Assistants | Self::UserData)
    }
}

/// A file record. Its content is a blob named by `sha256`; files with the same content
/// share one blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    pub id: FileId,
    pub organization: OrganizationId,
    /// The principal (user or client) that uploaded it.
    pub created_by: String,
    /// The name it was uploaded under (path components removed).
    pub name: String,
    pub format: FileFormat,
    pub size: u64,
    /// Lowercase hex SHA-256 of the content.
    pub sha256: String,
    pub status: FileStatus,
    /// 0 to 100.
    pub progress: u8,
    /// Why processing failed (`failed` only).
    pub error: Option<String>,
    pub chunk_count: u32,
    /// What an OpenAI client uploaded it for; `None` through `/v1`.
    pub purpose: Option<FilePurpose>,
    /// How it is cut into chunks, when a client asked for sizes of its own (a vector
    /// store's `static` chunking strategy); `None`: the server's setting.
    pub chunking: Option<ChunkingSettings>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What asking for a file to be cut with given sizes, for one dataset, comes to. A file is
/// cut once and its chunks serve every dataset holding it, so sizes that differ from how it
/// is cut are taken only while no other dataset depends on its chunks (decision 0064).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rechunking {
    /// It is cut (or will be) with these sizes already: nothing changes.
    Unchanged,
    /// Recorded: it is cut with them when processed (it is queued or being processed, and is
    /// then cut again; or it has nothing to cut: failed, or ready without chunks).
    Recorded,
    /// Recorded, and the ready file queued to be cut again with them (`processing` until
    /// then; its chunks and vectors are replaced).
    Requeued,
    /// Refused: another dataset holds the file, cut (or to be cut) with other sizes.
    CutElsewhere,
}

impl Rechunking {
    /// What asking for `wanted` comes to for `file`; `held_elsewhere`: a dataset other
    /// than the one asking holds it. Another dataset's chunks are kept unless the file is
    /// not processed yet and nobody asked for sizes before (it is cut once, with these).
    pub fn decide(file: &StoredFile, wanted: ChunkingSettings, held_elsewhere: bool) -> Self {
        if file.chunking == Some(wanted) {
            return Self::Unchanged;
        }
        let still_open = file.status == FileStatus::Processing && file.chunking.is_none();
        if held_elsewhere && !still_open {
            return Self::CutElsewhere;
        }
        if file.status == FileStatus::Ready && file.chunk_count > 0 {
            Self::Requeued
        } else {
            Self::Recorded
        }
    }

    /// Whether the file's sizes change.
    pub fn changes(self) -> bool {
        matches!(self, Self::Recorded | Self::Requeued)
    }
}

/// A chunk of a processed file as kept in the database (the index holds its vectors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChunk {
    pub ordinal: u32,
    pub text: String,
    pub token_count: u32,
    pub location: crate::ChunkLocation,
}

/// Which files a list shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFilter {
    pub organization: OrganizationId,
    pub status: Option<FileStatus>,
    /// The files of this purpose ([`FilePurpose::includes`]).
    pub purpose: Option<FilePurpose>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_batch_files_must_be_named_jsonl() {
        assert!(FilePurpose::Batch.check_name("requests.JSONL").is_ok());
        let refused = FilePurpose::Batch.check_name("requests.json").unwrap_err();
        assert_eq!(refused.loc, ["body".into(), "file".into()]);
        assert_eq!(refused.kind, "value_error");
        for purpose in [FilePurpose::Assistants, FilePurpose::UserData] {
            assert!(purpose.check_name("notes.txt").is_ok());
        }
    }
}
