//! Files, datasets, chunking, retrieval and processing jobs (pure domain; filled by issue 7).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
