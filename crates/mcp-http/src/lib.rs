//! The `McpClient` port over MCP's Streamable HTTP transport with the official Rust SDK
//! (rmcp, client side only), its HTTP requests made by the workspace's reqwest (rustls,
//! Mozilla roots, no redirects followed) through rmcp's `StreamableHttpClient` trait. Each
//! call is one session: initialize, list every page of tools or call one tool, end the
//! session, the whole of it within the endpoint's timeout. The endpoint's headers go with
//! every request and are never logged. Unless the target policy allows private targets, a
//! URL naming a private address is refused and host names resolve only to public addresses
//! (the webhooks' `PublicAddressResolver`, whose addresses the connection uses). A tool's
//! result becomes text: its text contents, other contents summarised, its structured
//! content as JSON when it has no text (decision 0028).

mod policy;
mod transport;

use std::{collections::HashSet, sync::Arc};

use async_trait::async_trait;
use reqwest::{
    header::{HeaderMap, HeaderName, HeaderValue},
    redirect,
};
use rmcp::{
    RoleClient, ServiceError, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
        Implementation, PaginatedRequestParams, ProtocolVersion, ResourceContents,
    },
    service::{ClientInitializeError, Peer},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tessera_kernel::TargetPolicy;
use tessera_mcp::{CallError, Endpoint, McpClient, RemoteTool, ToolOutput};
use tokio::time::{Instant, timeout_at};

use crate::{
    policy::{PolicyResolver, check_url},
    transport::{Failures, McpHttp},
};

/// The most pages of tools one listing reads.
const MAX_TOOL_PAGES: usize = 100;

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("MCP HTTP client: {0}")]
pub struct ClientError(String);

/// Calls MCP servers over Streamable HTTP, one session per call.
#[derive(Clone)]
pub struct HttpMcpClient {
    http: reqwest::Client,
    policy: TargetPolicy,
}

impl std::fmt::Debug for HttpMcpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpMcpClient")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Why one session's work failed: the SDK's error, or the server's answer making no sense.
enum WorkError {
    Service(ServiceError),
    Protocol(String),
}

impl From<ServiceError> for WorkError {
    fn from(error: ServiceError) -> Self {
        Self::Service(error)
    }
}

impl HttpMcpClient {
    /// A client that reaches only the servers `policy` allows. It uses the process's rustls
    /// crypto provider (the binary installs ring at start-up) and installs none itself.
    pub fn new(policy: TargetPolicy) -> Result<Self, ClientError> {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            return Err(ClientError(
                "no process-wide rustls crypto provider is installed".into(),
            ));
        }
        let mut builder = reqwest::Client::builder()
            .redirect(redirect::Policy::none())
            .user_agent(concat!("tessera-mcp/", env!("CARGO_PKG_VERSION")));
        if !policy.allow_private_targets {
            builder = builder.dns_resolver(Arc::new(PolicyResolver::default()));
        }
        let http = builder.build().map_err(|e| ClientError(e.to_string()))?;
        Ok(Self { http, policy })
    }

    /// Opens a session with the endpoint's server, runs `work` in it and ends it, all
    /// within the endpoint's timeout.
    async fn session<T, F, Fut>(&self, endpoint: &Endpoint, work: F) -> Result<T, CallError>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut + Send,
        Fut: Future<Output = Result<T, WorkError>> + Send,
        T: Send,
    {
        let deadline = Instant::now() + endpoint.timeout;
        let url = check_url(self.policy, &endpoint.url)?;
        let failures = Failures::default();
        let http = McpHttp {
            http: self.http.clone(),
            headers: Arc::new(header_map(&endpoint.headers)?),
            failures: failures.clone(),
        };
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
            // One session per call: a server that forgets it mid-call fails the call.
            .reinit_on_expired_session(false);
        let transport = StreamableHttpClientTransport::with_client(http, config);
        let run = async {
            let client = client_config()
                .serve(transport)
                .await
                .map_err(|error| initialize_failed(error, &failures))?;
            let result = work(client.peer().clone()).await;
            Ok::<_, CallError>((client, result))
        };
        let (client, result) = match timeout_at(deadline, run).await {
            Ok(outcome) => outcome?,
            Err(_) => return Err(CallError::Timeout(endpoint.timeout)),
        };
        // Ends the session (DELETE) within what is left of the time; the answer is kept
        // either way, and a session not ended in time is ended in the background.
        let _ = timeout_at(deadline, client.cancel()).await;
        result.map_err(|error| match error {
            WorkError::Service(error) => request_failed(error, &failures),
            WorkError::Protocol(message) => CallError::Protocol(message),
        })
    }
}

/// What the client says of itself when it opens a session.
fn client_config() -> ClientConfig {
    let mut config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("tessera", env!("CARGO_PKG_VERSION")),
    );
    config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    config
}

/// The endpoint's headers; a name or value HTTP cannot carry is refused (named, the value
/// never shown).
fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, CallError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| CallError::Protocol(format!("{name:?} is not a valid header name")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            CallError::Protocol(format!(
                "the value of the header {name} is not valid in HTTP"
            ))
        })?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

/// A failed `initialize`: a failure to reach the server when the transport saw one,
/// otherwise the server's answer was not a valid MCP one.
fn initialize_failed(error: ClientInitializeError, failures: &Failures) -> CallError {
    if let Some(reached) = failures.take() {
        return reached;
    }
    match error {
        ClientInitializeError::JsonRpcError(error) => {
            CallError::Protocol(format!("initialize: {}", error.message))
        }
        other => CallError::Protocol(format!("initialize: {other}")),
    }
}

fn request_failed(error: ServiceError, failures: &Failures) -> CallError {
    if let Some(reached) = failures.take() {
        return reached;
    }
    match error {
        ServiceError::McpError(error) => CallError::Protocol(format!(
            "{} (JSON-RPC error {})",
            error.message, error.code.0
        )),
        other => CallError::Protocol(other.to_string()),
    }
}

/// Every page of the server's tools; a cursor seen before ends the listing as an error.
async fn list_all(peer: Peer<RoleClient>) -> Result<Vec<RemoteTool>, WorkError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_TOOL_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await?;
        tools.extend(page.tools.into_iter().map(|tool| RemoteTool {
            name: tool.name.into_owned(),
            description: tool.description.map(|d| d.into_owned()),
            input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
        }));
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if !seen.insert(next.clone()) => {
                return Err(WorkError::Protocol(format!(
                    "tools/list returned the cursor {next:?} twice"
                )));
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(WorkError::Protocol(format!(
        "tools/list had more than {MAX_TOOL_PAGES} pages"
    )))
}

/// A tool's result as the text a model reads.
fn output(result: CallToolResult) -> ToolOutput {
    let mut has_text = false;
    let mut parts = Vec::with_capacity(result.content.len() + 1);
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                has_text = true;
                parts.push(text.text.clone());
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => {
                    has_text = true;
                    parts.push(text.clone());
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    parts.push(summary("resource", mime_type.as_deref(), Some(uri)));
                }
                #[allow(unreachable_patterns)]
                _ => parts.push("[resource]".into()),
            },
            ContentBlock::Image(image) => {
                parts.push(summary("image", Some(&image.mime_type), None));
            }
            ContentBlock::Audio(audio) => {
                parts.push(summary("audio", Some(&audio.mime_type), None));
            }
            ContentBlock::ResourceLink(link) => {
                parts.push(summary(
                    "resource link",
                    link.mime_type.as_deref(),
                    Some(&link.uri),
                ));
            }
            #[allow(unreachable_patterns)]
            _ => parts.push("[content]".into()),
        }
    }
    if !has_text && let Some(structured) = &result.structured_content {
        parts.insert(0, structured.to_string());
    }
    ToolOutput {
        text: parts.join("\n"),
        is_error: result.is_error.unwrap_or(false),
    }
}

fn summary(kind: &str, mime_type: Option<&str>, uri: Option<&str>) -> String {
    let mut text = format!("[{kind}");
    for detail in [mime_type, uri].into_iter().flatten() {
        text.push(' ');
        text.push_str(detail);
    }
    text.push(']');
    text
}

#[async_trait]
impl McpClient for HttpMcpClient {
    async fn list_tools(&self, endpoint: &Endpoint) -> Result<Vec<RemoteTool>, CallError> {
        self.session(endpoint, list_all).await
    }

    async fn call_tool(
        &self,
        endpoint: &Endpoint,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<ToolOutput, CallError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        self.session(endpoint, |peer| async move {
            Ok(output(peer.call_tool(params).await?))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ImageContent, TextContent};
    use serde_json::json;

    use super::*;

    #[test]
    fn results_become_text() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::Text(TextContent::new("Here it is:")),
            ContentBlock::Image(ImageContent::new("aGk=", "image/png")),
        ]);
        result.structured_content = Some(json!({"ignored": true}));
        assert_eq!(
            output(result),
            ToolOutput {
                text: "Here it is:\n[image image/png]".into(),
                is_error: false
            }
        );

        let mut structured = CallToolResult::success(vec![]);
        structured.structured_content = Some(json!({"temperature": 21}));
        structured.is_error = Some(true);
        assert_eq!(
            output(structured),
            ToolOutput {
                text: r#"{"temperature":21}"#.into(),
                is_error: true
            }
        );
    }

    #[test]
    fn header_values_are_never_shown() {
        let error = header_map(&[("X-Key".into(), "secret\nvalue".into())]).unwrap_err();
        assert!(!error.to_string().contains("secret"), "{error}");
        assert!(header_map(&[("bad name".into(), "v".into())]).is_err());
        let map = header_map(&[("Authorization".into(), "Bearer t".into())]).unwrap();
        assert!(map["authorization"].is_sensitive());
    }
}
