//! Vector index on qdrant-edge (embedded) and Qdrant server (adapter; filled by issue 7).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
