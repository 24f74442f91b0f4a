//! Token issuing for client credentials and JWT/OIDC verification (adapter; filled by issue 3).
//!
//! This crate is a placeholder that fixes its place in the workspace; it has no code yet.
