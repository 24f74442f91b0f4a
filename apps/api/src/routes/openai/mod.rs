//! OpenAI's wire format at `/openai/v1` over the same domain services as `/v1`: models,
//! chat completions (the chats domain's completion pipeline, stateless unless `store`),
//! responses (the Responses API over chats) and embeddings. Handlers translate shapes only; errors leave in OpenAI's error shape
//! (`error::dialect` rewrites every problem on these paths, the token checks' included).

pub mod chat;
pub mod embeddings;
pub mod error;
pub mod models;
pub mod response_object;
pub mod response_stream;
pub mod responses;
pub mod stream;

/// Where the OpenAI dialect is served.
pub const PREFIX: &str = "/openai/v1";

/// Seconds since the epoch, OpenAI's `created`.
fn unix(at: chrono::DateTime<chrono::Utc>) -> i64 {
    at.timestamp()
}
