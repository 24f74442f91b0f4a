//! The Anthropic dialect (`/anthropic/v1`) through the real HTTP stack with the embedded
//! models: the same answer, usage and RAG sources as `/v1/chats` for the same request,
//! keeping no chat; Anthropic's event stream; a forced tool call and its result; models;
//! keys in `x-api-key`; Claude Code's own first request; and every failure in Anthropic's
//! error shape with Anthropic's statuses. The official clients' own checks are in `anthropic_clients`.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, local_app, model_dir},
    hardening3_tools::ToolUpstream,
    openai::{api_key, foreign_model, helpdesk_model, source_ids},
    processing::knowledge_app_with,
    support::{TestApp, ok},
};

const MESSAGES: &str = "/anthropic/v1/messages";
const QUESTION: &str = "How do I reset my password?";

/// A request to the app with the key in `x-api-key`, as Anthropic's clients send it.
async fn with_api_key(
    app: &TestApp,
    method: Method,
    path: &str,
    key: &str,
    body: Option<&Value>,
) -> reqwest::Response {
    let mut request = app
        .client
        .request(method, app.url(path))
        .header("x-api-key", key)
        .header("anthropic-version", "2023-06-01");
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.unwrap()
}

/// The body of an Anthropic error answer, checking its status and shape.
async fn anthropic_error(response: reqwest::Response, status: u16) -> Value {
    assert_eq!(response.status().as_u16(), status);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    let error = &body["error"];
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(error["type"].is_string(), "{body}");
    error.clone()
}

/// The events of an Anthropic stream as `(name, data)`, checking each names its type.
pub fn anthropic_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|frame| frame.starts_with("event: "))
        .map(|frame| {
            let mut lines = frame.lines();
            let name = lines
                .next()
                .unwrap()
                .trim_start_matches("event: ")
                .to_owned();
            let data: Value =
                serde_json::from_str(lines.next().unwrap().trim_start_matches("data: ")).unwrap();
            assert_eq!(data["type"], json!(name), "{frame}");
            (name, data)
        })
        .collect()
}

/// A user model with a system prompt and a dataset: the same request through `/v1/chats`
/// and `/anthropic/v1/messages` gives the same answer, usage and sources, and the dialect
/// keeps no chat.
#[tokio::test]
async fn one_pipeline_in_anthropics_shape() {
    let chat_model = model_dir();
    let app = knowledge_app_with(Backend::Sqlite, |settings| {
        settings.models.local_dir = Some(chat_model);
    })
    .await;
    let token = app
        .caller_token("files:read files:write datasets:read datasets:write models:read models:write chats:invoke chats:read usage:read org:admin")
        .await;
    let model = helpdesk_model(&app, &token).await;
    let native = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": model, "messages": [{"role": "user", "content": QUESTION}],
                    "maxTokens": 10, "temperature": 0}),
        )
        .await,
        201,
    )
    .await;
    let (_, key) = api_key(
        &app,
        &token,
        json!({"name": "claude", "scopes": ["models:read", "chats:invoke"]}),
    )
    .await;
    let request = json!({
        "model": model,
        "max_tokens": 10,
        "temperature": 0,
        "messages": [{"role": "user", "content": [{"type": "text", "text": QUESTION, "cache_control": {"type": "ephemeral"}}]}],
        "metadata": {"user_id": "user-1"}
    });
    let message = ok(
        with_api_key(&app, Method::POST, MESSAGES, &key, Some(&request)).await,
        200,
    )
    .await;
    let answer = &native["message"];
    assert!(
        message["id"].as_str().unwrap().starts_with("msg_"),
        "{message}"
    );
    assert_eq!(
        (message["type"].as_str(), message["role"].as_str()),
        (Some("message"), Some("assistant"))
    );
    assert_eq!(message["model"], json!(model));
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": answer["content"]}]),
        "{message}"
    );
    assert_eq!(message["stop_reason"], "max_tokens", "{message}");
    assert_eq!(message["stop_sequence"], Value::Null);
    let usage = &message["usage"];
    assert_eq!(
        usage["input_tokens"].as_u64().unwrap()
            + usage["cache_read_input_tokens"].as_u64().unwrap(),
        native["usage"]["inputTokens"].as_u64().unwrap(),
        "{message}"
    );
    assert_eq!(usage["output_tokens"], native["usage"]["outputTokens"]);
    let sources = source_ids;
    assert!(!sources(&answer["sources"]).is_empty(), "{native}");
    assert_eq!(sources(&message["sources"]), sources(&answer["sources"]));

    // Streamed: Anthropic's sequence, the same text.
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let response = with_api_key(&app, Method::POST, MESSAGES, &key, Some(&streamed)).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = anthropic_events(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        &names[..3],
        ["message_start", "ping", "content_block_start"],
        "{names:?}"
    );
    assert_eq!(
        &names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"],
        "{names:?}"
    );
    assert!(
        names[3..names.len() - 3]
            .iter()
            .all(|name| *name == "content_block_delta"),
        "{names:?}"
    );
    let text: String = events
        .iter()
        .filter(|(name, _)| name == "content_block_delta")
        .map(|(_, data)| data["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, answer["content"].as_str().unwrap());
    let (_, delta) = &events[names.len() - 2];
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens", "{delta}");
    assert_eq!(
        delta["usage"]["output_tokens"], native["usage"]["outputTokens"],
        "{delta}"
    );
    assert_eq!(sources(&delta["sources"]), sources(&answer["sources"]));

    // Stateless: the one chat is `/v1`'s; both answers are billed.
    let chats = ok(app.call(Method::GET, "/v1/chats", &token).await, 200).await;
    assert_eq!(chats["items"].as_array().unwrap().len(), 1, "{chats}");
    let report = ok(app.call(Method::GET, "/v1/usage", &token).await, 200).await;
    assert_eq!(report["totals"]["requests"], json!(3), "{report}");
    app.stop().await;
}

/// A forced call of the request's tool, then its result sent back: the model answers.
#[tokio::test]
async fn a_tool_call_and_its_result() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let token = app.caller_token("chats:invoke").await;
    let tools = json!([{
        "name": "get_weather",
        "description": "The weather in a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    }]);
    let question = json!({"role": "user", "content": "What is the weather in Paris?"});
    let first = ok(
        app.call_json(
            Method::POST,
            MESSAGES,
            &token,
            &json!({"model": LOCAL, "max_tokens": 40, "messages": [question],
                    "tools": tools, "tool_choice": {"type": "tool", "name": "get_weather"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(first["stop_reason"], "tool_use", "{first}");
    let call = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "tool_use")
        .unwrap_or_else(|| panic!("no tool_use block: {first}"))
        .clone();
    assert_eq!(call["name"], "get_weather");
    assert!(call["input"]["city"].is_string(), "{call}");
    let second = ok(
        app.call_json(
            Method::POST,
            MESSAGES,
            &token,
            &json!({"model": LOCAL, "max_tokens": 12, "tools": tools, "messages": [
                question,
                {"role": "assistant", "content": first["content"]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call["id"], "content": "Sunny, 21 C"}
                ]}
            ]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(second["content"][0]["type"], "text", "{second}");
    assert!(
        !second["content"][0]["text"].as_str().unwrap().is_empty(),
        "{second}"
    );

    // Streamed, the call is a `tool_use` block of `input_json_delta`s.
    let response = app
        .call_json(
            Method::POST,
            MESSAGES,
            &token,
            &json!({"model": LOCAL, "max_tokens": 40, "messages": [question], "stream": true,
                    "tools": tools, "tool_choice": {"type": "any"}}),
        )
        .await;
    let events = anthropic_events(&response.text().await.unwrap());
    let start = events
        .iter()
        .find(|(name, data)| {
            name == "content_block_start" && data["content_block"]["type"] == "tool_use"
        })
        .unwrap_or_else(|| panic!("no tool_use block: {events:?}"));
    let index = &start.1["index"];
    let input: String = events
        .iter()
        .filter(|(name, data)| name == "content_block_delta" && &data["index"] == index)
        .map(|(_, data)| data["delta"]["partial_json"].as_str().unwrap())
        .collect();
    let input: Value = serde_json::from_str(&input).unwrap();
    assert!(input["city"].is_string(), "{input}");
    let delta = events
        .iter()
        .find(|(name, _)| name == "message_delta")
        .unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
    app.stop().await;
}

/// Counting a prompt runs no model and stores nothing: the count grows with the messages
/// and the tools, a user model's system prompt counts, and the rules of a message apply.
#[tokio::test]
async fn count_tokens_without_running_the_model() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let token = app
        .caller_token("models:write chats:invoke chats:read usage:read")
        .await;
    let count = |body: Value| {
        let app = &app;
        let token = &token;
        async move {
            ok(
                app.call_json(
                    Method::POST,
                    "/anthropic/v1/messages/count_tokens",
                    token,
                    &body,
                )
                .await,
                200,
            )
            .await["input_tokens"]
                .as_u64()
                .unwrap()
        }
    };
    let hi = json!([{"role": "user", "content": "Hi"}]);
    let plain = count(json!({"model": LOCAL, "messages": hi})).await;
    assert!(plain > 0);
    let longer = count(
        json!({"model": LOCAL, "messages": [{"role": "user", "content": QUESTION.repeat(20)}]}),
    )
    .await;
    assert!(longer > plain + 100, "{longer} against {plain}");
    let with_system = count(json!({"model": LOCAL, "messages": hi, "system": "You answer questions about the account, briefly and politely."})).await;
    assert!(with_system > plain, "{with_system} against {plain}");
    let with_tools = count(json!({"model": LOCAL, "messages": hi, "tools": [{"name": "get_weather", "description": "The weather in a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]})).await;
    assert!(with_tools > plain, "{with_tools} against {plain}");
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &token,
            &json!({"parentModelId": LOCAL, "displayName": "Helpdesk",
            "systemPrompt": "You answer questions about the account, briefly and politely."}),
        )
        .await,
        201,
    )
    .await;
    let own = count(json!({"model": model["id"], "messages": hi})).await;
    assert!(
        own > plain,
        "the model's system prompt counts: {own} against {plain}"
    );
    // Nothing ran, nothing was stored or billed.
    let report = ok(app.call(Method::GET, "/v1/usage", &token).await, 200).await;
    assert_eq!(report["totals"]["requests"], json!(0), "{report}");
    let chats = ok(app.call(Method::GET, "/v1/chats", &token).await, 200).await;
    assert!(chats["items"].as_array().unwrap().is_empty(), "{chats}");
    // The rules of a message: an unknown model, an unsupported parameter.
    let path = "/anthropic/v1/messages/count_tokens";
    let error = anthropic_error(
        app.call_json(
            Method::POST,
            path,
            &token,
            &json!({"model": "claude-none", "messages": hi}),
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["type"], "not_found_error");
    let error = anthropic_error(
        app.call_json(
            Method::POST,
            path,
            &token,
            &json!({"model": LOCAL, "messages": hi, "max_tokens": 5}),
        )
        .await,
        400,
    )
    .await;
    assert!(
        error["message"].as_str().unwrap().contains("max_tokens"),
        "{error}"
    );
    app.stop().await;
}

/// A remote model large enough for Claude Code's prompt, served by the loopback
/// OpenAI-compatible upstream (no reasoning: Claude Code's adaptive thinking answers
/// without).
pub const LARGE: &str = "stub/large";

/// The upstream's catalog with [`LARGE`].
pub fn large_catalog(upstream: &ToolUpstream) -> String {
    format!(
        r#"{}
[[models]]
id = "{LARGE}"
display_name = "A remote model with a large window"
provider = "stub"
model_name = "stub-large"
context_window = 200000
max_tokens_per_request = 64000
capabilities = {{ streaming = true, tools = true, json_schema = true }}
"#,
        upstream.catalog()
    )
}

/// Claude Code's first request as it sent it (`tests/anthropic-clients/README.md` says where
/// it came from): answered through a remote upstream, with its system blocks, its tools (and
/// their `defer_loading`), adaptive thinking, `context_management` and `output_config` taken;
/// on the embedded model refused with a clear 400 naming `max_tokens` (its limit is 1,024,
/// Claude Code asks for 32,000).
#[tokio::test]
async fn claude_codes_first_request_is_answered() {
    let upstream = ToolUpstream::start().await;
    let (app, _dir) = local_app(Backend::Sqlite, Some(large_catalog(&upstream))).await;
    let admin = app.caller_token("org:admin models:read chats:invoke").await;
    let (_, key) = api_key(
        &app,
        &admin,
        json!({"name": "claude code", "scopes": ["models:read", "chats:invoke"]}),
    )
    .await;
    let captured: Value = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/anthropic-clients/claude-code-first-request.json"
    )))
    .unwrap();
    let send = |model: &str| {
        let mut request = captured.clone();
        request["model"] = json!(model);
        app.client
            .post(app.url("/anthropic/v1/messages?beta=true"))
            .header("x-api-key", &key)
            .header("anthropic-version", "2023-06-01")
            .header("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27")
            .header("x-app", "cli")
            .json(&request)
            .send()
    };
    let response = send(LARGE).await.unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    let events = anthropic_events(&body);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        (names.first(), names.last()),
        (Some(&"message_start"), Some(&"message_stop")),
        "{names:?}"
    );
    let text: String = events
        .iter()
        .filter_map(|(_, data)| data["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello from the stub.");
    // The upstream got Claude Code's system prompt, its tools and its question.
    let sent = upstream.requests().pop().unwrap();
    let system = sent["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("Primary working directory"), "{sent}");
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools.len(),
        captured["tools"].as_array().unwrap().len(),
        "{tools:?}"
    );
    assert!(
        tools.contains(&"Bash") && tools.contains(&"Read"),
        "{tools:?}"
    );

    // The embedded model cannot take it: a clear 400 in Anthropic's shape.
    let error = anthropic_error(send(LOCAL).await.unwrap(), 400).await;
    assert_eq!(error["type"], "invalid_request_error");
    assert!(
        error["message"].as_str().unwrap().contains("max_tokens"),
        "{error}"
    );
    app.stop().await;
}

#[tokio::test]
async fn errors_take_anthropics_shape_and_status() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let admin = app.caller_token("org:admin models:read chats:invoke").await;
    let (_, key) = api_key(
        &app,
        &admin,
        json!({"name": "sdk", "scopes": ["models:read", "chats:invoke"]}),
    )
    .await;
    let (_, reader) = api_key(
        &app,
        &admin,
        json!({"name": "reader", "scopes": ["models:read"]}),
    )
    .await;
    let ask = |extra: Value| {
        let mut body = json!({"model": LOCAL, "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]});
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };

    // Credentials: none, bad, without the scope; `x-api-key` only counts on this dialect.
    let response = app
        .client
        .post(app.url(MESSAGES))
        .json(&ask(json!({})))
        .send()
        .await
        .unwrap();
    let error = anthropic_error(response, 401).await;
    assert_eq!(error["type"], "authentication_error");
    assert!(
        error["message"].as_str().unwrap().contains("x-api-key"),
        "{error}"
    );
    let error = anthropic_error(
        with_api_key(
            &app,
            Method::POST,
            MESSAGES,
            "tsk_not_a_key",
            Some(&ask(json!({}))),
        )
        .await,
        401,
    )
    .await;
    assert_eq!(error["type"], "authentication_error");
    let error = anthropic_error(
        with_api_key(&app, Method::POST, MESSAGES, &reader, Some(&ask(json!({})))).await,
        403,
    )
    .await;
    assert_eq!(error["type"], "permission_error");
    let response = with_api_key(&app, Method::GET, "/v1/organization", &key, None).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );

    // Models: unknown, another organization's.
    let error = anthropic_error(
        with_api_key(
            &app,
            Method::POST,
            MESSAGES,
            &key,
            Some(&ask(json!({"model": "claude-sonnet-4-5"}))),
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["type"], "not_found_error");
    let foreign = foreign_model(&app).await;
    let error = anthropic_error(
        with_api_key(
            &app,
            Method::POST,
            MESSAGES,
            &key,
            Some(&ask(json!({"model": foreign["id"]}))),
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["type"], "not_found_error");
    let path = format!("/anthropic/v1/models/{}", foreign["id"].as_str().unwrap());
    anthropic_error(
        with_api_key(&app, Method::GET, &path, &key, None).await,
        404,
    )
    .await;

    // Parameters: refused, not ignored, each named as the client sent it.
    for (extra, named) in [
        (json!({"max_tokens": 0}), "max_tokens"),
        (json!({"temperature": 1.5}), "temperature"),
        (json!({"top_k": 5}), "top_k"),
        (json!({"messages": []}), "messages"),
        (json!({"frequency_penalty": 1}), "frequency_penalty"),
        (
            json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096}),
            "thinking",
        ),
        (
            json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            "tools.0.type",
        ),
        (
            json!({"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
            ]}]}),
            "messages.0.content.0.source",
        ),
        (
            json!({"messages": [{"role": "user", "content": "Hi"}, {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_unknown", "content": "42"}
            ]}]}),
            "messages.1",
        ),
    ] {
        let error = anthropic_error(
            with_api_key(
                &app,
                Method::POST,
                MESSAGES,
                &key,
                Some(&ask(extra.clone())),
            )
            .await,
            400,
        )
        .await;
        assert_eq!(error["type"], "invalid_request_error", "{extra}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(named),
            "{extra}: {error}"
        );
    }
    let response = app
        .client
        .post(app.url(MESSAGES))
        .header("x-api-key", &key)
        .header("content-type", "application/json")
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    anthropic_error(response, 400).await;
    // Unknown paths under the dialect answer in its shape too.
    let error = anthropic_error(
        with_api_key(
            &app,
            Method::POST,
            "/anthropic/v1/complete",
            &key,
            Some(&json!({})),
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["type"], "not_found_error");
    app.stop().await;
}

#[tokio::test]
async fn models_in_anthropics_shape_and_pages() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let token = app.caller_token("models:read models:write").await;
    let own = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &token,
            &json!({"parentModelId": LOCAL, "displayName": "Mine"}),
        )
        .await,
        201,
    )
    .await;
    let all = ok(
        app.call(Method::GET, "/anthropic/v1/models?limit=1000", &token)
            .await,
        200,
    )
    .await;
    let ids: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&LOCAL) && ids.contains(&own["id"].as_str().unwrap()),
        "{all}"
    );
    assert_eq!(all["has_more"], false);
    let local = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == LOCAL)
        .unwrap();
    assert_eq!(local["type"], "model");
    assert!(
        local["display_name"].is_string() && local["max_input_tokens"].as_u64().unwrap() > 0,
        "{local}"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(local["created_at"].as_str().unwrap()).is_ok(),
        "{local}"
    );

    // A page at a time, as the clients follow `last_id`.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            None => "/anthropic/v1/models?limit=1".to_owned(),
            Some(id) => format!("/anthropic/v1/models?limit=1&after_id={id}"),
        };
        let page = ok(app.call(Method::GET, &path, &token).await, 200).await;
        seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_owned()),
        );
        if page["has_more"] == false {
            break;
        }
        after = page["last_id"].as_str().map(str::to_owned);
    }
    assert_eq!(seen, ids);
    let one = ok(
        app.call(
            Method::GET,
            &format!("/anthropic/v1/models/{LOCAL}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(one["id"], LOCAL);
    let mine = ok(
        app.call(
            Method::GET,
            &format!("/anthropic/v1/models/{}", own["id"].as_str().unwrap()),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(mine["display_name"], "Mine");
    let error = anthropic_error(
        app.call(Method::GET, "/anthropic/v1/models?after_id=gone", &token)
            .await,
        400,
    )
    .await;
    assert_eq!(error["type"], "invalid_request_error");
    anthropic_error(
        app.call(Method::GET, "/anthropic/v1/models?limit=0", &token)
            .await,
        400,
    )
    .await;
    app.stop().await;
}
