//! The adapter: building it and calling the Messages API.

use std::{fmt, sync::Arc};

use async_trait::async_trait;
use reqwest::Url;
use tessera_llm_http::{ConfigError, Upstream, answer};
use tessera_models::{Capabilities, ChatModel, ChatRequest, ChatStream, ProviderError};
use tessera_prompts::TokenCounter;
use tessera_tokenizer::{Encoding, TiktokenCounter};

use crate::{config::AnthropicConfig, request::WireRequest, translate::Translator};

/// A Claude model behind the Messages API. Cheap to share; one instance serves every model
/// of its endpoint (the request names the model).
pub struct AnthropicChatModel {
    upstream: Upstream,
    capabilities: Capabilities,
    default_max_tokens: u32,
    tokenizer: Arc<dyn TokenCounter>,
}

impl fmt::Debug for AnthropicChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicChatModel")
            .field("upstream", &self.upstream)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl AnthropicChatModel {
    /// Checks the configuration and builds the HTTP client (no request is made).
    pub fn new(config: AnthropicConfig) -> Result<Self, ConfigError> {
        let upstream = config.connect()?;
        // Anthropic publishes no tokenizer; `o200k_base` is a close estimate for context
        // budgeting (the usage billed is the API's own count).
        let tokenizer = TiktokenCounter::shared(Encoding::O200kBase)
            .map_err(|e| ConfigError::Tokenizer(e.to_string()))?;
        Ok(Self {
            upstream,
            capabilities: config.capabilities,
            default_max_tokens: config.default_max_tokens,
            tokenizer: Arc::new(tokenizer),
        })
    }

    /// The URL requests go to (`…/messages`).
    pub fn endpoint(&self) -> &Url {
        self.upstream.endpoint()
    }
}

#[async_trait]
impl ChatModel for AnthropicChatModel {
    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        Arc::clone(&self.tokenizer)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let wire = WireRequest::new(&request, self.default_max_tokens)
            .map_err(ProviderError::InvalidRequest)?;
        let body = serde_json::to_vec(&wire).map_err(|e| {
            ProviderError::InvalidRequest(format!("the request cannot be encoded: {e}"))
        })?;
        let response = self.upstream.send(&body).await?;
        answer(response, self.upstream.idle_timeout(), Translator::new()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_messages_and_the_key_never_shows() {
        let model = AnthropicChatModel::new(
            AnthropicConfig::new("https://api.anthropic.com/v1").with_api_key("sk-ant-secret"),
        )
        .unwrap();
        assert_eq!(
            model.endpoint().as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        let text = format!("{model:?}");
        assert!(!text.contains("sk-ant-secret"), "{text}");
        assert!(text.contains("anthropic-version"), "{text}");
        assert_eq!(
            AnthropicChatModel::new(AnthropicConfig::new("https://h/v1").with_api_key("sk bad"))
                .err(),
            Some(ConfigError::ApiKey)
        );
    }
}
