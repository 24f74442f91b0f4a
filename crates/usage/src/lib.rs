//! Usage records and their aggregation (pure domain; filled by issue 8).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
