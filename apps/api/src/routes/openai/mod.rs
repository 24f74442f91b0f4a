//! OpenAI's wire format at `/openai/v1` over the same domain services as `/v1`: models,
//! chat completions (the chats domain's completion pipeline, stateless unless `store`),
//! responses (the Responses API over chats), embeddings, files, vector stores (the
//! knowledge domain's datasets), and batches (the batches domain, their lines run by
//! `crate::batch_lines`). The shapes and their
//! translation are `tessera_wire::openai`; these handlers parse, call and map. Errors leave
//! in OpenAI's error shape (`routes::dialects` rewrites every problem on these paths, the
//! token checks' included).

pub mod batches;
pub mod chat;
pub mod embeddings;
pub mod error;
pub mod file_batches;
pub mod files;
pub mod models;
pub mod responses;
pub mod vector_stores;
