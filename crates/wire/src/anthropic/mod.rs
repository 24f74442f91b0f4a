//! Anthropic's Messages API as `/anthropic/v1` speaks it: the request with its validation
//! and translation into the chats domain's `CompletionRequest` (`request`), the `message`
//! object built from a stored answer (`message`), the event stream Anthropic's clients
//! parse (`stream`), the model objects (`models`) and Anthropic's error shape (`error`).
//! Which status a domain error becomes stays in the server, as for OpenAI's dialect.

pub mod error;
pub mod message;
pub mod models;
pub mod request;
pub mod stream;

/// Where the Anthropic dialect is served.
pub const PREFIX: &str = "/anthropic/v1";

/// The header Anthropic's clients send their key in (`Authorization: Bearer` works too).
pub const API_KEY_HEADER: &str = "x-api-key";
