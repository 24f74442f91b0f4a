//! The adapter: building it and calling the upstream (the transport is `tessera-llm-http`'s).

use std::{fmt, sync::Arc};

use async_trait::async_trait;
use reqwest::Url;
use tessera_llm_http::{Upstream, answer};
use tessera_models::{
    Capabilities, ChatModel, ChatRequest, ChatStream, JsonSchemaStyle, ProviderError,
};
use tessera_prompts::TokenCounter;
use tessera_tokenizer::{Encoding, TiktokenCounter};

use crate::{
    config::{ConfigError, OpenAiConfig},
    estimate,
    request::WireRequest,
    translate::Translator,
};

/// A chat model behind an OpenAI-compatible endpoint. Cheap to share (`Arc`); one instance
/// serves every model of its endpoint (the request names the model).
pub struct OpenAiChatModel {
    upstream: Upstream,
    capabilities: Capabilities,
    json_schema_style: JsonSchemaStyle,
    tokenizer: Arc<dyn TokenCounter>,
}

impl fmt::Debug for OpenAiChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModel")
            .field("upstream", &self.upstream)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl OpenAiChatModel {
    /// Checks the configuration and builds the HTTP client (no request is made).
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        let upstream = config.connect(CHAT_COMPLETIONS)?;
        let tokenizer = TiktokenCounter::shared(Encoding::O200kBase)
            .map_err(|e| ConfigError::Tokenizer(e.to_string()))?;
        Ok(Self {
            upstream,
            capabilities: config.capabilities,
            json_schema_style: config.json_schema_style,
            tokenizer: Arc::new(tokenizer),
        })
    }

    /// Counts tokens with another tokenizer (a model that does not use `o200k_base`).
    pub fn with_tokenizer(mut self, tokenizer: Arc<dyn TokenCounter>) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// The URL requests go to (`…/chat/completions`).
    pub fn endpoint(&self) -> &Url {
        self.upstream.endpoint()
    }
}

#[async_trait]
impl ChatModel for OpenAiChatModel {
    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        Arc::clone(&self.tokenizer)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let body = serde_json::to_vec(&WireRequest::new(&request, self.json_schema_style))
            .map_err(|e| {
                ProviderError::InvalidRequest(format!("the request cannot be encoded: {e}"))
            })?;
        let response = self.upstream.send(&body).await?;
        let events = answer(response, self.upstream.idle_timeout(), Translator::new()).await?;
        Ok(estimate::fill_missing_usage(
            events,
            Arc::clone(&self.tokenizer),
            request,
        ))
    }
}

const CHAT_COMPLETIONS: &str = "chat/completions";

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_endpoint_is_the_base_url_with_chat_completions() {
        let endpoint = |base: &str| {
            OpenAiChatModel::new(OpenAiConfig::new(base)).map(|model| model.endpoint().to_string())
        };
        assert_eq!(
            endpoint("https://api.openai.com/v1").unwrap(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            endpoint("http://h/v1/chat/completions").unwrap(),
            "http://h/v1/chat/completions"
        );
        assert!(matches!(
            endpoint("ftp://h/v1"),
            Err(ConfigError::BaseUrl { .. })
        ));
    }

    #[test]
    fn bad_configurations_are_refused() {
        let config = OpenAiConfig::new("http://127.0.0.1:1/v1");
        assert_eq!(
            OpenAiChatModel::new(config.clone().with_api_key("sk bad")).err(),
            Some(ConfigError::ApiKey)
        );
        assert_eq!(
            OpenAiChatModel::new(
                config
                    .clone()
                    .with_timeouts(Duration::ZERO, Duration::from_secs(1))
            )
            .err(),
            Some(ConfigError::ZeroTimeout("first-byte"))
        );
        let mut roots = config.clone();
        roots.extra_roots_pem = Some("no certificate here".into());
        assert!(matches!(
            OpenAiChatModel::new(roots),
            Err(ConfigError::RootCertificates(_))
        ));
        let model = OpenAiChatModel::new(config.with_api_key("sk-topsecret")).unwrap();
        let text = format!("{model:?}");
        assert!(!text.contains("topsecret"), "{text}");
        assert_eq!(model.tokenizer().encoding(), "o200k_base");
    }
}
