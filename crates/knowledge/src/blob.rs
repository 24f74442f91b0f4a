//! Content-addressed storage of uploaded bytes.

use async_trait::async_trait;
use futures_util::stream::BoxStream;

/// A stored blob: its name (lowercase hex SHA-256) and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRef {
    pub sha256: String,
    pub size: u64,
}

/// Why blob storage failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    #[error("blob {0} does not exist")]
    NotFound(String),
    #[error("blob storage failed: {0}")]
    Io(String),
}

/// Receives an upload piece by piece. Dropping it without `commit` discards what was written.
#[async_trait]
pub trait BlobWriter: Send {
    async fn write(&mut self, piece: &[u8]) -> Result<(), BlobError>;

    /// Makes the content durable under its hash (a no-op beyond cleanup when that content is
    /// already stored).
    async fn commit(self: Box<Self>) -> Result<BlobRef, BlobError>;
}

/// Blobs named by the SHA-256 of their content: a local directory by default, object
/// storage for scale-out.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Starts an upload.
    async fn writer(&self) -> Result<Box<dyn BlobWriter>, BlobError>;

    /// The whole content (processing reads documents of at most 50 MB).
    async fn read(&self, sha256: &str) -> Result<Vec<u8>, BlobError>;

    /// The content in pieces, for downloads.
    async fn stream(
        &self,
        sha256: &str,
    ) -> Result<BoxStream<'static, Result<Vec<u8>, BlobError>>, BlobError>;

    /// Removes a blob; removing one that does not exist is not an error.
    async fn delete(&self, sha256: &str) -> Result<(), BlobError>;
}
