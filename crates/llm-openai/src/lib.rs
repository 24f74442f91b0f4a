//! OpenAI-compatible chat provider over HTTP (adapter; filled by issue 5).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
