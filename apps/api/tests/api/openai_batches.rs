//! OpenAI's Batch API through the real HTTP stack with the embedded models, on SQLite and
//! PostgreSQL (the official `openai` package's run is in `openai_clients`): a `.jsonl`
//! input uploaded for `batch` and stored unprocessed; chat completion and embedding batches
//! run by the background runner through the endpoints' own pipelines into an output file
//! (answers, in input order) and an error file (each refused line with the error its
//! endpoint answers); counts and timestamps; a batch cancelled midway; an input with bad
//! lines failing with each line named; and the refusals (endpoint, window, purpose, file
//! name, scope, another organization's batch), in OpenAI's error shape; and a batch whose
//! creator's API key is revoked midway, its remaining lines refused.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, model_dir},
    openai::{api_key, openai_error},
    openai_vector_stores::post_form,
    processing::knowledge_app_with,
    support::{TestApp, ok},
};

const SCOPES: &str = "files:read files:write chats:invoke chats:read";

async fn batch_app(backend: Backend) -> TestApp {
    let chat_model = model_dir();
    knowledge_app_with(backend, |settings| {
        settings.models.local_dir = Some(chat_model);
        settings.batches.poll_millis = 100;
    })
    .await
}

/// One input line.
fn line(custom_id: &str, url: &str, body: Value) -> String {
    json!({"custom_id": custom_id, "method": "POST", "url": url, "body": body}).to_string()
}

fn chat_line(custom_id: &str, model: &str, extra: Value) -> String {
    let mut body = json!({
        "model": model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 4,
        "temperature": 0,
    });
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    line(custom_id, "/v1/chat/completions", body)
}

/// Uploads `lines` as `name` for batches (the purpose first): the file's id.
async fn upload_input(app: &TestApp, token: &str, name: &str, lines: &[String]) -> String {
    let content = lines.join("\n") + "\n";
    let file = ok(
        post_form(
            app,
            token,
            &[
                ("purpose", None, b"batch"),
                ("file", Some(name), content.as_bytes()),
            ],
        )
        .await,
        200,
    )
    .await;
    assert_eq!(file["purpose"], "batch", "{file}");
    assert_eq!(file["status"], "processed", "stored as it is: {file}");
    file["id"].as_str().unwrap().to_owned()
}

async fn create(app: &TestApp, token: &str, file: &str, endpoint: &str) -> reqwest::Response {
    let body = json!({
        "input_file_id": file,
        "endpoint": endpoint,
        "completion_window": "24h",
        "metadata": {"job": "nightly"},
    });
    app.call_json(Method::POST, "/openai/v1/batches", token, &body)
        .await
}

/// The batch once it reached `status`, polled.
async fn wait_for(app: &TestApp, token: &str, id: &str, status: &str) -> Value {
    let path = format!("/openai/v1/batches/{id}");
    for _ in 0..1200 {
        let batch = ok(app.call(Method::GET, &path, token).await, 200).await;
        if batch["status"] == status {
            return batch;
        }
        assert!(
            ["in_progress", "finalizing", "cancelling", "validating"]
                .contains(&batch["status"].as_str().unwrap()),
            "{batch}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("batch {id} never reached {status}");
}

/// A file's JSON lines.
async fn lines_of(app: &TestApp, token: &str, file: &Value) -> Vec<Value> {
    let path = format!("/openai/v1/files/{}/content", file.as_str().unwrap());
    let response = app.call(Method::GET, &path, token).await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

async fn chat_batch_answers_in_order_and_keeps_each_refusal(backend: Backend) {
    let app = batch_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let input = upload_input(
        &app,
        &token,
        "requests.jsonl",
        &[
            chat_line("first", LOCAL, json!({})),
            chat_line("unknown-model", "local/no-such-model", json!({})),
            chat_line("second", LOCAL, json!({"max_tokens": 3})),
            chat_line("too-hot", LOCAL, json!({"temperature": 5})),
        ],
    )
    .await;
    let created = ok(
        create(&app, &token, &input, "/v1/chat/completions").await,
        200,
    )
    .await;
    assert_eq!(created["object"], "batch");
    assert_eq!(created["status"], "in_progress", "{created}");
    assert_eq!(created["endpoint"], "/v1/chat/completions");
    assert_eq!(created["completion_window"], "24h");
    assert_eq!(created["metadata"], json!({"job": "nightly"}));
    assert_eq!(created["request_counts"]["total"], 4);
    let created_at = created["created_at"].as_i64().unwrap();
    assert_eq!(
        created["expires_at"].as_i64().unwrap(),
        created_at + 24 * 3600
    );
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("batch_"));

    let done = wait_for(&app, &token, &id, "completed").await;
    assert_eq!(
        done["request_counts"],
        json!({"total": 4, "completed": 2, "failed": 2}),
        "{done}"
    );
    for stamp in ["in_progress_at", "finalizing_at", "completed_at"] {
        assert!(
            done[stamp].as_i64().unwrap() >= created_at,
            "{stamp}: {done}"
        );
    }
    assert!(done["errors"].is_null(), "{done}");

    let output = lines_of(&app, &token, &done["output_file_id"]).await;
    let ids: Vec<&Value> = output.iter().map(|line| &line["custom_id"]).collect();
    assert_eq!(ids, vec!["first", "second"], "input order");
    for answer in &output {
        assert!(answer["id"].as_str().unwrap().starts_with("batch_req_"));
        assert!(answer["error"].is_null());
        let response = &answer["response"];
        assert_eq!(response["status_code"], 200);
        assert_eq!(response["body"]["object"], "chat.completion", "{answer}");
        assert_eq!(response["body"]["model"], LOCAL);
        assert!(response["body"]["choices"][0]["message"]["content"].is_string());
        assert!(
            response["body"]["usage"]["completion_tokens"]
                .as_u64()
                .unwrap()
                <= 4
        );
    }
    let errors = lines_of(&app, &token, &done["error_file_id"]).await;
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["custom_id"], "unknown-model");
    assert_eq!(errors[0]["response"]["status_code"], 404);
    assert_eq!(
        errors[0]["response"]["body"]["error"]["code"], "model_not_found",
        "{}",
        errors[0]
    );
    assert_eq!(errors[1]["custom_id"], "too-hot");
    assert_eq!(errors[1]["response"]["status_code"], 400);
    assert_eq!(
        errors[1]["response"]["body"]["error"]["param"],
        "temperature"
    );

    // The output files are the organization's files, for batches' answers.
    let listed = ok(
        app.call(Method::GET, "/openai/v1/files?purpose=batch_output", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 2, "{listed}");
    let batches = ok(
        app.call(Method::GET, "/openai/v1/batches", &token).await,
        200,
    )
    .await;
    assert_eq!(batches["data"][0]["id"], json!(id));
    assert_eq!(batches["has_more"], false);

    // Another organization sees none of it.
    let stranger = app.caller_token(SCOPES).await;
    let path = format!("/openai/v1/batches/{id}");
    openai_error(app.call(Method::GET, &path, &stranger).await, 404).await;
    openai_error(
        app.call(Method::POST, &format!("{path}/cancel"), &stranger)
            .await,
        404,
    )
    .await;
    let theirs = ok(
        app.call(Method::GET, "/openai/v1/batches", &stranger).await,
        200,
    )
    .await;
    assert_eq!(theirs["data"], json!([]));
    // Cancelling an ended batch answers it as it is.
    let ended = ok(
        app.call(Method::POST, &format!("{path}/cancel"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(ended["status"], "completed");
    app.stop().await;
}

async fn embedding_batch_cancel_and_refusals(backend: Backend) {
    let app = batch_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let embed = |id: &str, text: &str| {
        line(
            id,
            "/v1/embeddings",
            json!({"model": "all-MiniLM-L6-v2", "input": text}),
        )
    };
    let input = upload_input(
        &app,
        &token,
        "embed.jsonl",
        &[embed("a", "first text"), embed("b", "second text")],
    )
    .await;
    let created = ok(create(&app, &token, &input, "/v1/embeddings").await, 200).await;
    let done = wait_for(&app, &token, created["id"].as_str().unwrap(), "completed").await;
    assert_eq!(done["request_counts"]["completed"], 2, "{done}");
    assert!(done["error_file_id"].is_null());
    let output = lines_of(&app, &token, &done["output_file_id"]).await;
    let vector = &output[1]["response"]["body"]["data"][0]["embedding"];
    assert_eq!(output[1]["custom_id"], "b");
    assert_eq!(vector.as_array().unwrap().len(), 384, "{}", output[1]);

    // Cancelled while its requests run: the answers so far are kept.
    let many: Vec<String> = (0..40)
        .map(|n| chat_line(&format!("n{n}"), LOCAL, json!({"max_tokens": 24})))
        .collect();
    let long_input = upload_input(&app, &token, "many.jsonl", &many).await;
    let running = ok(
        create(&app, &token, &long_input, "/v1/chat/completions").await,
        200,
    )
    .await;
    let id = running["id"].as_str().unwrap();
    let cancelling = ok(
        app.call(
            Method::POST,
            &format!("/openai/v1/batches/{id}/cancel"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert!(
        ["cancelling", "cancelled"].contains(&cancelling["status"].as_str().unwrap()),
        "{cancelling}"
    );
    let cancelled = wait_for(&app, &token, id, "cancelled").await;
    assert!(cancelled["cancelling_at"].is_i64() && cancelled["cancelled_at"].is_i64());
    let answered = cancelled["request_counts"]["completed"].as_u64().unwrap();
    assert!(answered < 40, "{cancelled}");
    if answered > 0 {
        let kept = lines_of(&app, &token, &cancelled["output_file_id"]).await;
        assert_eq!(kept.len() as u64, answered);
    }

    // An input with bad lines fails, naming each.
    let bad = upload_input(
        &app,
        &token,
        "bad.jsonl",
        &[
            embed("a", "fine"),
            "not json".to_owned(),
            embed("a", "the same custom_id"),
            line("c", "/v1/chat/completions", json!({"model": LOCAL})),
        ],
    )
    .await;
    let failed = ok(create(&app, &token, &bad, "/v1/embeddings").await, 200).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["failed_at"].is_i64());
    let refused: Vec<(Value, Value)> = failed["errors"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| (error["line"].clone(), error["code"].clone()))
        .collect();
    assert_eq!(
        refused,
        vec![
            (json!(2), json!("invalid_json_line")),
            (json!(3), json!("duplicate_custom_id")),
            (json!(4), json!("mismatched_endpoint")),
        ]
    );

    // Refusals.
    for (endpoint, window, param) in [
        ("/v1/completions", "24h", "endpoint"),
        ("/v1/embeddings", "1h", "completion_window"),
    ] {
        let body =
            json!({"input_file_id": input, "endpoint": endpoint, "completion_window": window});
        let error = openai_error(
            app.call_json(Method::POST, "/openai/v1/batches", &token, &body)
                .await,
            400,
        )
        .await;
        assert_eq!(error["param"], param, "{error}");
    }
    let user_data = ok(
        post_form(
            &app,
            &token,
            &[
                ("purpose", None, b"user_data"),
                ("file", Some("x.txt"), b"words"),
            ],
        )
        .await,
        200,
    )
    .await;
    let error = openai_error(
        create(
            &app,
            &token,
            user_data["id"].as_str().unwrap(),
            "/v1/embeddings",
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "input_file_id", "{error}");
    let missing = "file_0190f5c1a3e27c3d9b1e4a0c5d6e7f80";
    openai_error(create(&app, &token, missing, "/v1/embeddings").await, 404).await;
    let stranger = app.caller_token(SCOPES).await;
    openai_error(create(&app, &stranger, &input, "/v1/embeddings").await, 404).await;
    let error = openai_error(
        post_form(
            &app,
            &token,
            &[
                ("purpose", None, b"batch"),
                ("file", Some("requests.txt"), b"{}"),
            ],
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "file", "{error}");
    let error = openai_error(
        post_form(
            &app,
            &token,
            &[
                ("purpose", None, b"batch_output"),
                ("file", Some("out.jsonl"), b"{}"),
            ],
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "purpose", "{error}");
    let reader = app.caller_token("files:read chats:read").await;
    openai_error(create(&app, &reader, &input, "/v1/embeddings").await, 403).await;
    app.stop().await;
}

/// A batch runs as its creator: once the creator's API key is revoked, its remaining lines
/// are refused as the key's own requests are (401), while those answered before are kept.
async fn a_revoked_key_runs_no_more_lines(backend: Backend) {
    let app = batch_app(backend).await;
    let admin = app.caller_token(&format!("org:admin {SCOPES}")).await;
    let scopes = json!(["files:read", "files:write", "chats:invoke", "chats:read"]);
    let (key_id, key) = api_key(&app, &admin, json!({"name": "nightly", "scopes": scopes})).await;
    let lines: Vec<String> = (0..30)
        .map(|n| chat_line(&format!("n{n}"), LOCAL, json!({"max_tokens": 16})))
        .collect();
    let input = upload_input(&app, &key, "nightly.jsonl", &lines).await;
    let created = ok(
        create(&app, &key, &input, "/v1/chat/completions").await,
        200,
    )
    .await;
    ok(
        app.call(Method::DELETE, &format!("/v1/api-keys/{key_id}"), &admin)
            .await,
        204,
    )
    .await;
    let id = created["id"].as_str().unwrap();
    // The organization's administrator still reads it; the key itself no longer can.
    let done = wait_for(&app, &admin, id, "completed").await;
    let counts = &done["request_counts"];
    let refused = counts["failed"].as_u64().unwrap();
    assert_eq!(
        counts["completed"].as_u64().unwrap() + refused,
        30,
        "{done}"
    );
    assert!(
        refused > 0,
        "revoked while its lines ran, yet none was refused: {done}"
    );
    for error in lines_of(&app, &admin, &done["error_file_id"]).await {
        assert_eq!(error["response"]["status_code"], 401, "{error}");
        let message = error["response"]["body"]["error"]["message"]
            .as_str()
            .unwrap();
        assert!(message.contains("no longer authenticates"), "{error}");
    }
    let path = format!("/openai/v1/batches/{id}");
    openai_error(app.call(Method::GET, &path, &key).await, 401).await;
    app.stop().await;
}

tessera_store::on_both_databases!(
    chat_batch_answers_in_order_and_keeps_each_refusal,
    embedding_batch_cancel_and_refusals,
    a_revoked_key_runs_no_more_lines,
);
