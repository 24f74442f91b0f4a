//! The HTTP transport every hosted-model adapter shares (the OpenAI-compatible one and the
//! Anthropic one), so that each adapter owns only its protocol: the request body it sends
//! and the translation of what comes back.
//!
//! This crate owns: HTTP clients, one per calling thread (`thread_clients`); the call up to
//! the response's headers with its connect and first-byte timeouts, its retries (HTTP 429,
//! 5xx and connection failures before the first byte, jittered exponential backoff
//! honouring `Retry-After`, never once the answer has begun) and the mapping of failed
//! responses to `ProviderError` ([`Upstream`]); reading an answer's server-sent events, or a
//! whole JSON answer, with an idle timeout and a bound on buffered bytes, handing each to the
//! adapter's [`Translate`]; and the provider settings every adapter has ([`ApiKey`], never
//! logged; [`RetryPolicy`]; [`UpstreamSettings`]). It knows no provider's JSON beyond the
//! common shapes of an error document ([`error_details`]).

mod errors;
mod settings;
mod sse;
mod thread_clients;
mod upstream;

pub use errors::{clip, error_details};
pub use settings::{ApiKey, ConfigError, RetryPolicy, UpstreamSettings};
pub use sse::{Items, Translate, answer};
pub use upstream::{Upstream, credential_header, endpoint_of, error_chain};
