//! The port that POSTs a delivery to a receiver.

use async_trait::async_trait;

/// One signed POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingRequest {
    pub url: String,
    /// Header names and values besides `Content-Type: application/json`.
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

/// Why no answer came (an answer of any status is not an error here).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SendError(pub String);

/// Sends deliveries.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// POSTs the request and returns the answer's HTTP status.
    async fn post(&self, request: &OutgoingRequest) -> Result<u16, SendError>;
}
