//! Anthropic's Messages API (`POST /v1/messages`): the models crate's `ChatModel` port for
//! Claude models, without a translating proxy (`kind = "anthropic"` in the catalog).
//!
//! This crate owns: the mapping of a `ChatRequest` to a Messages request (`request`: the
//! system prompt apart, tool calls and results as content blocks, images as base64 blocks,
//! reasoning as extended thinking with its token budget); the translation of the answer's
//! server-sent events (`message_start`, `content_block_*`, `message_delta`, `message_stop`,
//! `error`) or of a whole message into typed `ChatEvent`s (`translate`: thinking as
//! reasoning, tool-use blocks as tool calls, usage with cache reads and writes counted as
//! input); and the key, sent as `x-api-key` and never logged. The call itself (timeouts,
//! retries, failure classification, the event reader) is `tessera-llm-http`'s.

mod config;
mod model;
mod request;
mod translate;

pub use config::{API_VERSION, AnthropicConfig, DEFAULT_BASE_URL};
pub use model::AnthropicChatModel;
pub use tessera_llm_http::{ApiKey, ConfigError, RetryPolicy, UpstreamSettings};
