//! The port to MCP servers: list a server's tools, call one.

use std::time::Duration;

use async_trait::async_trait;

/// Where and how to reach one server: its URL, the headers to send (secrets, opened), and
/// how long one call may take.
#[derive(Clone)]
pub struct Endpoint {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    // Header values are secrets: never printed, not even in debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A tool as a server describes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RemoteTool {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: serde_json::Value,
}

/// What a tool call returned: its text content, and whether the server flagged it an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

/// Why a server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No answer within the endpoint's timeout.
    #[error("the MCP server did not answer within {0:?}")]
    Timeout(Duration),
    /// The target policy refused the address the URL names or resolves to.
    #[error("the MCP server's address is not allowed: {0}")]
    Refused(String),
    /// Connecting failed, or the server answered with an HTTP error.
    #[error("the MCP server could not be reached: {0}")]
    Unreachable(String),
    /// The server answered something that is not a valid MCP answer, or a JSON-RPC error.
    #[error("the MCP server failed: {0}")]
    Protocol(String),
}

/// A client of MCP servers over Streamable HTTP.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait McpClient: Send + Sync {
    /// Every tool the server offers (all pages).
    async fn list_tools(&self, endpoint: &Endpoint) -> Result<Vec<RemoteTool>, CallError>;

    /// Calls `name` with `arguments` (a JSON object).
    async fn call_tool(
        &self,
        endpoint: &Endpoint,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<ToolOutput, CallError>;
}
