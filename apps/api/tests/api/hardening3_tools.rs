//! Issue 61, items 7 and 8, through the real HTTP stack.
//!
//! Tool choice: `required` and a named function force a call on the embedded model (by
//! constrained decoding: a call of one of the tools, or of the named one, with arguments
//! valid for its parameters), `none` means no call, on `/openai/v1/chat/completions`, the
//! Responses API and `/v1/chats`; through a remote OpenAI-compatible provider (a loopback
//! upstream of this test's own that records each request) the choice is forwarded as OpenAI
//! spells it.
//!
//! Cut-off answers: a constrained answer (a strict JSON schema, a tool call) that the token
//! limit cuts off is one generation and one success with the finish reason `length` (the
//! Responses API: `incomplete`, `max_output_tokens`), never a 5xx that clients retry; and an
//! unbounded `integer` or `number` is written within bounds, so a schema cannot be satisfied
//! only by running away.

use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_llm_openai::testing::read_http_request;
use tessera_store::Backend;
use tokio::{io::AsyncWriteExt, net::TcpListener};

use crate::{
    chats::{LOCAL, local_app},
    support::{TestApp, ok, problem},
};

const SCOPES: &str = "chats:invoke chats:read models:read usage:read";
const COMPLETIONS: &str = "/openai/v1/chat/completions";

/// The catalog model served by [`ToolUpstream`].
pub const REMOTE: &str = "stub/tools";

fn weather() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30}},
                       "required": ["city"], "additionalProperties": false}
    }})
}

fn time() -> Value {
    json!({"type": "function", "function": {
        "name": "get_time",
        "description": "The current time in a time zone.",
        "parameters": {"type": "object", "properties": {
            "zone": {"type": "string", "maxLength": 30},
            "hour_format": {"enum": [12, 24]}
        }, "required": ["zone", "hour_format"], "additionalProperties": false}
    }})
}

/// The parameters of `name` among `tools` (chat-completion shape).
fn parameters(tools: &[Value], name: &str) -> Value {
    tools
        .iter()
        .find(|tool| tool["function"]["name"] == name)
        .map(|tool| tool["function"]["parameters"].clone())
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Asserts `arguments` (JSON text) are valid for the parameters of `name`.
fn valid_arguments(tools: &[Value], name: &str, arguments: &str) {
    let violations = tessera_chats::conformance_errors(&parameters(tools, name), arguments);
    assert!(violations.is_empty(), "{name}({arguments}): {violations:?}");
}

/// The app with the embedded model and [`REMOTE`], served by `upstream`.
async fn tools_app(backend: Backend, upstream: &ToolUpstream) -> (TestApp, tempfile::TempDir) {
    local_app(backend, Some(upstream.catalog())).await
}

// ---------------------------------------------------------------------------------------
// Item 8: cut-off constrained answers and bounded numbers.
// ---------------------------------------------------------------------------------------

fn count_schema() -> Value {
    json!({"type": "object", "properties": {"answer": {"type": "integer"}, "unit": {"type": "string"}},
           "required": ["answer", "unit"], "additionalProperties": false})
}

/// A strict structured answer or a tool call cut off by the token limit is a success with
/// the finish reason `length` on both dialects, streamed or not, and `incomplete` in the
/// Responses API; each request is one generation (one usage record, finished `length`).
async fn cut_off_constrained_answers_finish_with_length(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(SCOPES).await;
    let question = [json!({"role": "user", "content": "How many moons has Jupiter?"})];
    let strict = json!({"type": "json_schema", "json_schema": {
        "name": "count", "strict": true, "schema": count_schema()}});

    // OpenAI's dialect: a strict schema, then a tool call, each cut after 4 tokens.
    let schema_request = json!({"model": LOCAL, "messages": question, "max_tokens": 4,
                                "temperature": 0, "response_format": strict});
    let completion = ok(
        app.call_json(Method::POST, COMPLETIONS, &token, &schema_request)
            .await,
        200,
    )
    .await;
    let choice = &completion["choices"][0];
    assert_eq!(choice["finish_reason"], "length", "{completion}");
    let content = choice["message"]["content"].as_str().unwrap();
    assert!(content.starts_with('{'), "{completion}");
    assert!(
        serde_json::from_str::<Value>(content).is_err(),
        "cut off: {content}"
    );
    assert_eq!(completion["usage"]["completion_tokens"], 4);

    let mut streamed = schema_request.clone();
    streamed["stream"] = json!(true);
    let response = app
        .call_json(Method::POST, COMPLETIONS, &token, &streamed)
        .await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(!body.contains("\"error\""), "{body}");
    assert!(body.contains("\"finish_reason\":\"length\""), "{body}");

    let tool_request = json!({"model": LOCAL, "messages": question, "max_tokens": 12,
                              "temperature": 0, "tools": [weather(), time()]});
    let completion = ok(
        app.call_json(Method::POST, COMPLETIONS, &token, &tool_request)
            .await,
        200,
    )
    .await;
    let choice = &completion["choices"][0];
    assert_eq!(choice["finish_reason"], "length", "{completion}");
    // The call as far as it was written (its arguments unfinished), or none before its name.
    for call in choice["message"]["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let arguments = call["function"]["arguments"].as_str().unwrap();
        assert!(
            serde_json::from_str::<Value>(arguments).is_err(),
            "{completion}"
        );
    }

    // `/v1/chats`: the answer is stored, with its finish reason.
    let native = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": LOCAL, "messages": question, "maxTokens": 4, "temperature": 0,
                    "responseFormat": {"type": "json_schema", "json_schema": {
                        "name": "count", "strict": true, "schema": count_schema()}}}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(native["finishReason"], "length", "{native}");
    let chat = native["id"].as_str().unwrap();
    let record = ok(
        app.call(Method::GET, &format!("/v1/chats/{chat}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(record["status"], Value::Null, "{record}");
    assert_eq!(record["messages"].as_array().unwrap().len(), 2, "{record}");
    let native_tool = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": LOCAL, "messages": question, "maxTokens": 12, "temperature": 0,
                    "tools": [weather(), time()]}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(native_tool["finishReason"], "length", "{native_tool}");

    // The Responses API: incomplete for the token limit.
    for extra in [
        json!({"text": {"format": {"type": "json_schema", "name": "count", "strict": true,
                                   "schema": count_schema()}},
               "max_output_tokens": 4}),
        json!({"tools": [{"type": "function", "name": "get_weather",
                          "parameters": weather()["function"]["parameters"]}],
               "max_output_tokens": 12}),
    ] {
        let mut request = json!({"model": LOCAL, "input": "How many moons has Jupiter?",
                                 "temperature": 0});
        request
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let response = ok(
            app.call_json(Method::POST, "/openai/v1/responses", &token, &request)
                .await,
            200,
        )
        .await;
        assert_eq!(response["status"], "incomplete", "{response}");
        assert_eq!(
            response["incomplete_details"],
            json!({"reason": "max_output_tokens"}),
            "{response}"
        );
        assert_eq!(response["error"], Value::Null, "{response}");
        let usage = &response["usage"];
        assert!(
            usage["input_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap()
                <= usage["input_tokens"].as_u64().unwrap(),
            "{response}"
        );
    }

    // One generation per request: 7 requests, 7 usage records.
    let usage = ok(app.call(Method::GET, "/v1/usage", &token).await, 200).await;
    assert_eq!(usage["totals"]["requests"], json!(7), "{usage}");
    app.stop().await;
}

/// Questions the greedy model answers with long runs of digits: an unbounded `integer`
/// used to go on until `max_tokens`, then 502.
const LONG_NUMBERS: [&str; 2] = [
    "Write the first 100 digits of pi as one number.",
    "Count from 1 to 50 without spaces, as one number.",
];

#[tokio::test]
async fn unbounded_numbers_are_bounded_and_answers_finish() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let token = app.caller_token(SCOPES).await;
    for question in LONG_NUMBERS {
        for kind in ["integer", "number"] {
            let schema = json!({"type": "object", "properties": {"value": {"type": kind}},
                                "required": ["value"], "additionalProperties": false});
            let completion = ok(
                app.call_json(
                    Method::POST,
                    COMPLETIONS,
                    &token,
                    &json!({"model": LOCAL, "temperature": 0, "max_tokens": 64,
                            "messages": [{"role": "user", "content": question}],
                            "response_format": {"type": "json_schema", "json_schema": {
                                "name": "value", "strict": true, "schema": schema}}}),
                )
                .await,
                200,
            )
            .await;
            let choice = &completion["choices"][0];
            assert_eq!(choice["finish_reason"], "stop", "{kind}: {completion}");
            let content = choice["message"]["content"].as_str().unwrap();
            let value: Value = serde_json::from_str(content).unwrap();
            let written = value["value"].to_string();
            let integer_digits = written
                .trim_start_matches('-')
                .split('.')
                .next()
                .map_or(0, str::len);
            assert!(integer_digits <= 16, "{kind}: {written}");
            assert!(value["value"].as_f64().is_some_and(f64::is_finite));
        }
    }
    app.stop().await;
}

// ---------------------------------------------------------------------------------------
// Item 7: tool choice on the embedded model.
// ---------------------------------------------------------------------------------------

/// The one call of a chat completion, checked: finish `tool_calls`, arguments valid for
/// the tool's parameters. Returns its name.
fn the_call(completion: &Value, tools: &[Value]) -> String {
    let choice = &completion["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{completion}");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{completion}");
    let name = calls[0]["function"]["name"].as_str().unwrap().to_owned();
    valid_arguments(
        tools,
        &name,
        calls[0]["function"]["arguments"].as_str().unwrap(),
    );
    name
}

#[tokio::test]
async fn the_embedded_model_obeys_the_tool_choice() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let token = app.caller_token(SCOPES).await;
    let tools = [weather(), time()];
    let ask = |messages: Value, choice: Value| {
        json!({"model": LOCAL, "messages": messages, "tools": tools, "tool_choice": choice,
               "max_tokens": 64, "temperature": 0})
    };
    let question = json!([{"role": "user", "content": "What is the weather in Oslo?"}]);
    let complete = |body: Value| {
        let app = &app;
        let token = &token;
        async move {
            ok(
                app.call_json(Method::POST, COMPLETIONS, token, &body).await,
                200,
            )
            .await
        }
    };

    // `required`: a call of one of the tools.
    the_call(
        &complete(ask(question.clone(), json!("required"))).await,
        &tools,
    );

    // A named function: a call of that one, whatever the question is about.
    let named = json!({"type": "function", "function": {"name": "get_time"}});
    let completion = complete(ask(question.clone(), named.clone())).await;
    assert_eq!(the_call(&completion, &tools), "get_time");

    // After a tool's result the model answers in text, unless a call is forced.
    let mut after_result = question.as_array().unwrap().clone();
    after_result.extend([
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
               "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\": \"clear\"}"}),
    ]);
    let auto = complete(ask(json!(after_result), json!("auto"))).await;
    assert_eq!(auto["choices"][0]["finish_reason"], "stop", "{auto}");
    the_call(
        &complete(ask(json!(after_result), json!("required"))).await,
        &tools,
    );
    let forced = complete(ask(json!(after_result), named.clone())).await;
    assert_eq!(the_call(&forced, &tools), "get_time");

    // `none`: no call, even where the model would call one.
    let none = complete(ask(question.clone(), json!("none"))).await;
    let choice = &none["choices"][0];
    assert_ne!(choice["finish_reason"], "tool_calls", "{none}");
    assert!(choice["message"].get("tool_calls").is_none(), "{none}");
    assert!(!choice["message"]["content"].as_str().unwrap().is_empty());

    // Streamed, the forced call arrives as tool-call deltas.
    let mut streamed = ask(question.clone(), named.clone());
    streamed["stream"] = json!(true);
    let response = app
        .call_json(Method::POST, COMPLETIONS, &token, &streamed)
        .await;
    let body = response.text().await.unwrap();
    assert!(body.contains("\"name\":\"get_time\""), "{body}");
    assert!(body.contains("\"finish_reason\":\"tool_calls\""), "{body}");

    // The Responses API's named form.
    let response = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/responses",
            &token,
            &json!({"model": LOCAL, "input": "What is the weather in Oslo?", "temperature": 0,
                    "max_output_tokens": 64,
                    "tools": [{"type": "function", "name": "get_weather",
                               "parameters": weather()["function"]["parameters"]},
                              {"type": "function", "name": "get_time",
                               "parameters": time()["function"]["parameters"]}],
                    "tool_choice": {"type": "function", "name": "get_time"}}),
        )
        .await,
        200,
    )
    .await;
    let output = response["output"].as_array().unwrap();
    let call = output
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap_or_else(|| panic!("no call: {response}"));
    assert_eq!(call["name"], "get_time", "{response}");
    valid_arguments(&tools, "get_time", call["arguments"].as_str().unwrap());
    assert_eq!(
        response["tool_choice"],
        json!({"type": "function", "name": "get_time"})
    );

    // `/v1/chats` takes the same option as `toolChoice`.
    let native = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": LOCAL, "messages": question, "tools": tools, "maxTokens": 64,
                    "temperature": 0, "toolChoice": named}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(native["finishReason"], "tool_calls", "{native}");
    let call = &native["message"]["toolCalls"][0]["function"];
    assert_eq!(call["name"], "get_time", "{native}");
    valid_arguments(&tools, "get_time", call["arguments"].as_str().unwrap());
    app.stop().await;
}

#[tokio::test]
async fn a_choice_that_names_no_offered_tool_is_refused_before_generating() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let token = app.caller_token(SCOPES).await;
    let question = json!([{"role": "user", "content": "Hi"}]);
    for (tools, choice) in [
        (
            json!([weather()]),
            json!({"type": "function", "function": {"name": "get_time"}}),
        ),
        (json!([]), json!("required")),
    ] {
        let response = app
            .call_json(
                Method::POST,
                COMPLETIONS,
                &token,
                &json!({"model": LOCAL, "messages": question, "tools": tools,
                        "tool_choice": choice}),
            )
            .await;
        assert_eq!(response.status(), 400, "{choice}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["param"], "tool_choice", "{body}");
        let refused = problem(
            app.call_json(
                Method::POST,
                "/v1/chats",
                &token,
                &json!({"modelId": LOCAL, "messages": question, "tools": tools,
                        "toolChoice": choice}),
            )
            .await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(
            refused["detail"][0]["loc"],
            json!(["body", "toolChoice"]),
            "{refused}"
        );
    }
    // Forms neither API has.
    let response = app
        .call_json(
            Method::POST,
            COMPLETIONS,
            &token,
            &json!({"model": LOCAL, "messages": question, "tools": [weather()],
                    "tool_choice": "any"}),
        )
        .await;
    assert_eq!(response.status(), 400);
    let usage = ok(app.call(Method::GET, "/v1/usage", &token).await, 200).await;
    assert_eq!(usage["totals"]["requests"], json!(0), "{usage}");
    app.stop().await;
}

// ---------------------------------------------------------------------------------------
// Item 7: tool choice forwarded to a remote OpenAI-compatible provider.
// ---------------------------------------------------------------------------------------

/// An OpenAI-compatible `/v1/chat/completions` on loopback that records every request body
/// and answers as a provider honouring `tool_choice` would: a call of the named function, of
/// the first tool for `required`, text otherwise; arguments made from the tool's parameters.
pub struct ToolUpstream {
    port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl ToolUpstream {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let Some((_, body)) = read_http_request(&mut socket).await else {
                        return;
                    };
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let answer = answer(&request);
                    recorded.lock().unwrap().push(request);
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    let _ = socket.write_all(format!("{head}{answer}").as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { port, requests }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The built-in catalog (the embedded model among others) and [`REMOTE`].
    pub fn catalog(&self) -> String {
        let builtin = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../crates/models/catalog.toml"
        ));
        format!(
            r#"{builtin}

[providers.stub]
kind = "openai"
base_url = "http://127.0.0.1:{port}/v1"

[[models]]
id = "{REMOTE}"
display_name = "A remote model that honours tool_choice"
provider = "stub"
model_name = "stub-tools"
context_window = 8192
capabilities = {{ streaming = true, tools = true, json_schema = true }}
"#,
            port = self.port
        )
    }
}

/// A value valid for a (simple) JSON schema.
fn example(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("object") => Value::Object(
            schema["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, property)| (name.clone(), example(property)))
                .collect(),
        ),
        Some("array") => json!([]),
        Some("integer") => json!(7),
        Some("number") => json!(1.5),
        Some("boolean") => json!(true),
        _ => json!("Paris"),
    }
}

/// The streamed answer to `request`.
fn answer(request: &Value) -> String {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    let called = match &request["tool_choice"] {
        Value::String(mode) if mode == "required" => tools.first().cloned(),
        Value::Object(named) => {
            let name = &named["function"]["name"];
            tools
                .iter()
                .find(|tool| &tool["function"]["name"] == name)
                .cloned()
        }
        _ => None,
    };
    let chunk = |delta: Value, finish: Option<&str>| {
        let chunk = json!({"id": "chatcmpl-stub", "object": "chat.completion.chunk",
                           "created": 0, "model": "stub-tools",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let (delta, finish) = match called {
        Some(tool) => (
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_stub",
                   "type": "function", "function": {
                       "name": tool["function"]["name"],
                       "arguments": example(&tool["function"]["parameters"]).to_string()}}]}),
            "tool_calls",
        ),
        None => (
            json!({"role": "assistant", "content": "Hello from the stub."}),
            "stop",
        ),
    };
    let usage = json!({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0,
                       "model": "stub-tools", "choices": [],
                       "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}});
    [
        chunk(delta, None),
        chunk(json!({}), Some(finish)),
        format!("data: {usage}\n\n"),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

async fn the_tool_choice_is_forwarded_to_a_remote_provider(backend: Backend) {
    let upstream = ToolUpstream::start().await;
    let (app, _dir) = tools_app(backend, &upstream).await;
    let token = app.caller_token(SCOPES).await;
    let tools = [weather(), time()];
    let question = json!([{"role": "user", "content": "What is the weather in Oslo?"}]);
    let named = json!({"type": "function", "function": {"name": "get_time"}});

    for (choice, forwarded) in [
        (json!("required"), json!("required")),
        (named.clone(), named.clone()),
        (json!("none"), json!("none")),
        (Value::Null, json!("auto")),
    ] {
        let mut request = json!({"model": REMOTE, "messages": question, "tools": tools});
        if !choice.is_null() {
            request["tool_choice"] = choice.clone();
        }
        let completion = ok(
            app.call_json(Method::POST, COMPLETIONS, &token, &request)
                .await,
            200,
        )
        .await;
        let sent = upstream.requests().pop().unwrap();
        assert_eq!(sent["tool_choice"], forwarded, "{choice}: {sent}");
        assert_eq!(sent["tools"].as_array().unwrap().len(), 2, "{sent}");
        match forwarded.as_str() {
            Some("required") => {
                the_call(&completion, &tools);
            }
            Some(_) => assert_eq!(completion["choices"][0]["finish_reason"], "stop"),
            None => assert_eq!(the_call(&completion, &tools), "get_time"),
        }
    }

    // The Responses API's named form, and `/v1/chats`' `toolChoice`, go out in OpenAI's
    // chat-completion form.
    let response = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/responses",
            &token,
            &json!({"model": REMOTE, "input": "What time is it in Oslo?",
                    "tools": [{"type": "function", "name": "get_time",
                               "parameters": time()["function"]["parameters"]}],
                    "tool_choice": {"type": "function", "name": "get_time"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(upstream.requests().pop().unwrap()["tool_choice"], named);
    assert!(
        response["output"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["type"] == "function_call" && item["name"] == "get_time"),
        "{response}"
    );
    let native = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": REMOTE, "messages": question, "tools": tools,
                    "toolChoice": "required"}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(
        upstream.requests().pop().unwrap()["tool_choice"],
        "required"
    );
    assert_eq!(native["finishReason"], "tool_calls", "{native}");
    app.stop().await;
}

tessera_store::on_both_databases!(
    cut_off_constrained_answers_finish_with_length,
    the_tool_choice_is_forwarded_to_a_remote_provider,
);
