//! Black-box tests of `tessera-api`: the real application on a real TLS listener, over real
//! SQLite and PostgreSQL databases, and the real binary as a process. One test binary keeps
//! link time down.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod anthropic;
mod anthropic_clients;
mod api_keys;
mod artifacts;
mod attachments;
mod audit;
mod auth;
mod batch_restart;
mod binary;
mod chats;
mod clients;
mod crash_recovery;
mod deploy;
mod embedding_models;
mod files;
mod generation_leases;
mod graceful_stop;
mod guardrails;
mod hardening;
mod hardening3_access;
mod hardening3_operations;
mod hardening3_tools;
mod http;
mod idempotency;
mod image_ocr;
mod late_interaction;
mod mcp;
mod mcp_endpoint;
mod metrics;
mod models;
mod ocr;
mod oidc;
mod openai;
mod openai_batches;
mod openai_clients;
mod openai_file_search;
mod openai_vector_stores;
mod openapi;
mod processing;
mod prompts;
mod rag;
mod rate_limits;
mod reindexing;
mod remote_embeddings;
mod rerank;
mod routing;
mod s3_uploads;
mod schemathesis;
mod support;
mod tables;
mod traces;
mod usage;
mod webhooks;
