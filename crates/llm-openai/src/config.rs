//! How to reach one OpenAI-compatible server, and how patiently.

use std::{fmt, time::Duration};

use tessera_kernel::TraceHeaders;
use tessera_models::{Capabilities, JsonSchemaStyle};

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

/// One OpenAI-compatible endpoint: OpenAI itself, vLLM, Ollama, the llama.cpp server,
/// LM Studio, Groq, Together, a LiteLLM proxy… differ only by `base_url` and `api_key`.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// The API root, `/chat/completions` is appended: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1` (Ollama), `http://127.0.0.1:8000/v1` (vLLM).
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when present (local servers usually need none).
    pub api_key: Option<ApiKey>,
    /// What the models behind this endpoint can do.
    pub capabilities: Capabilities,
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
    /// The shape a JSON-schema response format is sent in.
    pub json_schema_style: JsonSchemaStyle,
    /// Trace-context headers added to each request, when the binary exports traces.
    pub trace_headers: Option<TraceHeaders>,
}

impl OpenAiConfig {
    /// An endpoint with the default timeouts (30 s to first byte, 60 s between chunks) and
    /// retries (3 attempts), streaming only.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            capabilities: Capabilities {
                streaming: true,
                ..Capabilities::default()
            },
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            extra_roots_pem: None,
            json_schema_style: JsonSchemaStyle::default(),
            trace_headers: None,
        }
    }

    /// Sends the current trace's context (W3C `traceparent`) with every request.
    pub fn with_trace_headers(mut self, headers: TraceHeaders) -> Self {
        self.trace_headers = Some(headers);
        self
    }

    pub fn with_json_schema_style(mut self, style: JsonSchemaStyle) -> Self {
        self.json_schema_style = style;
        self
    }

    pub fn with_api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    pub fn with_timeouts(mut self, first_byte: Duration, idle: Duration) -> Self {
        self.first_byte_timeout = first_byte;
        self.idle_timeout = idle;
        self
    }

    pub fn with_connect_timeout(mut self, connect: Duration) -> Self {
        self.connect_timeout = connect;
        self
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
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
        let config = OpenAiConfig::new("https://api.example.com/v1").with_api_key("sk-secret-123");
        let text = format!("{config:?}");
        assert!(!text.contains("sk-secret-123"), "{text}");
        assert!(text.contains("ApiKey(<redacted>)"), "{text}");
        assert_eq!(
            config.api_key.as_ref().map(ApiKey::expose),
            Some("sk-secret-123")
        );
    }
}
