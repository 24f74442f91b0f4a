//! The OpenAI-compatible provider: the models crate's `ChatModel` port over HTTP, for every
//! server that speaks OpenAI's `POST /chat/completions` — OpenAI, vLLM, Ollama, the
//! llama.cpp server, LM Studio, Groq, Together, a LiteLLM proxy — told apart only by base
//! URL and API key ([`OpenAiConfig`]); and the knowledge domain's `Embedder` port over the
//! same servers' `POST /embeddings` ([`OpenAiEmbedder`]).
//!
//! This crate owns: the mapping of a `ChatRequest` to the upstream's JSON (always streamed,
//! with usage); the translation of the upstream's server-sent events, odd ones included, into
//! typed `ChatEvent`s; and the key, sent as a bearer token and never logged. The call itself
//! (timeouts, retries, failure classification, the event reader) is `tessera-llm-http`'s.
//! Token counting defaults to tiktoken's `o200k_base`; it also estimates the usage of an
//! answer whose upstream streamed none (`estimate`). A response schema goes out in OpenAI's
//! `json_schema` shape or, per [`OpenAiConfig::json_schema_style`], in the `json_object`
//! shape some servers want instead.
//!
//! It relies on the process having installed a rustls crypto provider (the API installs
//! ring at start-up); when none is installed yet, building an adapter installs
//! ring.

mod config;
mod embeddings;
mod estimate;
mod model;
mod request;
#[cfg(feature = "testing")]
pub mod testing;
mod translate;

pub use config::{ApiKey, ConfigError, OpenAiConfig, RetryPolicy};
pub use embeddings::{EmbedderConfigError, OpenAiEmbedder};
pub use model::OpenAiChatModel;
pub use tessera_llm_http::UpstreamSettings;
