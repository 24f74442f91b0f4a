//! Chats through the real HTTP stack with the embedded SmolLM2 model: completions in JSON
//! and both stream formats (the AI SDK one checked by the real `ai` package), continuation,
//! truncation, background generation (disconnect, poll, re-attach, 409), records, lifecycle
//! answers, validation and tenant isolation, on SQLite and PostgreSQL.

use std::{process::Stdio, time::Duration};

use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::support::{TestApp, ok, problem};

pub const LOCAL: &str = "local/smollm2-135m-instruct";
const ALL: &str = "chats:admin chats:invoke models:read";

pub fn model_dir() -> std::path::PathBuf {
    tessera_llm_local::testing::model_path()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The app with the embedded engine, and optionally its own catalog.
pub async fn local_app(backend: Backend, catalog: Option<String>) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let catalog = catalog.map(|text| {
        let path = dir.path().join("catalog.toml");
        std::fs::write(&path, text).unwrap();
        path
    });
    let models = model_dir();
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.local_dir = Some(models);
        settings.models.catalog_file = catalog;
        // These tests poll; the rate limits have their own tests.
        settings.rate_limit.enabled = false;
    })
    .await;
    (app, dir)
}

fn ask(text: &str) -> Value {
    json!({
        "modelId": LOCAL,
        "messages": [{"role": "user", "content": text}],
        "maxTokens": 12,
        "temperature": 0
    })
}

fn follow(chat: &str, text: &str) -> Value {
    json!({
        "chatId": chat,
        "messages": [{"role": "user", "content": text}],
        "maxTokens": 12,
        "temperature": 0
    })
}

fn streamed(mut body: Value) -> Value {
    body["stream"] = json!(true);
    body
}

/// The JSON chunks of a default-format stream, checking it ends with `data: [DONE]`.
pub fn chunks(body: &str) -> Vec<Value> {
    let data: Vec<&str> = body
        .split("\n\n")
        .filter_map(|event| event.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
    data[..data.len() - 1]
        .iter()
        .map(|chunk| serde_json::from_str(chunk).unwrap())
        .collect()
}

/// Parses an AI SDK stream with the real `ai` package; returns its chunks and message.
pub async fn ai_sdk_check(body: &str) -> Value {
    let body = body.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/ai-sdk/check.mjs");
        let mut child = std::process::Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs (`just test` installs tests/ai-sdk)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(body.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "the ai package refused the stream: {}\n{body}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    })
    .await
    .unwrap()
}

async fn chat_record(app: &TestApp, token: &str, chat: &str) -> Value {
    ok(
        app.call(Method::GET, &format!("/v1/chats/{chat}"), token)
            .await,
        200,
    )
    .await
}

/// Polls the chat until no generation runs on it.
pub async fn settled(app: &TestApp, token: &str, chat: &str) -> Value {
    for _ in 0..1200 {
        let record = chat_record(app, token, chat).await;
        if record["status"] != json!("generating") {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chat {chat} is still generating");
}

async fn conversations_in_json_and_both_stream_formats(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(ALL).await;

    // A new chat: 201, the answer, its usage, where the chat lives.
    let response = app
        .call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &ask("What is the capital of France?"),
        )
        .await;
    let chat_id = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
    assert_eq!(
        response.headers()["location"],
        format!("/v1/chats/{chat_id}").as_str()
    );
    assert_eq!(response.headers()["x-truncated-messages"], "0");
    let first = ok(response, 201).await;
    assert_eq!(first["id"], json!(chat_id));
    assert_eq!(first["message"]["role"], json!("assistant"));
    let answer = first["message"]["content"].as_str().unwrap();
    assert!(answer.contains("Paris"), "{answer}");
    let usage = &first["usage"];
    assert!(usage["inputTokens"].as_u64().unwrap() > 0);
    assert!(
        usage["cachedInputTokens"].as_u64().unwrap() <= usage["inputTokens"].as_u64().unwrap(),
        "the cached part of the input: {usage}"
    );
    assert_eq!(
        usage["totalTokens"].as_u64(),
        Some(usage["inputTokens"].as_u64().unwrap() + usage["outputTokens"].as_u64().unwrap())
    );
    assert!(first.get("toolCalls").is_none() && first["message"].get("reasoning").is_none());

    // Continuing: 200, and the earlier turn is part of the context.
    let second = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &follow(&chat_id, "And of Italy?"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(second["id"], json!(chat_id));
    assert!(
        second["usage"]["inputTokens"].as_u64() > usage["inputTokens"].as_u64(),
        "the history was sent: {second}"
    );

    // The default stream: chunks of the chat, the last with usage, then [DONE].
    let response = app
        .call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &streamed(follow(&chat_id, "Thanks!")),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let body = response.text().await.unwrap();
    let events = chunks(&body);
    let last = events.last().unwrap();
    assert_eq!(last["finished"], json!(true));
    assert_eq!(last["delta"], json!(""));
    assert!(last["usage"]["outputTokens"].as_u64().unwrap() > 0);
    assert!(last["usage"]["cachedInputTokens"].is_u64(), "{last}");
    assert!(events.iter().all(|chunk| chunk["id"] == json!(chat_id)));
    let streamed_text: String = events
        .iter()
        .map(|chunk| chunk["delta"].as_str().unwrap())
        .collect();

    let record = chat_record(&app, &token, &chat_id).await;
    let messages = record["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 6);
    assert_eq!(record["status"], json!(null));
    assert_eq!(messages[5]["content"], json!(streamed_text));
    assert_eq!(messages[5]["id"], last["messageId"]);
    assert_eq!(
        messages[0]["content"],
        json!("What is the capital of France?")
    );

    // The AI SDK stream, assembled by the real `ai` package.
    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&token)
        .header("X-Stream-Format", "ai-sdk")
        .json(&streamed(ask("Name a color.")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-vercel-ai-ui-message-stream"], "v1");
    let ai_chat = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
    let parsed = ai_sdk_check(&response.text().await.unwrap()).await;
    let stored = chat_record(&app, &token, &ai_chat).await;
    let answer = &stored["messages"][1];
    assert_eq!(parsed["message"]["id"], answer["id"]);
    let text: String = parsed["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == json!("text"))
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    assert_eq!(json!(text), answer["content"]);
    let finish = parsed["chunks"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(finish["type"], json!("finish"));
    assert_eq!(finish["messageMetadata"]["chatId"], json!(ai_chat));
}

async fn generation_outlives_the_connection(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(ALL).await;
    let long = |body: Value| {
        let mut body = streamed(body);
        body["maxTokens"] = json!(48);
        body
    };

    // The client reads one chunk and goes away; the answer is still completed and stored.
    let response = app
        .call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &long(ask("Count from 1 to 200, separated by commas.")),
        )
        .await;
    let chat = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
    let mut body = response.bytes_stream();
    body.next().await.unwrap().unwrap();
    drop(body);

    // While it runs: 409 for another completion, and a re-attached stream that replays it.
    let busy = app
        .call_json(Method::POST, "/v1/chats", &token, &follow(&chat, "More"))
        .await;
    let attached = app
        .call(Method::GET, &format!("/v1/chats/{chat}/stream"), &token)
        .await;
    let record = settled(&app, &token, &chat).await;
    problem(busy, 409, "chat_generating").await;
    let answer = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == json!("assistant"))
        .unwrap()
        .clone();
    assert!(!answer["content"].as_str().unwrap().is_empty());
    assert_eq!(attached.status(), 200);
    let events = chunks(&attached.text().await.unwrap());
    let text: String = events
        .iter()
        .map(|chunk| chunk["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        json!(text),
        answer["content"],
        "the replay holds the whole answer"
    );
    assert_eq!(events.last().unwrap()["messageId"], answer["id"]);
    assert!(
        answer["usage"]["outputTokens"].as_u64().unwrap() > 20,
        "{answer}"
    );
    // Nothing runs any more.
    let idle = app
        .call(Method::GET, &format!("/v1/chats/{chat}/stream"), &token)
        .await;
    assert_eq!(idle.status(), 204);
}

async fn the_context_window_truncates_old_turns(backend: Backend) {
    let catalog = format!(
        r#"
[providers.local]
kind = "local"
[[models]]
id = "{LOCAL}"
display_name = "Tiny window"
provider = "local"
model_name = "SmolLM2-135M-Instruct.Q4_1.gguf"
context_window = 96
max_tokens_per_request = 8
capabilities = {{ streaming = true }}
"#
    );
    let (app, _dir) = local_app(backend, Some(catalog)).await;
    let token = app.caller_token(ALL).await;
    let mut body = ask("Please remember that my favourite fruit is the mango.");
    body["maxTokens"] = json!(8);
    let first = ok(
        app.call_json(Method::POST, "/v1/chats", &token, &body)
            .await,
        201,
    )
    .await;
    let chat = first["id"].as_str().unwrap().to_owned();
    let mut truncated = 0;
    for turn in 0..4 {
        let mut next = follow(&chat, &format!("This is turn number {turn} of our chat."));
        next["maxTokens"] = json!(8);
        let response = app
            .call_json(Method::POST, "/v1/chats", &token, &next)
            .await;
        let header: u64 = response.headers()["x-truncated-messages"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let body = ok(response, 200).await;
        assert_eq!(body["truncatedMessages"].as_u64(), Some(header));
        truncated = header;
    }
    assert!(truncated >= 2, "old turns were dropped: {truncated}");
    // Everything is still stored.
    let record = chat_record(&app, &token, &chat).await;
    assert_eq!(record["messages"].as_array().unwrap().len(), 10);

    // A turn that cannot fit at all is refused.
    let mut too_long = follow(&chat, &"mango ".repeat(200));
    too_long["maxTokens"] = json!(8);
    let refused = problem(
        app.call_json(Method::POST, "/v1/chats", &token, &too_long)
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["type"],
        json!("context_window_exceeded")
    );
}

async fn chat_records_are_listed_renamed_deleted_and_restored(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(ALL).await;
    let first = ok(
        app.call_json(Method::POST, "/v1/chats", &token, &ask("Hello"))
            .await,
        201,
    )
    .await;
    let chat = first["id"].as_str().unwrap().to_owned();

    let page = ok(
        app.call(Method::GET, "/v1/chats?expand[]=model", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(page["totalCount"], json!(1));
    assert_eq!(page["hasMore"], json!(false));
    let summary = &page["items"][0];
    assert_eq!(summary["id"], json!(chat));
    assert_eq!(summary["modelId"], json!(LOCAL));
    assert_eq!(summary["model"]["id"], json!(LOCAL));
    assert_eq!(summary["title"], json!("Hello"));
    assert_eq!(summary["status"], json!(null));

    let path = format!("/v1/chats/{chat}");
    let renamed = ok(
        app.call_json(Method::PATCH, &path, &token, &json!({"title": "Greetings"}))
            .await,
        200,
    )
    .await;
    assert_eq!(renamed["title"], json!("Greetings"));
    let too_long = json!({"title": "x".repeat(501)});
    let refused = problem(
        app.call_json(Method::PATCH, &path, &token, &too_long).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(refused["detail"][0]["loc"], json!(["body", "title"]));

    assert_eq!(app.call(Method::DELETE, &path, &token).await.status(), 204);
    let live = ok(app.call(Method::GET, "/v1/chats", &token).await, 200).await;
    assert_eq!(live["totalCount"], json!(0));
    let all = ok(
        app.call(Method::GET, "/v1/chats?includeDeleted=true", &token)
            .await,
        200,
    )
    .await;
    assert!(all["items"][0]["deletedAt"].is_string());
    problem(
        app.call_json(Method::POST, "/v1/chats", &token, &follow(&chat, "hi"))
            .await,
        409,
        "chat_deleted",
    )
    .await;
    let restored = ok(
        app.call(Method::POST, &format!("{path}/restore"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(restored["deletedAt"], json!(null));
    ok(
        app.call_json(Method::POST, "/v1/chats", &token, &follow(&chat, "hi"))
            .await,
        200,
    )
    .await;
}

async fn pagination_is_stable_under_concurrent_inserts(backend: Backend) {
    use tessera_chats::{Chat, ChatId, ChatStore, ModelSnapshot};
    let app = TestApp::spawn(backend).await;
    let (org, client, secret) = app.organization_with_client(ALL).await;
    let token = app.token(&client, &secret).await;
    let store = std::sync::Arc::new(tessera_store::SqlChatStore::new(app.state.database.clone()));
    let chat = |n: usize| Chat {
        id: ChatId::generate(),
        organization_id: org.parse().unwrap(),
        owner: client.clone(),
        model: ModelSnapshot {
            model_id: LOCAL.into(),
            base_model_id: LOCAL.into(),
            system_prompt: None,
            system_prompt_id: None,
        },
        title: Some(format!("chat {n}")),
        status: None,
        error: None,
        deleted_at: None,
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
    };
    let mut existing = std::collections::HashSet::new();
    for n in 0..250 {
        let chat = chat(n);
        existing.insert(chat.id.to_string());
        store.insert(&chat).await.unwrap();
    }
    // New chats arrive while the client pages.
    let writer = {
        let store = store.clone();
        let chats: Vec<Chat> = (250..300).map(chat).collect();
        tokio::spawn(async move {
            for chat in chats {
                store.insert(&chat).await.unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/chats?limit=37&cursor={c}"),
            None => "/v1/chats?limit=37".to_owned(),
        };
        let page = ok(app.call(Method::GET, &path, &token).await, 200).await;
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item["id"].as_str().unwrap().to_owned()),
        );
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    writer.await.unwrap();
    let unique: std::collections::HashSet<_> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates");
    assert!(existing.is_subset(&unique), "no gaps");

    let bad = problem(
        app.call(Method::GET, "/v1/chats?cursor=nope", &token).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(bad["detail"][0]["loc"], json!(["query", "cursor"]));
    problem(
        app.call(Method::GET, "/v1/chats?limit=101", &token).await,
        422,
        "validation_failed",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/chats?expand[]=messages", &token)
            .await,
        422,
        "validation_failed",
    )
    .await;
}

async fn requests_are_validated(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(ALL).await;
    let post = |body: Value| {
        let app = &app;
        let token = &token;
        async move { app.call_json(Method::POST, "/v1/chats", token, &body).await }
    };
    let locs = |body: &Value| -> Vec<Value> {
        body["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["loc"].clone())
            .collect()
    };

    let body = problem(
        post(json!({"modelId": LOCAL, "messages": []})).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(locs(&body), [json!(["body", "messages"])]);
    let body = problem(
        post(json!({"modelId": LOCAL, "messages": [{"role": "system", "content": "x"}]})).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(body["detail"][0]["type"], json!("enum"));
    let body = problem(
        post(json!({"messages": [{"role": "user", "content": "x"}]})).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(locs(&body), [json!(["body", "modelId"])]);
    let body = problem(
        post(json!({"modelId": LOCAL, "messages": [
            {"role": "user", "content": "x"},
            {"role": "tool", "content": "42"}
        ]}))
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(locs(&body), [json!(["body", "messages", 1, "toolCallId"])]);
    // The embedded model does not reason; invalid schemas and tool names are refused.
    let body = problem(
        post(json!({
            "modelId": LOCAL,
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "no spaces"}}],
            "responseFormat": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": 7}}},
            "enableReasoning": true,
            "maxTokens": 5000
        }))
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        locs(&body),
        [
            json!(["body", "tools", 0, "function", "name"]),
            json!(["body", "responseFormat", "json_schema", "schema"]),
            json!(["body", "enableReasoning"]),
            json!(["body", "maxTokens"])
        ]
    );
    problem(
        post(json!({"modelId": LOCAL, "messages": "hi"})).await,
        422,
        "validation_failed",
    )
    .await;
    problem(
        post(json!({"modelId": "local/none", "messages": [{"role": "user", "content": "x"}]}))
            .await,
        404,
        "not_found",
    )
    .await;
    problem(
        post(follow("cht_00000000000000000000000000000000", "x")).await,
        404,
        "not_found",
    )
    .await;
    problem(post(follow("not-a-chat", "x")).await, 404, "not_found").await;
    let wrong_format = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&token)
        .header("X-Stream-Format", "openai")
        .json(&streamed(ask("x")))
        .send()
        .await
        .unwrap();
    problem(wrong_format, 422, "validation_failed").await;

    // Nothing above created a chat.
    let page = ok(app.call(Method::GET, "/v1/chats", &token).await, 200).await;
    assert_eq!(page["totalCount"], json!(0));
}

async fn model_lifecycle_decides_what_chats_may_use(backend: Backend) {
    let future = (chrono::Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let past = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    let entry = |id: &str, extra: &str| {
        format!(
            "[[models]]\nid = \"{id}\"\ndisplay_name = \"{id}\"\nprovider = \"local\"\nmodel_name = \"SmolLM2-135M-Instruct.Q4_1.gguf\"\ncontext_window = 2048\ncapabilities = {{ streaming = true }}\n{extra}\n"
        )
    };
    let catalog = format!(
        "[providers.local]\nkind = \"local\"\n{}{}{}{}",
        entry(LOCAL, ""),
        entry(
            "local/old",
            &format!("end_of_life_at = \"{future}\"\nreplacement_model_id = \"{LOCAL}\"")
        ),
        entry(
            "local/retired",
            &format!("end_of_life_at = \"{past}\"\nreplacement_model_id = \"{LOCAL}\"")
        ),
        entry("local/off", "enabled = false"),
    );
    let (app, _dir) = local_app(backend, Some(catalog)).await;
    let token = app.caller_token(ALL).await;
    let with_model = |model: &str| {
        let mut body = ask("Hi");
        body["modelId"] = json!(model);
        body["maxTokens"] = json!(4);
        body
    };
    let deprecated = app
        .call_json(Method::POST, "/v1/chats", &token, &with_model("local/old"))
        .await;
    assert!(
        deprecated.headers()["deprecation"]
            .to_str()
            .unwrap()
            .starts_with('@')
    );
    assert!(
        deprecated.headers()["sunset"]
            .to_str()
            .unwrap()
            .ends_with("GMT")
    );
    ok(deprecated, 201).await;
    let gone = problem(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &with_model("local/retired"),
        )
        .await,
        410,
        "model_end_of_life",
    )
    .await;
    assert_eq!(gone["replacementModelId"], json!(LOCAL));
    problem(
        app.call_json(Method::POST, "/v1/chats", &token, &with_model("local/off"))
            .await,
        409,
        "model_disabled",
    )
    .await;
}

async fn chats_are_private_to_their_owner_and_organization(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let (_, client, secret) = app
        .organization_with_client("chats:invoke chats:read chats:write chats:delete")
        .await;
    let owner = app.token(&client, &secret).await;
    let first = ok(
        app.call_json(Method::POST, "/v1/chats", &owner, &ask("Hi"))
            .await,
        201,
    )
    .await;
    let chat = first["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/chats/{chat}");

    // Another organization sees nothing.
    let stranger = app.caller_token(ALL).await;
    for (method, suffix) in [
        (Method::GET, ""),
        (Method::DELETE, ""),
        (Method::POST, "/restore"),
        (Method::GET, "/stream"),
    ] {
        problem(
            app.call(method, &format!("{path}{suffix}"), &stranger)
                .await,
            404,
            "not_found",
        )
        .await;
    }
    problem(
        app.call_json(Method::PATCH, &path, &stranger, &json!({"title": "x"}))
            .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call_json(Method::POST, "/v1/chats", &stranger, &follow(&chat, "x"))
            .await,
        404,
        "not_found",
    )
    .await;
    let theirs = ok(app.call(Method::GET, "/v1/chats", &stranger).await, 200).await;
    assert_eq!(theirs["totalCount"], json!(0));
    // Without chats:invoke, no completions.
    let reader = app.caller_token("chats:read").await;
    problem(
        app.call_json(Method::POST, "/v1/chats", &reader, &ask("x"))
            .await,
        403,
        "insufficient_scope",
    )
    .await;
}

async fn completions_honour_idempotency_keys(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(ALL).await;
    let send = |key: &str, body: &Value| {
        app.client
            .post(app.url("/v1/chats"))
            .bearer_auth(&token)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
    };
    // A retried completion replays the first answer: one chat, billed once.
    let first = ok(send("k-1", &ask("Hi")).await.unwrap(), 201).await;
    let retry = send("k-1", &ask("Hi")).await.unwrap();
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    assert_eq!(ok(retry, 201).await, first);

    // A stream is delivered as it is produced, and a retry points at the chat.
    let mut long = streamed(ask("Count from 1 to 100."));
    long["maxTokens"] = json!(48);
    let response = send("k-2", &long).await.unwrap();
    let chat = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
    let mut body = response.bytes_stream();
    body.next().await.unwrap().unwrap();
    let record = chat_record(&app, &token, &chat).await;
    assert_eq!(
        record["status"],
        json!("generating"),
        "the first chunk came before the end"
    );
    drop(body);
    settled(&app, &token, &chat).await;
    let retry = send("k-2", &long).await.unwrap();
    assert_eq!(
        retry.headers()["location"],
        format!("/v1/chats/{chat}").as_str()
    );
    problem(retry, 409, "idempotent_response_withheld").await;
    let page = ok(app.call(Method::GET, "/v1/chats", &token).await, 200).await;
    assert_eq!(page["totalCount"], json!(2));
}

async fn structured_output_is_validated_against_its_schema(backend: Backend) {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/litellm.yaml");
    let proxy =
        tessera_llm_openai::testing::LiteLlm::start_without_key(std::path::Path::new(config)).await;
    let model = |id: &str, name: &str| {
        format!(
            "[[models]]\nid = \"{id}\"\ndisplay_name = \"{id}\"\nprovider = \"gateway\"\nmodel_name = \"{name}\"\ncontext_window = 4096\ncapabilities = {{ streaming = true, json_schema = true }}\n"
        )
    };
    let catalog = format!(
        "[providers.gateway]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n{}{}",
        proxy.base_url,
        model("test/json", "mock-json"),
        model("test/bad", "mock-bad-json"),
    );
    let (app, _dir) = local_app(backend, Some(catalog)).await;
    let token = app.caller_token(ALL).await;
    let ask_for = |model: &str, strict: bool| {
        json!({
            "modelId": model,
            "messages": [{"role": "user", "content": "How many?"}],
            "responseFormat": {"type": "json_schema", "json_schema": {
                "name": "count",
                "strict": strict,
                "schema": {
                    "type": "object",
                    "properties": {"answer": {"type": "integer"}},
                    "required": ["answer"],
                    "additionalProperties": false
                }
            }}
        })
    };

    // A conforming answer, through the OpenAI-compatible adapter.
    let good = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &ask_for("test/json", true),
        )
        .await,
        201,
    )
    .await;
    let content: Value =
        serde_json::from_str(good["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"answer": 42}));

    // Strict and non-conforming: 502 with the violations, and nothing stored.
    let bad = problem(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &ask_for("test/bad", true),
        )
        .await,
        502,
        "response_schema_mismatch",
    )
    .await;
    assert!(
        bad["errors"][0].as_str().unwrap().starts_with("/answer:"),
        "{bad}"
    );
    let page = ok(app.call(Method::GET, "/v1/chats", &token).await, 200).await;
    let failed = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|chat| chat["status"] == json!("error"))
        .expect("the failed chat is recorded");
    let record = chat_record(&app, &token, failed["id"].as_str().unwrap()).await;
    assert_eq!(record["messages"], json!([]));
    assert!(
        record["error"]
            .as_str()
            .unwrap()
            .contains("does not conform")
    );

    // Streamed: the failure ends the stream.
    let response = app
        .call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &streamed(ask_for("test/bad", true)),
        )
        .await;
    let last = chunks(&response.text().await.unwrap()).pop().unwrap();
    assert_eq!(last["error"]["code"], json!("response_schema_mismatch"));

    // Not strict: the answer is returned as the model gave it.
    let loose = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &ask_for("test/bad", false),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(loose["message"]["content"], json!("{\"answer\": \"many\"}"));

    // A schema that is not a JSON Schema is refused before anything runs.
    let mut invalid = ask_for("test/json", true);
    invalid["responseFormat"]["json_schema"]["schema"] = json!({"type": "integer-ish"});
    let refused = problem(
        app.call_json(Method::POST, "/v1/chats", &token, &invalid)
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["body", "responseFormat", "json_schema", "schema"])
    );
}

async fn the_embedded_model_answers_in_json_when_asked(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(ALL).await;
    let schema = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 30},
            "country": {"type": "string", "maxLength": 30}
        },
        "required": ["city", "country"],
        "additionalProperties": false
    });
    let mut body = ask("What is the capital of France?");
    body["maxTokens"] = json!(64);
    body["responseFormat"] = json!({"type": "json_schema", "json_schema": {
        "name": "capital", "strict": true, "schema": schema
    }});
    let answer = ok(
        app.call_json(Method::POST, "/v1/chats", &token, &body)
            .await,
        201,
    )
    .await;
    let document: Value =
        serde_json::from_str(answer["message"]["content"].as_str().unwrap()).unwrap();
    assert!(
        document["city"].is_string() && document["country"].is_string(),
        "{document}"
    );
    assert_eq!(answer["finishReason"], json!("stop"));
}

async fn the_tool_round_trip_with_the_embedded_model(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(ALL).await;
    let tools = json!([{"type": "function", "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 30}
        }, "required": ["city"], "additionalProperties": false}
    }}]);
    let mut body = ask("What is the weather in Oslo?");
    body["tools"] = tools.clone();
    body["maxTokens"] = json!(64);
    let first = ok(
        app.call_json(Method::POST, "/v1/chats", &token, &body)
            .await,
        201,
    )
    .await;
    let chat = first["id"].as_str().unwrap().to_owned();
    assert_eq!(first["finishReason"], json!("tool_calls"));
    let call = &first["message"]["toolCalls"][0];
    assert_eq!(call["type"], json!("function"));
    assert_eq!(call["function"]["name"], json!("get_weather"));
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(arguments["city"].is_string(), "{arguments}");

    // The client runs the tool and sends its result; the model answers in text, streamed
    // in the AI SDK format and assembled by the `ai` package.
    let result = json!({
        "chatId": chat,
        "messages": [{"role": "tool", "toolCallId": call["id"], "content": "{\"temperature\": 18}"}],
        "tools": tools,
        "maxTokens": 24,
        "temperature": 0,
        "stream": true
    });
    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&token)
        .header("X-Stream-Format", "ai-sdk")
        .json(&result)
        .send()
        .await
        .unwrap();
    let parsed = ai_sdk_check(&response.text().await.unwrap()).await;
    let text: String = parsed["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == json!("text"))
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    assert!(!text.is_empty());

    let record = chat_record(&app, &token, &chat).await;
    let roles: Vec<&str> = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(record["messages"][1]["toolCalls"][0]["id"], call["id"]);
    assert_eq!(record["messages"][2]["toolCallId"], call["id"]);
    assert_eq!(json!(text), record["messages"][3]["content"]);
}

tessera_store::on_both_databases!(
    the_tool_round_trip_with_the_embedded_model,
    the_embedded_model_answers_in_json_when_asked,
    structured_output_is_validated_against_its_schema,
    completions_honour_idempotency_keys,
    conversations_in_json_and_both_stream_formats,
    generation_outlives_the_connection,
    the_context_window_truncates_old_turns,
    chat_records_are_listed_renamed_deleted_and_restored,
    pagination_is_stable_under_concurrent_inserts,
    requests_are_validated,
    model_lifecycle_decides_what_chats_may_use,
    chats_are_private_to_their_owner_and_organization,
);

/// Every kind of event, in both wire formats: snapshots of the bytes, and the AI SDK one
/// accepted and assembled by the real `ai` package.
#[tokio::test]
async fn both_wire_formats_carry_reasoning_sources_and_tool_calls() {
    use std::sync::Arc;

    use tessera_api::chat_stream::{Encoder, Format, body};
    use tessera_chats::{ChatError, ChatId, GenerationEvent, Message, MessageUsage, Source};
    use tessera_models::{ChatEvent, FinishReason, ProviderError, Role, ToolCall, Usage};

    let chat: ChatId = "cht_0190f5c1a3e27c3d9b1e4a0c5d6e7f80".parse().unwrap();
    let message_id: tessera_chats::MessageId =
        "msg_0190f5c1a3e27c3d9b1e4a0c5d6e7f81".parse().unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: "weather".into(),
        arguments: "{\"city\":\"Oslo\"}".into(),
    };
    let answer = Message {
        id: message_id.clone(),
        chat_id: chat.clone(),
        sequence: 1,
        role: Role::Assistant,
        content: "Let me check.".into(),
        reasoning: Some("The user wants weather.".into()),
        tool_calls: vec![call.clone()],
        tool_call_id: None,
        sources: Vec::new(),
        attachments: Vec::new(),
        usage: Some(MessageUsage {
            usage: Usage {
                input_tokens: 20,
                output_tokens: 9,
                reasoning_tokens: 4,
                cached_input_tokens: 12,
            },
            finish_reason: FinishReason::ToolCalls,
            route: None,
            guardrails: Default::default(),
        }),
        created_at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
    };
    let events = vec![
        GenerationEvent::Sources(vec![Source {
            id: "chk_1".into(),
            file_id: "fil_1".into(),
            dataset_id: Some("dst_1".into()),
            title: Some("Climate handbook".into()),
            text: "Oslo is mild in May.".into(),
            score: 0.5,
            file_name: Some("climate.md".into()),
            location: None,
        }]),
        GenerationEvent::Delta(ChatEvent::ReasoningDelta("The user ".into())),
        GenerationEvent::Delta(ChatEvent::ReasoningDelta("wants weather.".into())),
        GenerationEvent::Delta(ChatEvent::TextDelta("Let me ".into())),
        GenerationEvent::Delta(ChatEvent::TextDelta("check.".into())),
        GenerationEvent::Delta(ChatEvent::ToolCallStart {
            index: 0,
            id: "call_1".into(),
            name: "weather".into(),
        }),
        GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            delta: "{\"city\":".into(),
        }),
        GenerationEvent::Delta(ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            delta: "\"Oslo\"}".into(),
        }),
        GenerationEvent::Delta(ChatEvent::ToolCallEnd { index: 0 }),
        GenerationEvent::Finished(Box::new(answer)),
    ];
    let encode = |format: Format, events: Vec<GenerationEvent>| {
        let chat = chat.clone();
        let message_id = message_id.clone();
        async move {
            let stream = futures_util::stream::iter(events.into_iter().map(Arc::new));
            let bytes: Vec<_> = body(
                Box::pin(stream),
                Encoder::new(format, &chat, &message_id),
                Duration::from_secs(15),
            )
            .map(|chunk| chunk.unwrap())
            .collect()
            .await;
            String::from_utf8(bytes.concat()).unwrap()
        }
    };

    let tessera = encode(Format::Tessera, events.clone()).await;
    insta::assert_snapshot!("tessera_stream", tessera);
    let last = chunks(&tessera).pop().unwrap();
    assert_eq!(
        last["toolCalls"][0]["function"]["arguments"],
        json!(call.arguments)
    );

    let ai_sdk = encode(Format::AiSdk, events).await;
    insta::assert_snapshot!("ai_sdk_stream", ai_sdk);
    let parsed = ai_sdk_check(&ai_sdk).await;
    let parts = parsed["message"]["parts"].as_array().unwrap();
    let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "step-start",
            "source-document",
            "reasoning",
            "text",
            "tool-weather"
        ]
    );
    assert_eq!(parts[2]["text"], json!("The user wants weather."));
    assert_eq!(parts[3]["text"], json!("Let me check."));
    assert_eq!(parts[4]["state"], json!("input-available"));
    assert_eq!(parts[4]["input"], json!({"city": "Oslo"}));
    assert_eq!(
        parsed["message"]["metadata"]["usage"]["reasoningTokens"],
        json!(4)
    );
    assert_eq!(
        parsed["message"]["metadata"]["usage"]["cachedInputTokens"],
        json!(12)
    );

    // A failure ends both formats with an error the clients understand.
    let failed = vec![
        GenerationEvent::Delta(ChatEvent::TextDelta("par".into())),
        GenerationEvent::Failed(ChatError::Provider(ProviderError::Timeout)),
    ];
    let tessera = encode(Format::Tessera, failed.clone()).await;
    let last = chunks(&tessera).pop().unwrap();
    assert_eq!(last["finished"], json!(true));
    assert_eq!(last["error"]["status"], json!(504));
    assert_eq!(last["error"]["code"], json!("provider_timeout"));
    let ai_sdk = encode(Format::AiSdk, failed).await;
    assert!(ai_sdk.contains(r#""type":"error""#), "{ai_sdk}");
}

/// A silent generation still sends keep-alive comments.
#[tokio::test]
async fn silent_streams_get_keep_alive_comments() {
    use tessera_api::chat_stream::{Encoder, Format, body};
    let chat = tessera_chats::ChatId::generate();
    let silent = futures_util::stream::pending();
    let mut stream = Box::pin(body(
        Box::pin(silent),
        Encoder::new(
            Format::Tessera,
            &chat,
            &tessera_chats::MessageId::generate(),
        ),
        Duration::from_millis(50),
    ));
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(&first[..], b": keep-alive\n\n");
}
