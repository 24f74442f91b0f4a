//! Tessera as an MCP server, driven by the official MCP Python client (`ClientSession` over
//! Streamable HTTP, `tests/mcp/tessera_client.py`) with an API key over the real TLS
//! listener: it lists the tools the key's scopes allow, searches a dataset and gets exactly
//! the hits `POST /v1/datasets/{id}/search` returns, lists datasets and files, composes a
//! system prompt, asks the embedded model (the chat is stored and billed), reads usage,
//! lists and reads particles and system prompts as resources; a key without the scope is
//! refused, another organization's dataset is not found, bad arguments are named, and the
//! organization's guardrails refuse a blocked prompt.

use std::process::Command;

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, model_dir},
    processing::{knowledge_app_with, search},
    rag::dataset_with,
    support::{TestApp, ok, problem},
};

const ADMIN: &str = "org:admin datasets:read datasets:write files:read files:write \
                     particles:read particles:write system-prompts:read system-prompts:write \
                     chats:invoke chats:read usage:read";

const HANDBOOK: &str = "# Travel policy\n\nTrain travel is booked in second class; first class \
                        needs a manager's approval.\n\n# Expenses\n\nMeals on the road are \
                        reimbursed up to 40 euros per day with receipts.\n\n# Equipment\n\n\
                        Every employee receives a laptop and may order one external monitor.\n";

/// Runs the official client against `/mcp` with `token`; one result per step, after the
/// `initialize` result.
async fn mcp_client(app: &TestApp, token: &str, steps: Value) -> Vec<Value> {
    let python = std::env::var("TESSERA_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
    let cert = tessera_api::tls::dev_certificate_paths(&app.settings.data_dir).0;
    let mut command = Command::new(python);
    command
        .arg(format!(
            "{}/../../tests/mcp/tessera_client.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(steps.to_string())
        .env("TESSERA_MCP_URL", app.url("/mcp"))
        .env("TESSERA_TOKEN", token)
        .env("SSL_CERT_FILE", &cert)
        .env_remove("SSL_CERT_DIR");
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("the MCP client starts (TESSERA_MCP_PYTHON)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the MCP client failed (exit {:?}):\n{}\n{stdout}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

async fn api_key(app: &TestApp, admin: &str, scopes: &[&str]) -> String {
    let key = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            admin,
            &json!({"name": "mcp host", "scopes": scopes}),
        )
        .await,
        201,
    )
    .await;
    key["secret"].as_str().unwrap().to_owned()
}

async fn created(app: &TestApp, token: &str, path: &str, body: Value) -> Value {
    ok(app.call_json(Method::POST, path, token, &body).await, 201).await
}

fn tool_names(list: &Value) -> Vec<&str> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect()
}

/// The structured result of a successful tool call.
fn structured(result: &Value) -> &Value {
    assert_ne!(result["isError"], json!(true), "{result}");
    &result["structuredContent"]
}

/// The problem a failed tool call carries.
fn refusal(result: &Value) -> &Value {
    assert_eq!(result["isError"], json!(true), "{result}");
    &result["structuredContent"]
}

#[tokio::test]
async fn the_official_mcp_client_uses_tessera_as_a_server() {
    let app = knowledge_app_with(Backend::Sqlite, |settings| {
        settings.models.local_dir = Some(model_dir());
    })
    .await;
    let admin = app.caller_token(ADMIN).await;
    let dataset = dataset_with(
        &app,
        &admin,
        "handbook",
        &[("handbook.md", HANDBOOK.as_bytes().to_vec())],
    )
    .await;
    let query = "how much is reimbursed for meals";
    let rest_hits = search(&app, &admin, &dataset, json!({"query": query, "limit": 3})).await;
    assert!(!rest_hits.is_empty());
    let particle = created(
        &app,
        &admin,
        "/v1/particles",
        json!({"name": "Terse", "category": "tone", "content": "Be terse.", "description": "Short answers"}),
    )
    .await;
    let particle_id = particle["id"].as_str().unwrap();
    let prompt = created(
        &app,
        &admin,
        "/v1/system-prompts",
        json!({"name": "Support", "description": "Front-line support", "particles": [{"particleId": particle_id, "order": 0}]}),
    )
    .await;
    let prompt_id = prompt["id"].as_str().unwrap();
    let rest_composed = ok(
        app.call(
            Method::GET,
            &format!("/v1/system-prompts/{prompt_id}/compose"),
            &admin,
        )
        .await,
        200,
    )
    .await;
    // Another organization's dataset.
    let stranger = app.caller_token("datasets:write").await;
    let foreign = created(&app, &stranger, "/v1/datasets", json!({"name": "theirs"})).await;

    let key = api_key(
        &app,
        &admin,
        &[
            "datasets:read",
            "files:read",
            "system-prompts:read",
            "particles:read",
            "chats:invoke",
            "usage:read",
        ],
    )
    .await;
    let results = mcp_client(
        &app,
        &key,
        json!([
            {"op": "tools"},
            {"op": "call", "tool": "search_dataset", "arguments": {"datasetId": dataset, "query": query, "limit": 3}},
            {"op": "call", "tool": "list_datasets", "arguments": {}},
            {"op": "call", "tool": "list_files", "arguments": {"status": "ready"}},
            {"op": "call", "tool": "compose_system_prompt", "arguments": {"systemPromptId": prompt_id}},
            {"op": "call", "tool": "ask_model", "arguments": {"model": LOCAL, "prompt": "Say hello.", "maxTokens": 8}},
            {"op": "call", "tool": "read_usage", "arguments": {"groupBy": ["model"]}},
            {"op": "resources"},
            {"op": "read", "uri": format!("tessera://particles/{particle_id}")},
            {"op": "read", "uri": format!("tessera://system-prompts/{prompt_id}")},
            {"op": "templates"},
            {"op": "call", "tool": "search_dataset", "arguments": {"datasetId": foreign["id"], "query": query}},
            {"op": "call", "tool": "search_dataset", "arguments": {"datasetId": dataset, "query": query, "limit": 0, "colour": "red"}},
            {"op": "call", "tool": "no_such_tool", "arguments": {}},
            {"op": "read", "uri": "tessera://particles/prt_doesnotexist"},
        ]),
    )
    .await;
    let [
        server,
        tools,
        searched,
        datasets,
        files,
        composed,
        asked,
        usage,
        resources,
        particle_read,
        prompt_read,
        templates,
        foreign_search,
        invalid,
        unknown_tool,
        missing_resource,
    ] = results.as_slice()
    else {
        panic!("{results:?}");
    };
    assert_eq!(
        server["server"]["serverInfo"]["name"], "tessera",
        "{server}"
    );
    assert_eq!(
        tool_names(tools),
        [
            "search_dataset",
            "list_datasets",
            "list_files",
            "compose_system_prompt",
            "ask_model",
            "read_usage"
        ]
    );

    // The same hits, in the same order, as the REST search.
    assert_eq!(
        structured(searched)["items"],
        json!(rest_hits),
        "{searched}"
    );
    assert!(
        searched["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("40 euros"),
        "{searched}"
    );
    assert_eq!(structured(datasets)["items"][0]["id"], json!(dataset));
    assert_eq!(structured(files)["items"][0]["name"], "handbook.md");
    assert_eq!(structured(composed)["text"], rest_composed["text"]);

    // The model answered, and the exchange is a stored chat with its usage.
    let answer = structured(asked);
    assert!(
        answer["usage"]["outputTokens"].as_u64().unwrap() > 0,
        "{answer}"
    );
    let chat = ok(
        app.call(
            Method::GET,
            &format!("/v1/chats/{}", answer["id"].as_str().unwrap()),
            &admin,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(chat["messages"][0]["content"], "Say hello.", "{chat}");
    let by_model = &structured(usage)["items"];
    assert_eq!(by_model[0]["modelId"], LOCAL, "{usage}");

    let listed: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&format!("tessera://particles/{particle_id}").as_str())
            && listed.contains(&format!("tessera://system-prompts/{prompt_id}").as_str()),
        "{resources}"
    );
    let particle_json: Value =
        serde_json::from_str(particle_read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(particle_json["content"], "Be terse.");
    let prompt_json: Value =
        serde_json::from_str(prompt_read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        prompt_json["particles"][0]["particleId"],
        json!(particle_id)
    );
    assert_eq!(templates["resourceTemplates"].as_array().unwrap().len(), 2);

    // Another organization's dataset does not exist for this key.
    let not_found = refusal(foreign_search);
    assert_eq!(
        (&not_found["status"], &not_found["code"]),
        (&json!(404), &json!("not_found"))
    );
    // Bad arguments are named as a 422 names them.
    let invalid = refusal(invalid);
    assert_eq!(invalid["status"], 422, "{invalid}");
    let locs: Vec<String> = invalid["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["loc"].to_string())
        .collect();
    assert_eq!(locs, [r#"["arguments","colour"]"#], "{invalid}");
    assert!(
        unknown_tool["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
    assert_eq!(
        missing_resource["error"]["code"], -32002,
        "{missing_resource}"
    );

    // The organization's guardrails hold for `ask_model` as for every completion: a
    // blocked input is the tool's 422, located in the prompt, and no model runs.
    let emails = json!({"pii": [{"id": "emails", "kind": "email", "action": "block"}]});
    ok(
        app.call_json(Method::PUT, "/v1/guardrails", &admin, &emails)
            .await,
        200,
    )
    .await;
    let results = mcp_client(
        &app,
        &key,
        json!([{"op": "call", "tool": "ask_model", "arguments": {
            "model": LOCAL, "prompt": "Write to jane.doe@example.org.", "maxTokens": 8
        }}]),
    )
    .await;
    let blocked = refusal(&results[1]);
    assert_eq!(blocked["status"], json!(422), "{blocked}");
    assert_eq!(
        blocked["detail"][0]["type"],
        json!("guardrail_blocked"),
        "{blocked}"
    );
    assert!(!blocked.to_string().contains("jane.doe"), "{blocked}");
    ok(
        app.call(Method::DELETE, "/v1/guardrails", &admin).await,
        204,
    )
    .await;

    // A key with only `files:read` sees one tool and is refused the others.
    let narrow = api_key(&app, &admin, &["files:read"]).await;
    let results = mcp_client(
        &app,
        &narrow,
        json!([
            {"op": "tools"},
            {"op": "call", "tool": "search_dataset", "arguments": {"datasetId": dataset, "query": query}},
            {"op": "resources"},
            {"op": "read", "uri": format!("tessera://particles/{particle_id}")},
        ]),
    )
    .await;
    assert_eq!(tool_names(&results[1]), ["list_files"]);
    let forbidden = refusal(&results[2]);
    assert_eq!(
        (&forbidden["status"], &forbidden["code"]),
        (&json!(403), &json!("insufficient_scope")),
        "{forbidden}"
    );
    assert_eq!(results[3]["resources"], json!([]), "{}", results[3]);
    assert!(
        results[4]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("particles:read")
    );

    // Without a token the endpoint answers like every other one.
    let response = app
        .client
        .post(app.url("/mcp"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    problem(response, 401, "missing_token").await;
    // Stateless: no session stream to open or end.
    let response = app.get("/mcp").await;
    let allow = response.headers()["allow"].to_str().unwrap().to_owned();
    problem(response, 405, "method_not_allowed").await;
    assert_eq!(allow, "POST");
}
