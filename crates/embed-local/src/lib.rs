//! Embedded sentence embeddings with all-MiniLM-L6-v2 (adapter; filled by issue 7).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
