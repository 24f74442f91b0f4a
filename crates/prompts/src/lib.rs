//! Particles, particle versions, system prompts and their composition (pure domain; filled by issue 4).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
