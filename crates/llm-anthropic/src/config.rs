//! How to reach Anthropic's API (or a server that speaks it), and how patiently.

use reqwest::header::{HeaderName, HeaderValue};
use tessera_llm_http::{
    ApiKey, ConfigError, Upstream, UpstreamSettings, credential_header, endpoint_of,
};
use tessera_models::Capabilities;

/// The API version every request names (`anthropic-version`): the one the Messages API has
/// been stable under.
pub const API_VERSION: &str = "2023-06-01";

/// Where Anthropic's API lives.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// One endpoint of the Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// The API root, `/messages` is appended: `https://api.anthropic.com/v1`.
    pub base_url: String,
    /// Sent as `x-api-key` when present.
    pub api_key: Option<ApiKey>,
    /// What the models behind this endpoint can do.
    pub capabilities: Capabilities,
    /// The answer's length when the request sets none: the Messages API requires one.
    pub default_max_tokens: u32,
    /// Timeouts, retries, trusted roots, trace headers.
    pub transport: UpstreamSettings,
}

impl AnthropicConfig {
    /// An endpoint with the default timeouts (30 s to first byte, 60 s between chunks),
    /// retries (3 attempts) and answer length (4,096 tokens), streaming only.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            capabilities: Capabilities {
                streaming: true,
                ..Capabilities::default()
            },
            default_max_tokens: 4096,
            transport: UpstreamSettings::default(),
        }
    }

    pub fn with_api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Timeouts, retries, trusted roots and trace headers, all at once.
    pub fn with_transport(mut self, transport: UpstreamSettings) -> Self {
        self.transport = transport;
        self
    }

    /// The transport to `base_url` + `/messages`, with the key and the API version.
    pub(crate) fn connect(&self) -> Result<Upstream, ConfigError> {
        let endpoint = endpoint_of(&self.base_url, "messages")?;
        let mut headers = vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        )];
        if let Some(key) = self.api_key.as_ref().filter(|key| !key.expose().is_empty()) {
            headers.push((
                HeaderName::from_static("x-api-key"),
                credential_header("", key)?,
            ));
        }
        Upstream::connect(&self.transport, endpoint, headers)
    }
}
