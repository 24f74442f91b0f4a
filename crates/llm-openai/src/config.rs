//! How to reach one OpenAI-compatible server, and how patiently.

use std::time::Duration;

use reqwest::header::AUTHORIZATION;
use tessera_kernel::TraceHeaders;
pub use tessera_llm_http::{ApiKey, ConfigError, RetryPolicy};
use tessera_llm_http::{Upstream, UpstreamSettings, credential_header, endpoint_of};
use tessera_models::{Capabilities, JsonSchemaStyle};

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

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Timeouts, retries, trusted roots and trace headers, all at once.
    pub fn with_transport(mut self, transport: UpstreamSettings) -> Self {
        let UpstreamSettings {
            connect_timeout,
            first_byte_timeout,
            idle_timeout,
            retry,
            extra_roots_pem,
            trace_headers,
        } = transport;
        self.connect_timeout = connect_timeout;
        self.first_byte_timeout = first_byte_timeout;
        self.idle_timeout = idle_timeout;
        self.retry = retry;
        self.extra_roots_pem = extra_roots_pem;
        self.trace_headers = trace_headers;
        self
    }

    /// The transport to `base_url` + `/` + `resource`, with the key as a bearer token when
    /// there is one (local servers usually need none).
    pub(crate) fn connect(&self, resource: &str) -> Result<Upstream, ConfigError> {
        let endpoint = endpoint_of(&self.base_url, resource)?;
        let headers = match &self.api_key {
            Some(key) if !key.expose().is_empty() => {
                vec![(AUTHORIZATION, credential_header("Bearer ", key)?)]
            }
            _ => Vec::new(),
        };
        Upstream::connect(&self.settings(), endpoint, headers)
    }

    fn settings(&self) -> UpstreamSettings {
        UpstreamSettings {
            connect_timeout: self.connect_timeout,
            first_byte_timeout: self.first_byte_timeout,
            idle_timeout: self.idle_timeout,
            retry: self.retry,
            extra_roots_pem: self.extra_roots_pem.clone(),
            trace_headers: self.trace_headers,
        }
    }
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
