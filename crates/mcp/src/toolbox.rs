//! The tools a model's MCP servers offer during one completion, and the running of a call.

use std::sync::Arc;

use crate::{CallError, Endpoint, McpClient, RemoteTool};

/// The longest tool result a model is fed, in characters; longer results are cut and marked.
pub const MAX_RESULT_CHARS: usize = 16_000;
/// Ends a result that was cut to [`MAX_RESULT_CHARS`].
pub const TRUNCATION_MARK: &str = "\n[truncated: the tool's result was longer]";

/// A call the model made, as it made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCall {
    pub name: String,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: String,
}

/// What the model is fed back for one call: the tool's answer, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerToolResult {
    pub content: String,
    /// The tool failed, timed out, or was called with unusable arguments.
    pub is_error: bool,
    /// `content` was cut to [`MAX_RESULT_CHARS`] (and ends with [`TRUNCATION_MARK`]).
    pub truncated: bool,
}

/// One offered tool and the server that runs it.
#[derive(Debug, Clone)]
struct Offered {
    tool: RemoteTool,
    server: String,
    endpoint: Arc<Endpoint>,
}

/// The tools of the servers one model links, in link order; a name two servers share is
/// offered from the first.
#[derive(Clone)]
pub struct Toolbox {
    offered: Vec<Offered>,
    client: Arc<dyn McpClient>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.offered.iter().map(|o| &o.tool.name))
            .finish()
    }
}

impl Toolbox {
    pub(crate) fn new(client: Arc<dyn McpClient>) -> Self {
        Self {
            offered: Vec::new(),
            client,
        }
    }

    /// Offers `tools` of the server named `server`, skipping names already offered.
    pub(crate) fn add(&mut self, server: &str, endpoint: Endpoint, tools: Vec<RemoteTool>) {
        let endpoint = Arc::new(endpoint);
        for tool in tools {
            if self.offers(&tool.name) {
                tracing::warn!(tool = %tool.name, server, "two linked MCP servers offer this tool; the first is used");
                continue;
            }
            self.offered.push(Offered {
                tool,
                server: server.to_owned(),
                endpoint: endpoint.clone(),
            });
        }
    }

    pub fn is_empty(&self) -> bool {
        self.offered.is_empty()
    }

    pub fn tools(&self) -> impl Iterator<Item = &RemoteTool> {
        self.offered.iter().map(|o| &o.tool)
    }

    pub fn offers(&self, name: &str) -> bool {
        self.offered.iter().any(|o| o.tool.name == name)
    }

    /// Runs the call; every failure (unknown tool, arguments that are not a JSON object, an
    /// error, a timeout) is a result the model reads, never an error of the completion.
    pub async fn run(&self, call: &ServerCall) -> ServerToolResult {
        let Some(offered) = self.offered.iter().find(|o| o.tool.name == call.name) else {
            return failure(format!("no tool named `{}` is offered", call.name));
        };
        let arguments = if call.arguments.trim().is_empty() {
            serde_json::Map::new()
        } else {
            match serde_json::from_str::<serde_json::Value>(&call.arguments) {
                Ok(serde_json::Value::Object(arguments)) => arguments,
                Ok(_) => return failure("the arguments must be a JSON object".into()),
                Err(error) => {
                    return failure(format!("the arguments are not valid JSON: {error}"));
                }
            }
        };
        let span = tracing::info_span!(
            "mcp tool call",
            "otel.name" = format!("execute_tool {}", call.name).as_str(),
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = call.name.as_str(),
            "mcp.server" = offered.server.as_str(),
        );
        let outcome = tracing::Instrument::instrument(
            self.client
                .call_tool(&offered.endpoint, &call.name, arguments),
            span,
        )
        .await;
        match outcome {
            Ok(output) => capped(output.text, output.is_error),
            Err(error @ CallError::Timeout(_)) => failure(error.to_string()),
            Err(error) => {
                tracing::warn!(tool = %call.name, server = %offered.server, %error, "an MCP tool call failed");
                failure(error.to_string())
            }
        }
    }
}

fn failure(message: String) -> ServerToolResult {
    capped(message, true)
}

fn capped(content: String, is_error: bool) -> ServerToolResult {
    match content.char_indices().nth(MAX_RESULT_CHARS) {
        None => ServerToolResult {
            content,
            is_error,
            truncated: false,
        },
        Some((cut, _)) => ServerToolResult {
            content: format!("{}{TRUNCATION_MARK}", &content[..cut]),
            is_error,
            truncated: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{MockMcpClient, ToolOutput};

    fn endpoint() -> Endpoint {
        Endpoint {
            url: "https://tools.example.com/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            timeout: Duration::from_secs(1),
        }
    }

    fn tool(name: &str) -> RemoteTool {
        RemoteTool {
            name: name.into(),
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    fn call(name: &str, arguments: &str) -> ServerCall {
        ServerCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[tokio::test]
    async fn results_are_capped_and_failures_are_results() {
        let mut client = MockMcpClient::new();
        client
            .expect_call_tool()
            .withf(|_, name, _| name == "long")
            .returning(|_, _, _| {
                Ok(ToolOutput {
                    text: "é".repeat(MAX_RESULT_CHARS + 10),
                    is_error: false,
                })
            });
        client
            .expect_call_tool()
            .withf(|_, name, _| name == "slow")
            .returning(|endpoint, _, _| Err(CallError::Timeout(endpoint.timeout)));
        let mut toolbox = Toolbox::new(Arc::new(client));
        toolbox.add("a", endpoint(), vec![tool("long"), tool("slow")]);
        toolbox.add("b", endpoint(), vec![tool("long")]);
        assert_eq!(toolbox.tools().count(), 2);

        let long = toolbox.run(&call("long", "{}")).await;
        assert!(long.truncated && !long.is_error);
        assert!(long.content.ends_with(TRUNCATION_MARK));
        assert_eq!(
            long.content.chars().count(),
            MAX_RESULT_CHARS + TRUNCATION_MARK.chars().count()
        );

        let slow = toolbox.run(&call("slow", "")).await;
        assert!(slow.is_error);
        assert!(slow.content.contains("did not answer"), "{}", slow.content);

        let bad = toolbox.run(&call("long", "[1]")).await;
        assert!(bad.is_error && bad.content.contains("JSON object"));
        let unknown = toolbox.run(&call("nope", "{}")).await;
        assert!(unknown.is_error && unknown.content.contains("nope"));
    }

    #[test]
    fn debug_output_never_shows_header_values() {
        let shown = format!("{:?}", endpoint());
        assert!(shown.contains("Authorization") && !shown.contains("s3cret"));
    }
}
