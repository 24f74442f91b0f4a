//! What every hosted-model adapter is configured with: the key, the timeouts, the retries,
//! the trusted roots.

use std::{fmt, time::Duration};

use tessera_kernel::TraceHeaders;

/// A provider's API key. Its `Debug` never shows it, and it has no `Display`: the only way
/// to read it is [`ApiKey::expose`], which the adapter calls once to build its header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self(key.to_owned())
    }
}

/// Retries of failures that happen before the first byte of an answer (HTTP 429, 5xx,
/// connection errors). Nothing is retried once the upstream has started answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (0 counts as 1).
    pub max_attempts: u32,
    /// The delay before the first retry; it doubles with every further one (with jitter).
    pub backoff_base: Duration,
    /// The longest delay between two attempts, whether computed or asked for by the upstream
    /// in `Retry-After`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            backoff_base: Duration::from_millis(250),
            max_delay: Duration::from_secs(8),
        }
    }
}

impl RetryPolicy {
    /// No retries: one attempt.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }
}

/// How one upstream is called, whatever its protocol.
#[derive(Debug, Clone)]
pub struct UpstreamSettings {
    /// Opening a connection (also bounded by `first_byte_timeout`).
    pub connect_timeout: Duration,
    /// From sending a request until the response's status and headers arrive, connecting
    /// included (the time to first byte).
    pub first_byte_timeout: Duration,
    /// The longest silence between two chunks of an answer (the first chunk included).
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// Extra trusted root certificates (a PEM bundle), for a self-hosted server behind a
    /// private certificate authority. Public roots are always trusted.
    pub extra_roots_pem: Option<String>,
    /// Trace-context headers added to each request, when the binary exports traces.
    pub trace_headers: Option<TraceHeaders>,
}

impl Default for UpstreamSettings {
    /// 10 s to connect, 30 s to the first byte, 60 s between chunks, 3 attempts.
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            extra_roots_pem: None,
            trace_headers: None,
        }
    }
}

/// Why an adapter could not be built from its configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid base URL `{url}`: {reason}")]
    BaseUrl { url: String, reason: String },
    #[error("invalid API key: it must be printable ASCII without spaces")]
    ApiKey,
    #[error("the {0} timeout must be greater than zero")]
    ZeroTimeout(&'static str),
    #[error("invalid root certificates: {0}")]
    RootCertificates(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("cannot load the tokenizer: {0}")]
    Tokenizer(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let key = ApiKey::new("sk-secret-123");
        let text = format!("{key:?}");
        assert!(!text.contains("sk-secret-123"), "{text}");
        assert_eq!(text, "ApiKey(<redacted>)");
        assert_eq!(key.expose(), "sk-secret-123");
    }
}
