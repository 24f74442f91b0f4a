//! The bodies of `/v1/mcp-servers` and of a model's tool links (`/v1/models/{id}/tools`): an
//! MCP server as answered (never its header values) and its page, the create and update
//! requests, the tools a server offers and the query that refreshes them, and the link of a
//! server to a model with its request and list, each mapped from the MCP domain's records.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_mcp::{McpServer, RemoteTool, ToolLink};
use utoipa::{IntoParams, ToSchema};
use validator::Validate;

use crate::{itemized, paged};

/// An MCP server (never its header values).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerOut {
    #[schema(example = "mcp_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub id: String,
    pub organization_id: String,
    #[schema(example = "Weather tools")]
    pub name: String,
    /// The Streamable HTTP endpoint.
    #[schema(example = "https://tools.example.com/mcp")]
    pub url: String,
    /// The names of the headers sent with every request; their values are write-only.
    #[schema(example = json!(["Authorization"]))]
    pub header_names: Vec<String>,
    /// When set, only these tools are offered to models.
    pub allowed_tools: Option<Vec<String>>,
    /// How long one call may take.
    #[schema(example = 30000)]
    pub timeout_ms: u32,
    /// When the tools were last listed (`GET …/tools`, or a completion's first use).
    pub tools_fetched_at: Option<DateTime<Utc>>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<McpServer> for McpServerOut {
    fn from(server: McpServer) -> Self {
        Self {
            id: server.id.to_string(),
            organization_id: server.organization.to_string(),
            name: server.name,
            url: server.url,
            header_names: server.header_names,
            allowed_tools: server.allowed_tools,
            timeout_ms: server.timeout_ms,
            tools_fetched_at: server.tools.map(|tools| tools.fetched_at),
            created_by: server.created_by,
            created_at: server.created_at,
            updated_at: server.updated_at,
        }
    }
}

paged!(McpServerOut => McpServerPage, "A page of MCP servers.");

/// Register an MCP server.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateMcpServer {
    #[schema(example = "Weather tools", min_length = 1, max_length = 100)]
    pub name: String,
    /// Absolute `https` (or `http`) URL of the Streamable HTTP endpoint, without
    /// credentials; loopback, private and link-local hosts are refused unless the operator
    /// allows them.
    #[schema(example = "https://tools.example.com/mcp", max_length = 2048)]
    pub url: String,
    /// Headers sent with every request (an API key, say). Their values are secrets: stored
    /// encrypted and never returned.
    #[serde(default)]
    #[schema(example = json!({"Authorization": "Bearer …"}))]
    pub headers: BTreeMap<String, String>,
    /// Offer only these tools to models (all when absent).
    pub allowed_tools: Option<Vec<String>>,
    /// 100 to 300000 milliseconds per call; 30000 when absent.
    #[schema(minimum = 100, maximum = 300000)]
    pub timeout_ms: Option<u32>,
}

/// Change an MCP server; every field given replaces the stored one.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateMcpServer {
    #[schema(min_length = 1, max_length = 100)]
    pub name: Option<String>,
    /// A new URL forgets the listed tools. A URL of another origin (scheme, host or port)
    /// also drops the stored headers, unless `headers` is given in the same request: header
    /// values are never sent to an origin they were not given for.
    #[schema(max_length = 2048)]
    pub url: Option<String>,
    /// Replaces every header (and forgets the listed tools); `{}` removes them all.
    pub headers: Option<BTreeMap<String, String>>,
    /// `null` offers every tool again.
    #[serde(default, deserialize_with = "crate::nullable")]
    #[schema(value_type = Option<Vec<String>>)]
    pub allowed_tools: Option<Option<Vec<String>>>,
    #[schema(minimum = 100, maximum = 300000)]
    pub timeout_ms: Option<u32>,
}

/// A tool as the server describes it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolOut {
    #[schema(example = "get_weather")]
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    #[schema(value_type = Object)]
    pub input_schema: serde_json::Value,
}

impl From<RemoteTool> for McpToolOut {
    fn from(tool: RemoteTool) -> Self {
        Self {
            name: tool.name,
            description: tool.description,
            input_schema: tool.input_schema,
        }
    }
}

/// The tools a server offers models (its allow-list applied).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolList {
    pub items: Vec<McpToolOut>,
    /// When the server was asked.
    pub fetched_at: DateTime<Utc>,
}

/// Ask the server again instead of answering from the cache.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ToolsQuery {
    /// `true`: list the tools from the server now.
    pub refresh: Option<bool>,
}

/// Link an MCP server to a model.
#[derive(Debug, Deserialize, Validate, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateToolLink {
    #[schema(example = "mcp_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")]
    pub mcp_server_id: String,
}

/// An MCP server linked to a model: its tools are offered in the model's completions and
/// run by Tessera.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolLinkOut {
    pub model_id: String,
    pub mcp_server_id: String,
    pub created_at: DateTime<Utc>,
}

impl From<ToolLink> for ToolLinkOut {
    fn from(link: ToolLink) -> Self {
        Self {
            model_id: link.model_id,
            mcp_server_id: link.server_id.to_string(),
            created_at: link.created_at,
        }
    }
}

itemized!(ToolLinkOut => ToolLinkList, "The MCP servers linked to a model, oldest first.");
