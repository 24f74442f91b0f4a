//! MCP servers of organizations (pure domain). It owns what an organization registers (a
//! Streamable HTTP endpoint under the outbound target policy, headers whose values are
//! secrets kept sealed and never shown, an optional allow-list of tool names, a per-call
//! timeout), the cache of each server's tools, which user models link which servers, and
//! [`Toolbox`]: the tools a model's servers offer during a completion and the running of one
//! call, whose failure or timeout becomes a result the model reads rather than an error. It
//! knows nothing of the protocol's transport, of encryption or of SQL: adapters implement
//! [`McpClient`], [`HeaderSealer`] and [`McpServerStore`]. The `memory` feature has the store
//! port's in-memory reference implementation, the `contract` feature its contract suite
//! (`mcp_server_store_contract!`) for any other.

mod client;
#[cfg(feature = "contract")]
pub mod contract;
// The contract macro's path to the kernel's `contract_checks!`, from any calling crate.
#[cfg(feature = "contract")]
#[doc(hidden)]
pub use tessera_kernel as __tessera_kernel;
#[cfg(any(test, feature = "memory"))]
pub mod memory;
mod models;
mod sealer;
mod server;
mod service;
mod store;
mod toolbox;

pub use client::{CallError, Endpoint, McpClient, RemoteTool, ToolOutput};
pub use models::LinkableModels;
pub use sealer::{HeaderSealer, SealError, SealedHeaders};
pub use server::{
    DEFAULT_TIMEOUT_MS, MAX_HEADERS, MAX_NAME_CHARS, MAX_SERVERS_PER_ORGANIZATION, MAX_TIMEOUT_MS,
    MAX_URL_CHARS, McpServer, McpServerId, McpServerPatch, NewMcpServer, ToolLink, ToolsCache,
};
pub use service::{McpPorts, McpService};
pub use store::McpServerStore;
pub use toolbox::{MAX_RESULT_CHARS, ServerCall, ServerToolResult, TRUNCATION_MARK, Toolbox};

#[cfg(any(test, feature = "mocks"))]
pub use client::MockMcpClient;
#[cfg(any(test, feature = "mocks"))]
pub use models::MockLinkableModels;
#[cfg(any(test, feature = "mocks"))]
pub use store::MockMcpServerStore;
