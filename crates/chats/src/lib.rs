//! Chats, messages, completion orchestration and the tool loop (pure domain; filled by issue 6).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
