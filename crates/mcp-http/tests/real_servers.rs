//! The client against real MCP servers: the Python SDK's (tests/mcp/tool_server.py) and the
//! reference `@modelcontextprotocol/server-everything` (npm), both over Streamable HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod servers;

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use serde_json::{Map, Value, json};
use tessera_kernel::TargetPolicy;
use tessera_mcp::{CallError, McpClient, ToolOutput};
use tessera_mcp_http::HttpMcpClient;

use servers::{endpoint, everything_server, free_port, open_client, python_server};

const TIMEOUT: Duration = Duration::from_secs(20);

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    }
}

fn text(output: &str) -> ToolOutput {
    ToolOutput {
        text: output.to_owned(),
        is_error: false,
    }
}

#[tokio::test]
async fn lists_every_page_of_the_python_servers_tools() {
    let server = python_server(2);
    let tools = open_client()
        .list_tools(&endpoint(&server.url(), TIMEOUT))
        .await
        .unwrap();
    let names: BTreeSet<_> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "add",
            "bearer",
            "fail",
            "hang",
            "protocol_error",
            "slow",
            "weather",
            "whoami"
        ]),
        "four pages of at most two"
    );
    let add = tools.iter().find(|tool| tool.name == "add").unwrap();
    assert_eq!(add.description.as_deref(), Some("Adds two integers."));
    assert_eq!(add.input_schema["type"], "object");
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
}

#[tokio::test]
async fn calls_the_python_servers_tools() {
    let server = python_server(0);
    let client = open_client();
    let endpoint = endpoint(&server.url(), TIMEOUT);
    assert_eq!(
        client
            .call_tool(&endpoint, "add", args(json!({"a": 2, "b": 40})))
            .await
            .unwrap(),
        text("42")
    );
    assert_eq!(
        client
            .call_tool(&endpoint, "weather", args(json!({"city": "Lisbon"})))
            .await
            .unwrap(),
        text("It is 21 degrees and sunny in Lisbon.")
    );
}

#[tokio::test]
async fn sends_the_endpoints_headers_authorization_included() {
    let server = python_server(0);
    let client = open_client();
    let mut endpoint = endpoint(&server.url(), TIMEOUT);
    endpoint.headers = vec![
        ("X-Tenant-Key".into(), "tenant-42".into()),
        ("Authorization".into(), "Bearer s3cret-token".into()),
    ];
    assert_eq!(
        client
            .call_tool(&endpoint, "whoami", Map::new())
            .await
            .unwrap(),
        text("tenant-42")
    );
    assert_eq!(
        client
            .call_tool(&endpoint, "bearer", Map::new())
            .await
            .unwrap(),
        text("Bearer s3cret-token")
    );
}

#[tokio::test]
async fn a_tool_that_raises_is_an_error_result() {
    let server = python_server(0);
    let output = open_client()
        .call_tool(&endpoint(&server.url(), TIMEOUT), "fail", Map::new())
        .await
        .unwrap();
    assert!(output.is_error, "{output:?}");
    assert!(
        output.text.contains("the tool failed on purpose"),
        "{output:?}"
    );
}

#[tokio::test]
async fn a_call_past_the_timeout_is_a_timeout() {
    let server = python_server(0);
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = open_client()
        .call_tool(
            &endpoint(&server.url(), timeout),
            "slow",
            args(json!({"seconds": 5})),
        )
        .await
        .unwrap_err();
    assert_eq!(error, CallError::Timeout(timeout));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "gave up after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_json_rpc_error_is_a_protocol_error() {
    let server = python_server(0);
    let error = open_client()
        .call_tool(
            &endpoint(&server.url(), TIMEOUT),
            "protocol_error",
            Map::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, CallError::Protocol(ref m) if m.contains("a JSON-RPC error on purpose")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_unknown_tool_is_the_servers_answer() {
    let server = python_server(0);
    let output = open_client()
        .call_tool(
            &endpoint(&server.url(), TIMEOUT),
            "no_such_tool",
            Map::new(),
        )
        .await
        .unwrap();
    assert!(output.is_error, "{output:?}");
    assert!(output.text.contains("no_such_tool"), "{output:?}");
}

#[tokio::test]
async fn the_default_policy_refuses_loopback_servers() {
    let server = python_server(0);
    servers::install_crypto_provider();
    let client = HttpMcpClient::new(TargetPolicy::default()).unwrap();
    // Written as an address: refused before any request.
    let error = client
        .list_tools(&endpoint(&server.url(), TIMEOUT))
        .await
        .unwrap_err();
    assert!(matches!(error, CallError::Refused(_)), "{error:?}");
    // A name resolving only to loopback: refused by the resolver.
    let by_name = format!("http://localhost:{}/mcp", server.port);
    let error = client
        .list_tools(&endpoint(&by_name, TIMEOUT))
        .await
        .unwrap_err();
    assert!(
        matches!(error, CallError::Refused(ref m) if m.contains("localhost")),
        "{error:?}"
    );
    // The same server is reachable when the policy allows private targets.
    assert!(
        open_client()
            .list_tools(&endpoint(&by_name, TIMEOUT))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let error = open_client()
        .list_tools(&endpoint(&url, TIMEOUT))
        .await
        .unwrap_err();
    assert!(matches!(error, CallError::Unreachable(_)), "{error:?}");
}

#[tokio::test]
async fn an_http_error_is_unreachable() {
    let server = python_server(0);
    let url = format!("http://127.0.0.1:{}/not-mcp", server.port);
    let error = open_client()
        .list_tools(&endpoint(&url, TIMEOUT))
        .await
        .unwrap_err();
    assert!(
        matches!(error, CallError::Unreachable(ref m) if m.contains("404")),
        "{error:?}"
    );
}

#[tokio::test]
async fn works_with_the_reference_everything_server() {
    let server = everything_server();
    let client = open_client();
    let endpoint = endpoint(&server.url(), TIMEOUT);
    let tools = client.list_tools(&endpoint).await.unwrap();
    let names: BTreeSet<_> = tools.iter().map(|tool| tool.name.as_str()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
    ] {
        assert!(
            names.contains(expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");

    assert_eq!(
        client
            .call_tool(&endpoint, "echo", args(json!({"message": "hello, MCP"})))
            .await
            .unwrap(),
        text("Echo: hello, MCP")
    );
    assert_eq!(
        client
            .call_tool(&endpoint, "get-tiny-image", Map::new())
            .await
            .unwrap(),
        text(
            "Here's the image you requested:\n[image image/png]\nThe image above is the MCP logo."
        )
    );
    let weather = client
        .call_tool(
            &endpoint,
            "get-structured-content",
            args(json!({"location": "Chicago"})),
        )
        .await
        .unwrap();
    assert!(!weather.is_error);
    let parsed: Value = serde_json::from_str(&weather.text).unwrap();
    assert!(parsed["temperature"].is_number(), "{weather:?}");
}
