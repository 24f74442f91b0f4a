//! The OpenAI dialect (`/openai/v1`) through the real HTTP stack with the embedded models:
//! the same answer, usage and RAG sources as `/v1/chats` for the same request; stateless
//! unless `store`; OpenAI's chunk stream; models and embeddings; and every failure in
//! OpenAI's error shape with OpenAI's status codes. The official clients' own checks are in
//! `openai_clients`.

use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, local_app, model_dir},
    processing::{MARKDOWN, knowledge_app_with},
    rag::dataset_with,
    support::{TestApp, ok},
};

const SCOPES: &str = "files:read files:write datasets:read datasets:write models:read \
models:write chats:invoke chats:read usage:read";
const QUESTION: &str = "How do I reset my password?";

/// The body of an OpenAI error answer, checking its status and shape.
pub async fn openai_error(response: reqwest::Response, status: u16) -> Value {
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
    let error = &body["error"];
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(error["type"].is_string(), "{body}");
    assert!(
        error.get("param").is_some() && error.get("code").is_some(),
        "{body}"
    );
    error.clone()
}

/// The JSON chunks of an OpenAI stream, checking it ends with `data: [DONE]`.
pub fn openai_chunks(body: &str) -> Vec<Value> {
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

pub fn source_ids(sources: &Value) -> Vec<String> {
    sources
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|s| s["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// One of the organization's models with a system prompt and a dataset of the help page
/// (RAG): its id.
pub async fn helpdesk_model(app: &TestApp, token: &str) -> String {
    let help = dataset_with(
        app,
        token,
        "Help",
        &[("help.md", MARKDOWN.as_bytes().to_vec())],
    )
    .await;
    let model: String = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            token,
            &json!({"parentModelId": LOCAL, "displayName": "Helpdesk",
                    "systemPrompt": "You answer questions about the account."}),
        )
        .await,
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(
        app.call_json(
            Method::POST,
            &format!("/v1/models/{model}/datasets"),
            token,
            &json!({"datasetId": help, "usageType": "rag"}),
        )
        .await,
        201,
    )
    .await;
    model
}

async fn one_dialect_one_pipeline(backend: Backend) {
    let chat_model = model_dir();
    let app = knowledge_app_with(backend, |settings| {
        settings.models.local_dir = Some(chat_model);
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let model = helpdesk_model(&app, &token).await;

    // The same request in both dialects: the same answer, usage and sources.
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
    let request = json!({
        "model": model,
        "messages": [{"role": "user", "content": QUESTION}],
        "max_tokens": 10,
        "temperature": 0
    });
    let response = app
        .call_json(
            Method::POST,
            "/openai/v1/chat/completions",
            &token,
            &request,
        )
        .await;
    assert!(response.headers().get("x-chat-id").is_none(), "stateless");
    let completion = ok(response, 200).await;
    assert_eq!(completion["object"], "chat.completion");
    assert!(completion["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(completion["model"], json!(model));
    let choice = &completion["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], native["message"]["content"]);
    assert_eq!(choice["finish_reason"], native["finishReason"]);
    let sources = source_ids(&choice["message"]["sources"]);
    assert!(!sources.is_empty(), "{completion}");
    assert_eq!(sources, source_ids(&native["message"]["sources"]));
    let usage = &completion["usage"];
    assert_eq!(usage["prompt_tokens"], native["usage"]["inputTokens"]);
    assert_eq!(usage["completion_tokens"], native["usage"]["outputTokens"]);
    assert_eq!(usage["total_tokens"], native["usage"]["totalTokens"]);
    // The cached part of the prompt (this request may reuse the `/v1` one's prefix).
    let cached = usage["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached <= usage["prompt_tokens"].as_u64().unwrap(),
        "{usage}"
    );

    // Streamed: role first, the same text in deltas, the finish with the sources, the usage.
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let response = app
        .call_json(
            Method::POST,
            "/openai/v1/chat/completions",
            &token,
            &streamed,
        )
        .await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let chunks = openai_chunks(&response.text().await.unwrap());
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(json!(text), native["message"]["content"]);
    let last = &chunks[chunks.len() - 1];
    assert_eq!(last["choices"], json!([]));
    assert_eq!(
        last["usage"]["completion_tokens"],
        usage["completion_tokens"]
    );
    assert!(
        last["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
            <= last["usage"]["prompt_tokens"].as_u64().unwrap(),
        "{last}"
    );
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(
        finish["choices"][0]["finish_reason"],
        native["finishReason"]
    );
    assert_eq!(
        source_ids(&finish["choices"][0]["delta"]["sources"]),
        sources
    );
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );

    // Stateless: only the `/v1` chat exists; `store: true` keeps the exchange.
    let listed = ok(app.call(Method::GET, "/v1/chats", &token).await, 200).await;
    assert_eq!(listed["totalCount"], json!(1));
    let mut stored = request.clone();
    stored["store"] = json!(true);
    let response = app
        .call_json(Method::POST, "/openai/v1/chat/completions", &token, &stored)
        .await;
    let chat = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
    let answer = ok(response, 200).await;
    let record = ok(
        app.call(Method::GET, &format!("/v1/chats/{chat}"), &token)
            .await,
        200,
    )
    .await;
    let messages = record["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[1]["content"],
        answer["choices"][0]["message"]["content"]
    );

    // Every completion left a usage record: the `/v1` one, two stateless, one stored.
    let report = ok(app.call(Method::GET, "/v1/usage", &token).await, 200).await;
    assert_eq!(report["totals"]["requests"], json!(4), "{report}");
    app.stop().await;
}

tessera_store::on_both_databases!(one_dialect_one_pipeline);

#[tokio::test]
async fn errors_take_openai_shape_and_status() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let token = app.caller_token("chats:invoke models:read").await;
    let completions = "/openai/v1/chat/completions";
    let ask = |extra: Value| {
        let mut body = json!({"model": LOCAL, "messages": [{"role": "user", "content": "Hi"}],
                              "max_tokens": 4});
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };

    // Credentials: none, bad, and without the scope.
    let response = app
        .client
        .post(app.url(completions))
        .json(&ask(json!({})))
        .send()
        .await
        .unwrap();
    let error = openai_error(response, 401).await;
    assert_eq!(error["code"], "invalid_api_key");
    assert_eq!(error["type"], "authentication_error");
    let error = openai_error(
        app.call_json(Method::POST, completions, "not-a-token", &ask(json!({})))
            .await,
        401,
    )
    .await;
    assert_eq!(error["code"], "invalid_api_key");
    let reader = app.caller_token("models:read").await;
    let error = openai_error(
        app.call_json(Method::POST, completions, &reader, &ask(json!({})))
            .await,
        403,
    )
    .await;
    assert_eq!(error["type"], "permission_error");

    // Models: unknown, malformed, another organization's.
    let error = openai_error(
        app.call_json(
            Method::POST,
            completions,
            &token,
            &ask(json!({"model": "local/none"})),
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["code"], "model_not_found");
    let foreign = foreign_model(&app).await;
    let error = openai_error(
        app.call_json(
            Method::POST,
            completions,
            &token,
            &ask(json!({"model": foreign["id"]})),
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["code"], "model_not_found");
    let error = openai_error(
        app.call(
            Method::GET,
            &format!("/openai/v1/models/{}", foreign["id"].as_str().unwrap()),
            &token,
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["code"], "model_not_found");

    // Parameters: refused, not ignored, and named as the client sent them.
    for (extra, param) in [
        (json!({"n": 2}), "n"),
        (json!({"logprobs": true}), "logprobs"),
        (json!({"tool_choice": "required"}), "tool_choice"),
        (json!({"presence_penalty": 1.0}), "presence_penalty"),
        (json!({"unknown_option": 1}), ""),
        (json!({"temperature": 3}), "temperature"),
        (json!({"messages": []}), "messages"),
        (
            json!({"messages": [{"role": "system", "content": "Be brief."},
                                {"role": "assistant", "content": "Hello"}]}),
            "messages.1.role",
        ),
        (
            json!({"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
            ]}]}),
            "messages.0.content.0.image_url.url",
        ),
    ] {
        let error = openai_error(
            app.call_json(Method::POST, completions, &token, &ask(extra.clone()))
                .await,
            400,
        )
        .await;
        assert_eq!(error["type"], "invalid_request_error", "{extra}: {error}");
        if !param.is_empty() {
            assert_eq!(error["param"], param, "{extra}: {error}");
        }
    }
    let response = app
        .client
        .post(app.url(completions))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    openai_error(response, 400).await;
    // An image for a model without vision, in the dialect's terms.
    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n");
    let error = openai_error(
        app.call_json(
            Method::POST,
            completions,
            &token,
            &ask(json!({"messages": [{"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}}
            ]}]})),
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "messages.0.content");

    // Unknown paths under the dialect answer in its shape too.
    openai_error(
        app.call(Method::GET, "/openai/v1/assistants", &token).await,
        404,
    )
    .await;
    // `/v1` keeps problem+json.
    let response = app.call(Method::GET, "/v1/chats", "not-a-token").await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    app.stop().await;
}

#[tokio::test]
async fn models_and_embeddings_in_openai_shape() {
    let chat_model = model_dir();
    let app = knowledge_app_with(Backend::Sqlite, |settings| {
        settings.models.local_dir = Some(chat_model);
    })
    .await;
    let token = app
        .caller_token("models:read models:write chats:invoke usage:read")
        .await;
    let mine = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &token,
            &json!({"parentModelId": LOCAL, "displayName": "Mine"}),
        )
        .await,
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = ok(
        app.call(Method::GET, "/openai/v1/models", &token).await,
        200,
    )
    .await;
    assert_eq!(listed["object"], "list");
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["object"], "model");
            assert!(m["created"].as_i64().unwrap() > 0);
            m["id"].as_str().unwrap()
        })
        .collect();
    assert!(ids.contains(&LOCAL), "{ids:?}");
    assert!(ids.contains(&mine.as_str()), "{ids:?}");
    assert!(ids.contains(&"all-MiniLM-L6-v2"), "{ids:?}");
    assert!(
        !ids.contains(&"openai/gpt-4o"),
        "models without a provider are not offered"
    );
    let one = ok(
        app.call(Method::GET, &format!("/openai/v1/models/{LOCAL}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(one["id"], LOCAL);
    assert_eq!(one["owned_by"], "local");
    let own = ok(
        app.call(Method::GET, &format!("/openai/v1/models/{mine}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(own["id"], json!(mine));

    // Embeddings: floats of unit length; base64 of the same little-endian floats.
    let embeddings = "/openai/v1/embeddings";
    let floats = ok(
        app.call_json(
            Method::POST,
            embeddings,
            &token,
            &json!({"model": "all-MiniLM-L6-v2", "input": ["reset my password", "invoices"]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(floats["object"], "list");
    assert_eq!(floats["model"], "all-MiniLM-L6-v2");
    let first: Vec<f32> = floats["data"][0]["embedding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(first.len(), 384);
    let norm: f32 = first.iter().map(|v| v * v).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    assert_eq!(floats["data"][1]["index"], 1);
    let tokens = floats["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(tokens > 0);
    let encoded = ok(
        app.call_json(
            Method::POST,
            embeddings,
            &token,
            &json!({"model": "all-MiniLM-L6-v2", "input": "reset my password",
                    "encoding_format": "base64"}),
        )
        .await,
        200,
    )
    .await;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let decoded: Vec<f32> = bytes
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(decoded.len(), 384);
    let close = decoded
        .iter()
        .zip(&first)
        .all(|(a, b)| (a - b).abs() < 1e-4);
    assert!(close, "the same text embeds to the same vector");
    for (body, param) in [
        (
            json!({"model": "all-MiniLM-L6-v2", "input": "x", "dimensions": 128}),
            "dimensions",
        ),
        (
            json!({"model": "all-MiniLM-L6-v2", "input": [[1, 2, 3]]}),
            "input",
        ),
        (
            json!({"model": "all-MiniLM-L6-v2", "input": [""]}),
            "input.0",
        ),
    ] {
        let error = openai_error(
            app.call_json(Method::POST, embeddings, &token, &body).await,
            400,
        )
        .await;
        assert_eq!(error["param"], param, "{body}: {error}");
    }
    let error = openai_error(
        app.call_json(
            Method::POST,
            embeddings,
            &token,
            &json!({"model": LOCAL, "input": "x"}),
        )
        .await,
        404,
    )
    .await;
    assert_eq!(error["code"], "model_not_found");
    // Each embedding request is one usage record.
    let report = ok(app.call(Method::GET, "/v1/usage", &token).await, 200).await;
    assert_eq!(report["totals"]["requests"], json!(2), "{report}");
    app.stop().await;
}

/// A model of another organization.
pub async fn foreign_model(app: &TestApp) -> Value {
    let other = app.caller_token("models:write").await;
    ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &other,
            &json!({"parentModelId": LOCAL, "displayName": "Theirs"}),
        )
        .await,
        201,
    )
    .await
}

/// An API key of the organization of `admin`, holding `scopes`: its id and secret.
pub async fn api_key(app: &TestApp, admin: &str, body: Value) -> (String, String) {
    let key = ok(
        app.call_json(Method::POST, "/v1/api-keys", admin, &body)
            .await,
        201,
    )
    .await;
    (
        key["id"].as_str().unwrap().to_owned(),
        key["secret"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn api_keys_answer_in_the_dialect_of_the_path() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let admin = app
        .caller_token("org:admin models:read models:write chats:invoke")
        .await;
    let (key_id, key) = api_key(
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
    let completions = "/openai/v1/chat/completions";
    let ask = json!({"model": LOCAL, "messages": [{"role": "user", "content": "Hi"}],
                     "max_tokens": 2});
    ok(
        app.call_json(Method::POST, completions, &key, &ask).await,
        200,
    )
    .await;
    // Without the scope: 403 here, a problem on `/v1`.
    let error = openai_error(
        app.call_json(Method::POST, completions, &reader, &ask)
            .await,
        403,
    )
    .await;
    assert_eq!(error["code"], "insufficient_scope");
    let response = app
        .call_json(Method::POST, "/v1/chats", &reader, &json!({}))
        .await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    // Another organization's model: 404 `model_not_found`.
    let foreign = foreign_model(&app).await;
    let mut theirs = ask.clone();
    theirs["model"] = foreign["id"].clone();
    let error = openai_error(
        app.call_json(Method::POST, completions, &key, &theirs)
            .await,
        404,
    )
    .await;
    assert_eq!(error["code"], "model_not_found");
    // Revoked: the very next request is refused, in each dialect's shape.
    ok(
        app.call(Method::DELETE, &format!("/v1/api-keys/{key_id}"), &admin)
            .await,
        204,
    )
    .await;
    let error = openai_error(app.call(Method::GET, "/openai/v1/models", &key).await, 401).await;
    assert_eq!(error["code"], "invalid_api_key");
    let response = app.call(Method::GET, "/v1/organization", &key).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    // Expired: the same.
    let expires_at = chrono::Utc::now() + chrono::Duration::seconds(2);
    let (_, brief) = api_key(
        &app,
        &admin,
        json!({"name": "brief", "scopes": ["models:read"], "expiresAt": expires_at}),
    )
    .await;
    ok(
        app.call(Method::GET, "/openai/v1/models", &brief).await,
        200,
    )
    .await;
    let left = (expires_at - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(left + std::time::Duration::from_millis(300)).await;
    let error = openai_error(
        app.call(Method::GET, "/openai/v1/models", &brief).await,
        401,
    )
    .await;
    assert!(
        error["message"].as_str().unwrap().contains("expired"),
        "{error}"
    );
    app.stop().await;
}
