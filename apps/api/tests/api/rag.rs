//! Retrieval-augmented chats through the real HTTP stack on SQLite and PostgreSQL: datasets
//! linked to a user model (`rag` and `context`), validated and scoped; a chat on the model
//! answers with the passages it was given as `sources`, in JSON and in both stream formats
//! (the AI SDK one checked by the real `ai` package); links go with their dataset.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, ai_sdk_check, chunks, model_dir},
    processing::{MARKDOWN, knowledge_app_with, ready, upload},
    support::{TestApp, ok, problem},
};

const SCOPES: &str = "files:read files:write datasets:read datasets:write datasets:delete \
models:read models:write chats:invoke chats:read";

async fn rag_app(backend: Backend) -> TestApp {
    let chat_model = model_dir();
    knowledge_app_with(backend, |settings| {
        settings.models.local_dir = Some(chat_model);
    })
    .await
}

pub async fn dataset_with(
    app: &TestApp,
    token: &str,
    name: &str,
    files: &[(&str, Vec<u8>)],
) -> String {
    let dataset = ok(
        app.call_json(Method::POST, "/v1/datasets", token, &json!({"name": name}))
            .await,
        201,
    )
    .await;
    let dataset = dataset["id"].as_str().unwrap().to_owned();
    for (file_name, content) in files {
        let file = upload(app, token, file_name, content.clone()).await;
        ready(app, token, &file).await;
        ok(
            app.call_json(
                Method::POST,
                &format!("/v1/files/{}/associations", file["id"].as_str().unwrap()),
                token,
                &json!({"datasetId": dataset}),
            )
            .await,
            201,
        )
        .await;
    }
    dataset
}

pub async fn link(app: &TestApp, token: &str, model: &str, body: Value) -> reqwest::Response {
    app.call_json(
        Method::POST,
        &format!("/v1/models/{model}/datasets"),
        token,
        &body,
    )
    .await
}

pub fn question(model: &str, text: &str) -> Value {
    json!({
        "modelId": model,
        "messages": [{"role": "user", "content": text}],
        "maxTokens": 8,
        "temperature": 0
    })
}

/// About 2,600 words: more than a 2048-token model can read whole.
fn long_document() -> Vec<u8> {
    (0..130)
        .map(|i| {
            format!("Paragraph {i}: the archive keeps every signed contract for ten years.\n\n")
        })
        .collect::<String>()
        .repeat(2)
        .into_bytes()
}

async fn chats_on_a_model_with_datasets_cite_their_sources(backend: Backend) {
    let app = rag_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let help = dataset_with(
        &app,
        &token,
        "Help",
        &[("help.md", MARKDOWN.as_bytes().to_vec())],
    )
    .await;
    let archive = dataset_with(&app, &token, "Archive", &[("archive.txt", long_document())]).await;
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &token,
            &json!({"parentModelId": LOCAL, "displayName": "Helpdesk"}),
        )
        .await,
        201,
    )
    .await;
    let model = model["id"].as_str().unwrap().to_owned();

    // Links: created, listed, re-linked with another usage, validated.
    let created = ok(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": help, "usageType": "rag"}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(
        (
            &created["modelId"],
            &created["datasetId"],
            &created["usageType"]
        ),
        (&json!(model), &json!(help), &json!("rag"))
    );
    let relinked = ok(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": help, "usageType": "context"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(relinked["usageType"], "context");
    let too_large = problem(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": archive, "usageType": "context"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(too_large["detail"][0]["loc"], json!(["body", "usageType"]));
    assert_eq!(too_large["detail"][0]["type"], "context_too_large");
    let unknown = problem(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": "dst_0190f5c1a3e27c3d9b1e4a0c5d6e7f80", "usageType": "rag"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(unknown["detail"][0]["loc"], json!(["body", "datasetId"]));
    let bad_usage = problem(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": help, "usageType": "always"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(bad_usage["detail"][0]["loc"], json!(["body", "usageType"]));
    ok(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": help, "usageType": "rag"}),
        )
        .await,
        200,
    )
    .await;
    ok(
        link(
            &app,
            &token,
            &model,
            json!({"datasetId": archive, "usageType": "rag"}),
        )
        .await,
        201,
    )
    .await;
    let listed = ok(
        app.call(Method::GET, &format!("/v1/models/{model}/datasets"), &token)
            .await,
        200,
    )
    .await;
    let linked: Vec<&Value> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["datasetId"])
        .collect();
    assert_eq!(linked, [&json!(help), &json!(archive)]);

    // A chat on the model is given the passages that answer the question, and cites them.
    let answer = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &question(&model, "How do I reset my password?"),
        )
        .await,
        201,
    )
    .await;
    let sources = answer["message"]["sources"].as_array().unwrap();
    assert!(!sources.is_empty(), "{answer}");
    assert_eq!(sources[0]["datasetId"], json!(help), "{sources:#?}");
    assert!(sources[0]["title"].as_str().unwrap().starts_with("help.md"));
    assert_eq!(sources[0]["fileName"], "help.md", "{sources:#?}");
    let location = &sources[0]["location"];
    let (start, end) = (
        location["charStart"].as_u64().unwrap(),
        location["charEnd"].as_u64().unwrap(),
    );
    assert!(start < end, "{location}");
    assert!(
        location["section"].is_string(),
        "a markdown passage is under a heading: {location}"
    );
    assert!(
        sources[0]["text"]
            .as_str()
            .unwrap()
            .contains("Reset password")
    );
    let chat = answer["id"].as_str().unwrap();
    let stored = ok(
        app.call(Method::GET, &format!("/v1/chats/{chat}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        stored["messages"][1]["sources"],
        answer["message"]["sources"]
    );

    // Both stream formats carry the sources.
    let mut streamed = question(&model, "How do I reset my password?");
    streamed["stream"] = json!(true);
    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&token)
        .json(&streamed)
        .send()
        .await
        .unwrap();
    let events = chunks(&response.text().await.unwrap());
    let cited = events
        .iter()
        .find_map(|chunk| chunk["sources"].as_array())
        .unwrap();
    assert_eq!(cited[0]["datasetId"], json!(help));
    let response = app
        .client
        .post(app.url("/v1/chats"))
        .bearer_auth(&token)
        .header("X-Stream-Format", "ai-sdk")
        .json(&streamed)
        .send()
        .await
        .unwrap();
    let parsed = ai_sdk_check(&response.text().await.unwrap()).await;
    let documents: Vec<&Value> = parsed["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == "source-document")
        .collect();
    assert!(!documents.is_empty(), "{parsed}");
    assert!(
        documents[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("help.md")
    );
    assert_eq!(documents[0]["filename"], "help.md", "{parsed}");

    // Links are the model's organization's; they go with their dataset.
    let other = app.caller_token(SCOPES).await;
    problem(
        app.call(Method::GET, &format!("/v1/models/{model}/datasets"), &other)
            .await,
        404,
        "not_found",
    )
    .await;
    problem(
        link(
            &app,
            &other,
            &model,
            json!({"datasetId": help, "usageType": "rag"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let reader = app.caller_token("models:read").await;
    problem(
        link(
            &app,
            &reader,
            &model,
            json!({"datasetId": help, "usageType": "rag"}),
        )
        .await,
        403,
        "insufficient_scope",
    )
    .await;
    ok(
        app.call(
            Method::DELETE,
            &format!("/v1/models/{model}/datasets/{archive}"),
            &token,
        )
        .await,
        204,
    )
    .await;
    problem(
        app.call(
            Method::DELETE,
            &format!("/v1/models/{model}/datasets/{archive}"),
            &token,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    ok(
        app.call(Method::DELETE, &format!("/v1/datasets/{help}"), &token)
            .await,
        204,
    )
    .await;
    let listed = ok(
        app.call(Method::GET, &format!("/v1/models/{model}/datasets"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(listed["items"], json!([]));
    app.stop().await;
}

tessera_store::on_both_databases!(chats_on_a_model_with_datasets_cite_their_sources);
