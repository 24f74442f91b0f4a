//! The port that keeps header values secret at rest.

/// Header names and values, sealed (encrypted and authenticated) into one opaque value.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedHeaders(pub Vec<u8>);

impl std::fmt::Debug for SealedHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SealedHeaders({} bytes)", self.0.len())
    }
}

/// Why sealed headers could not be opened (another key, or altered data).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sealed headers could not be opened: {0}")]
pub struct SealError(pub String);

/// Seals and opens header secrets with a key the service is configured with.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait HeaderSealer: Send + Sync {
    fn seal(&self, headers: &[(String, String)]) -> SealedHeaders;
    fn open(&self, sealed: &SealedHeaders) -> Result<Vec<(String, String)>, SealError>;
}
