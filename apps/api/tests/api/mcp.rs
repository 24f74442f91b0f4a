//! MCP through the real HTTP stack: MCP servers as organization resources (validation,
//! scopes, tenant scoping, secrets that never come back), and tools that Tessera runs during
//! a chat on the embedded SmolLM2 (constrained decoding makes the call): a real MCP server
//! written with the official Python SDK answers, the chat stores the call, the result and
//! the answer, in JSON and both stream formats (the AI SDK one read by the real `ai`
//! package); a tool that fails or hangs past its timeout becomes a result the model reads;
//! a client that disconnects mid-step still gets the whole turn stored. A second real
//! server, `@modelcontextprotocol/server-everything` (npm), lists and serves its tools.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, ai_sdk_check, chunks, settled},
    support::{TestApp, locs, ok, problem},
};

const ADMIN: &str = "org:admin";
const SECRET: &str = "tenant-secret-42";

/// A real MCP server on loopback, killed on drop.
pub struct McpServerProcess {
    child: Child,
    pub url: String,
}

impl Drop for McpServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

async fn wait_for(port: u16, child: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before listening: {status}");
        }
        assert!(Instant::now() < deadline, "{what} did not listen in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `tests/mcp/tool_server.py`, on the official Python SDK (`TESSERA_MCP_PYTHON`, made by
/// `just test`).
pub async fn python_tool_server() -> McpServerProcess {
    let python = std::env::var("TESSERA_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
    let port = free_port();
    let mut child = Command::new(&python)
        .arg(repo("tests/mcp/tool_server.py"))
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{python} runs tests/mcp/tool_server.py ({e}); run `just test`")
        });
    wait_for(port, &mut child, "tool_server.py").await;
    McpServerProcess {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

/// `@modelcontextprotocol/server-everything` (npm, `tests/mcp`), over Streamable HTTP.
pub async fn everything_server() -> McpServerProcess {
    let port = free_port();
    let mut child = Command::new("node")
        .arg(repo(
            "tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        ))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs server-everything (`just test` installs tests/mcp)");
    wait_for(port, &mut child, "server-everything").await;
    McpServerProcess {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

async fn app_with_tools(backend: Backend) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let models = crate::chats::model_dir();
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.local_dir = Some(models);
        settings.rate_limit.enabled = false;
        // The MCP servers of these tests listen on loopback.
        settings.mcp.allow_private_targets = true;
    })
    .await;
    (app, dir)
}

async fn register(app: &TestApp, token: &str, body: Value) -> Value {
    ok(
        app.call_json(Method::POST, "/v1/mcp-servers", token, &body)
            .await,
        201,
    )
    .await
}

/// A user model on the embedded engine with `server` linked.
async fn model_with(app: &TestApp, token: &str, server: &str) -> String {
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            token,
            &json!({"parentModelId": LOCAL, "displayName": "Tool user"}),
        )
        .await,
        201,
    )
    .await;
    let model = model["id"].as_str().unwrap().to_owned();
    let link = ok(
        app.call_json(
            Method::POST,
            &format!("/v1/models/{model}/tools"),
            token,
            &json!({"mcpServerId": server}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(link["mcpServerId"], json!(server));
    model
}

fn ask(model: &str, text: &str) -> Value {
    json!({
        "modelId": model,
        "messages": [{"role": "user", "content": text}],
        "maxTokens": 48,
        "temperature": 0
    })
}

fn roles(record: &Value) -> Vec<String> {
    record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

/// The stored turn of a chat whose model called `tool` once: the call, its result (which
/// `result` checks) and a text answer.
fn assert_tool_turn(record: &Value, tool: &str, result: impl Fn(&str) -> bool) {
    assert_eq!(
        roles(record),
        ["user", "assistant", "tool", "assistant"],
        "{record}"
    );
    let messages = &record["messages"];
    let call = &messages[1]["toolCalls"][0];
    assert_eq!(call["function"]["name"], json!(tool), "{record}");
    assert_eq!(messages[2]["toolCallId"], call["id"]);
    let content = messages[2]["content"].as_str().unwrap();
    assert!(result(content), "tool result: {content}");
    assert_eq!(messages[3]["toolCalls"], json!([]), "{record}");
}

async fn mcp_servers_are_organization_resources(backend: Backend) {
    let tools = python_tool_server().await;
    let (app, _dir) = app_with_tools(backend).await;
    let admin = app.caller_token(ADMIN).await;

    let server = register(
        &app,
        &admin,
        json!({
            "name": "Test tools",
            "url": tools.url,
            "headers": {"X-Tenant-Key": SECRET},
            "timeoutMs": 5000
        }),
    )
    .await;
    assert_eq!(server["headerNames"], json!(["X-Tenant-Key"]));
    assert_eq!(server["timeoutMs"], json!(5000));
    assert!(!server.to_string().contains(SECRET));
    let id = server["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/mcp-servers/{id}");

    // Tools, listed from the server (then from the cache), the allow-list applied.
    let listed = ok(
        app.call(Method::GET, &format!("{path}/tools"), &admin)
            .await,
        200,
    )
    .await;
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for expected in ["add", "weather", "slow", "fail", "whoami"] {
        assert!(names.contains(&expected), "{listed}");
    }
    assert!(listed["items"][0]["inputSchema"].is_object());
    let changed = ok(
        app.call_json(
            Method::PATCH,
            &path,
            &admin,
            &json!({"name": "Renamed", "allowedTools": ["weather", "whoami"]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(changed["name"], json!("Renamed"));
    assert_eq!(changed["headerNames"], json!(["X-Tenant-Key"]));
    let allowed = ok(
        app.call(Method::GET, &format!("{path}/tools?refresh=true"), &admin)
            .await,
        200,
    )
    .await;
    assert_eq!(allowed["items"].as_array().unwrap().len(), 2, "{allowed}");

    // Reads: models:read may list and read; changing needs org:admin.
    // Another organization's reader.
    let reader = app.caller_token("models:read").await;
    let page = ok(app.call(Method::GET, "/v1/mcp-servers", &admin).await, 200).await;
    assert_eq!(page["items"][0]["id"], json!(id));
    assert_eq!(page["totalCount"], json!(1));
    assert!(!page.to_string().contains(SECRET));
    // It does not see this organization's server.
    problem(
        app.call(Method::GET, &path, &reader).await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call_json(
            Method::POST,
            "/v1/mcp-servers",
            &reader,
            &json!({"name": "x", "url": tools.url}),
        )
        .await,
        403,
        "insufficient_scope",
    )
    .await;
    problem(
        app.call_json(Method::PATCH, &path, &reader, &json!({"name": "x"}))
            .await,
        403,
        "insufficient_scope",
    )
    .await;

    // Bad input is located.
    let invalid = problem(
        app.call_json(
            Method::POST,
            "/v1/mcp-servers",
            &admin,
            &json!({
                "name": "",
                "url": "ftp://example.com/mcp",
                "headers": {"Host": "x", "Bad Name": "y"},
                "timeoutMs": 5
            }),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    let locs = locs(&invalid);
    for loc in [
        "body.name",
        "body.url",
        "body.headers.Host",
        "body.headers.Bad Name",
        "body.timeoutMs",
    ] {
        assert!(locs.iter().any(|l| l == loc), "{loc} in {locs:?}");
    }
    problem(
        app.call(Method::GET, "/v1/mcp-servers/mcp_nope", &admin)
            .await,
        404,
        "not_found",
    )
    .await;

    // Deleting it unlinks it from models.
    let model = model_with(&app, &admin, &id).await;
    ok(app.call(Method::DELETE, &path, &admin).await, 204).await;
    problem(app.call(Method::GET, &path, &admin).await, 404, "not_found").await;
    let links = ok(
        app.call(Method::GET, &format!("/v1/models/{model}/tools"), &admin)
            .await,
        200,
    )
    .await;
    assert_eq!(links["items"], json!([]));
}

async fn the_model_calls_an_mcp_tool_that_tessera_runs(backend: Backend) {
    let tools = python_tool_server().await;
    let (app, _dir) = app_with_tools(backend).await;
    let admin = app.caller_token("org:admin").await;
    let server = register(
        &app,
        &admin,
        json!({
            "name": "Tenant tools",
            "url": tools.url,
            "headers": {"X-Tenant-Key": SECRET},
            "allowedTools": ["whoami"]
        }),
    )
    .await;
    let model = model_with(&app, &admin, server["id"].as_str().unwrap()).await;

    // JSON: the call, the result (the tool saw the sealed header), the answer, stored.
    let answer = ok(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask(&model, "Who am I?"))
            .await,
        201,
    )
    .await;
    // The answer after the tool's result is text (it may run to `maxTokens`).
    assert_ne!(answer["finishReason"], json!("tool_calls"), "{answer}");
    let chat = answer["id"].as_str().unwrap().to_owned();
    let record = settled(&app, &admin, &chat).await;
    assert_tool_turn(&record, "whoami", |content| content == SECRET);
    // Usage: one record per model call, the tool step's on its message.
    assert_eq!(record["messages"][1]["finishReason"], json!("tool_calls"));
    assert!(record["messages"][1]["usage"]["outputTokens"].as_u64() > Some(0));
    let usage = ok(app.call(Method::GET, "/v1/usage", &admin).await, 200).await;
    assert_eq!(usage["totals"]["requests"], json!(2), "{usage}");

    // The default stream carries the server call, its result and the next step.
    let mut body = ask(&model, "Who am I?");
    body["stream"] = json!(true);
    let text = app
        .call_json(Method::POST, "/v1/chats", &admin, &body)
        .await
        .text()
        .await
        .unwrap();
    let events = chunks(&text);
    assert!(
        events
            .iter()
            .any(|c| c["toolCall"]["server"] == json!(true)
                && c["toolCall"]["name"] == json!("whoami")),
        "{text}"
    );
    let result = events
        .iter()
        .find(|c| c.get("toolResult").is_some())
        .expect("a toolResult chunk");
    assert_eq!(result["toolResult"]["name"], json!("whoami"));
    assert_eq!(result["toolResult"]["isError"], json!(false));
    assert!(events.iter().any(|c| c["step"] == json!(2)), "{text}");
    let last = events.last().unwrap();
    assert_eq!(last["finished"], json!(true));
    assert_ne!(last["finishReason"], json!("tool_calls"));
    let streamed_chat = last["id"].as_str().unwrap();
    assert_tool_turn(&settled(&app, &admin, streamed_chat).await, "whoami", |c| {
        c == SECRET
    });

    // The AI SDK stream, read by the real `ai` package: a dynamic tool part with its output.
    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&admin)
        .header("X-Stream-Format", "ai-sdk")
        .json(&body)
        .send()
        .await
        .unwrap();
    let parsed = ai_sdk_check(&response.text().await.unwrap()).await;
    let types: Vec<&str> = parsed["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    for expected in [
        "tool-input-start",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "start-step",
    ] {
        assert!(types.contains(&expected), "{expected} in {types:?}");
    }
    let part = parsed["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|part| part["type"] == json!("dynamic-tool"))
        .unwrap_or_else(|| panic!("a dynamic-tool part: {parsed}"));
    assert_eq!(part["toolName"], json!("whoami"));
    assert_eq!(part["state"], json!("output-available"));
    assert_eq!(part["output"], json!(SECRET));
}

async fn failing_and_hanging_tools_become_results(backend: Backend) {
    let tools = python_tool_server().await;
    let (app, _dir) = app_with_tools(backend).await;
    let admin = app.caller_token("org:admin").await;
    let failing = register(
        &app,
        &admin,
        json!({"name": "Failing", "url": tools.url, "allowedTools": ["fail"]}),
    )
    .await;
    let model = model_with(&app, &admin, failing["id"].as_str().unwrap()).await;
    let answer = ok(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask(&model, "Try it."))
            .await,
        201,
    )
    .await;
    let record = settled(&app, &admin, answer["id"].as_str().unwrap()).await;
    assert_tool_turn(&record, "fail", |c| {
        c.contains("the tool failed on purpose")
    });

    // A tool that hangs past its timeout, while the client has gone: the turn is stored.
    let hanging = register(
        &app,
        &admin,
        json!({"name": "Hanging", "url": tools.url, "allowedTools": ["hang"], "timeoutMs": 1500}),
    )
    .await;
    let model = model_with(&app, &admin, hanging["id"].as_str().unwrap()).await;
    let mut body = ask(&model, "Wait for it.");
    body["stream"] = json!(true);
    let mut response = app
        .call_json(Method::POST, "/v1/chats", &admin, &body)
        .await;
    let first = crate::support::first_event(&mut response).await;
    let chunk: Value = serde_json::from_str(
        first
            .trim()
            .strip_prefix("data: ")
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap(),
    )
    .unwrap();
    let chat = chunk["id"].as_str().unwrap().to_owned();
    drop(response);
    let record = settled(&app, &admin, &chat).await;
    assert_eq!(record["status"], Value::Null, "{record}");
    assert_tool_turn(&record, "hang", |c| c.contains("did not answer"));
}

async fn server_everything_serves_its_tools_through_tessera(backend: Backend) {
    let everything = everything_server().await;
    let (app, _dir) = app_with_tools(backend).await;
    let admin = app.caller_token("org:admin").await;
    let server = register(
        &app,
        &admin,
        json!({"name": "Everything", "url": everything.url, "allowedTools": ["echo"]}),
    )
    .await;
    let id = server["id"].as_str().unwrap();
    let listed = ok(
        app.call(Method::GET, &format!("/v1/mcp-servers/{id}/tools"), &admin)
            .await,
        200,
    )
    .await;
    assert_eq!(listed["items"][0]["name"], json!("echo"), "{listed}");
    let model = model_with(&app, &admin, id).await;
    let answer = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &admin,
            &ask(&model, "Say hello."),
        )
        .await,
        201,
    )
    .await;
    let record = settled(&app, &admin, answer["id"].as_str().unwrap()).await;
    assert_tool_turn(&record, "echo", |c| c.starts_with("Echo:"));
}

tessera_store::on_both_databases!(
    mcp_servers_are_organization_resources,
    the_model_calls_an_mcp_tool_that_tessera_runs,
);

#[tokio::test]
async fn failing_and_hanging_tools_become_results_on_sqlite() {
    failing_and_hanging_tools_become_results(Backend::Sqlite).await;
}

#[tokio::test]
async fn server_everything_serves_its_tools_through_tessera_on_sqlite() {
    server_everything_serves_its_tools_through_tessera(Backend::Sqlite).await;
}
