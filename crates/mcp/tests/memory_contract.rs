//! The `McpServerStore` contract on the in-memory reference store, every check of it, so
//! that the suite itself is checked against the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tessera_mcp::memory::InMemoryMcpServerStore;

tessera_mcp::mcp_server_store_contract!(|| async { (Arc::new(InMemoryMcpServerStore::new()), ()) });
