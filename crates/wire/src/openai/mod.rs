//! OpenAI's wire format as `/openai/v1` speaks it: the request types with their validation
//! and translation into the chats and knowledge domains' requests, the objects built from
//! domain messages, files and datasets (vector stores), the `chat.completion.chunk` and
//! Responses event streams, and OpenAI's error shape.

pub mod attributes;
pub mod batches;
pub mod chat;
pub mod embeddings;
pub mod error;
pub mod file_batches;
pub mod file_search;
pub mod files;
pub mod models;
pub mod response_object;
pub mod response_stream;
pub mod responses;
pub mod stream;
pub mod vector_stores;

/// Where the OpenAI dialect is served.
pub const PREFIX: &str = "/openai/v1";

/// Seconds since the epoch, OpenAI's `created`.
pub fn unix(at: chrono::DateTime<chrono::Utc>) -> i64 {
    at.timestamp()
}
