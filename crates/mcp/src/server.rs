//! An MCP server registered by an organization, and what is asked to register or change one.

use chrono::{DateTime, Utc};
use tessera_kernel::OrganizationId;

use crate::{RemoteTool, SealedHeaders};

tessera_kernel::entity_id!(
    /// An MCP server's id.
    McpServerId,
    "mcp"
);

/// The most MCP servers one organization may register.
pub const MAX_SERVERS_PER_ORGANIZATION: u64 = 50;
/// The longest endpoint URL.
pub const MAX_URL_CHARS: usize = 2048;
/// The longest name.
pub const MAX_NAME_CHARS: usize = 100;
/// The most headers one server is sent.
pub const MAX_HEADERS: usize = 20;
/// How long one call may take unless the server says otherwise.
pub const DEFAULT_TIMEOUT_MS: u32 = 30_000;
/// The longest per-call timeout.
pub const MAX_TIMEOUT_MS: u32 = 300_000;

/// An MCP server of an organization.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    pub id: McpServerId,
    pub organization: OrganizationId,
    pub name: String,
    /// The Streamable HTTP endpoint.
    pub url: String,
    /// The names of the headers sent (shown), in the order given.
    pub header_names: Vec<String>,
    /// The headers with their values (secrets), sealed.
    pub headers: SealedHeaders,
    /// When set, only these tools are offered to models.
    pub allowed_tools: Option<Vec<String>>,
    pub timeout_ms: u32,
    /// What the server last said it offers; `None` until asked.
    pub tools: Option<ToolsCache>,
    /// The principal that registered it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl McpServer {
    /// Whether models may be offered the tool named `name`.
    pub fn allows(&self, name: &str) -> bool {
        self.allowed_tools
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|a| a == name))
    }
}

/// A server's tools as listed at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsCache {
    pub tools: Vec<RemoteTool>,
    pub fetched_at: DateTime<Utc>,
}

/// What a caller asks to register, before validation.
#[derive(Debug, Clone, Default)]
pub struct NewMcpServer {
    pub name: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub allowed_tools: Option<Vec<String>>,
    pub timeout_ms: Option<u32>,
}

/// A change to a server: every field given replaces the stored one (`headers` replaces all
/// headers; `allowed_tools: Some(None)` removes the allow-list).
#[derive(Debug, Clone, Default)]
pub struct McpServerPatch {
    pub name: Option<String>,
    pub url: Option<String>,
    pub headers: Option<Vec<(String, String)>>,
    pub allowed_tools: Option<Option<Vec<String>>>,
    pub timeout_ms: Option<u32>,
}

/// One MCP server linked to one user model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLink {
    pub model_id: String,
    pub server_id: McpServerId,
    pub created_at: DateTime<Utc>,
}
