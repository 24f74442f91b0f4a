//! Files attached to chat messages, through the real HTTP stack on SQLite and PostgreSQL:
//! processed documents are inlined into the prompt of the embedded SmolLM2 (their tokens
//! count, and one too long for the window is refused), an image reaches a vision model
//! behind the LiteLLM proxy, and every file that cannot be attached is a 422 at its place,
//! or a 403 without `files:read`.

use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, model_dir},
    processing::{MARKDOWN, models_root, ready, settled, upload},
    support::{TestApp, ok, problem},
};

const SCOPES: &str = "files:read files:write chats:invoke chats:read";

/// A valid 1×1 PNG (the proxy may decode what it is sent).
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The embedded model and, behind the LiteLLM proxy, a vision model.
fn catalog(proxy: &str) -> String {
    format!(
        r#"
[providers.local]
kind = "local"
[providers.gateway]
kind = "openai"
base_url = "{proxy}/v1"
[[models]]
id = "{LOCAL}"
display_name = "SmolLM2"
provider = "local"
model_name = "SmolLM2-135M-Instruct.Q4_1.gguf"
context_window = 2048
max_tokens_per_request = 1024
capabilities = {{ streaming = true }}
[[models]]
id = "test/vision"
display_name = "Vision"
provider = "gateway"
model_name = "mock-vision"
context_window = 4096
capabilities = {{ streaming = true, vision = true }}
"#
    )
}

fn asking(model: &str, text: &str, files: &[&str]) -> Value {
    json!({
        "modelId": model,
        "messages": [{
            "role": "user",
            "content": text,
            "attachments": files.iter().map(|id| json!({"fileId": id})).collect::<Vec<_>>(),
        }],
        "maxTokens": 4,
        "temperature": 0
    })
}

async fn chat(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    app.call_json(Method::POST, "/v1/chats", token, body).await
}

/// Where and why a 422 refused the request: `(loc, type)` of each detail.
fn refusals(problem: &Value) -> Vec<(String, String)> {
    problem["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|detail| {
            let loc: Vec<String> = detail["loc"]
                .as_array()
                .unwrap()
                .iter()
                .map(|part| match part {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect();
            (loc.join("."), detail["type"].as_str().unwrap().to_owned())
        })
        .collect()
}

async fn files_attach_to_chat_messages(backend: Backend) {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/litellm.yaml");
    let proxy =
        tessera_llm_openai::testing::LiteLlm::start_without_key(std::path::Path::new(config)).await;
    let dir = tempfile::tempdir().unwrap();
    let catalog_file = dir.path().join("catalog.toml");
    std::fs::write(&catalog_file, catalog(&proxy.base_url)).unwrap();
    let (chat_model, embedding_model) = (model_dir(), models_root());
    let app = TestApp::spawn_with(backend, |settings| {
        settings.rate_limit.enabled = false;
        settings.models.local_dir = Some(chat_model);
        settings.models.catalog_file = Some(catalog_file);
        settings.knowledge.embedding_model_dir = Some(embedding_model);
        settings.knowledge.poll_secs = 1;
    })
    .await;
    let token = app.caller_token(SCOPES).await;

    let help = upload(&app, &token, "help.md", MARKDOWN.as_bytes().to_vec()).await;
    let help = ready(&app, &token, &help).await;
    let help_id = help["id"].as_str().unwrap();
    let long = upload(&app, &token, "long.txt", long_text().into_bytes()).await;
    let long = ready(&app, &token, &long).await;
    let broken = upload(&app, &token, "broken.pdf", b"%PDF-1.7\nnot a pdf".to_vec()).await;
    let broken = settled(&app, &token, broken["id"].as_str().unwrap()).await;
    assert_eq!(broken["status"], "failed", "{broken}");
    let pixel = base64::engine::general_purpose::STANDARD
        .decode(PIXEL_PNG)
        .unwrap();
    let image = upload_image(&app, &token, "pixel.png", pixel).await;
    let image_id = image["id"].as_str().unwrap();

    // A document is inlined: the same question costs its tokens more with it attached.
    let question = "How do I reset my password?";
    let plain = ok(chat(&app, &token, &asking(LOCAL, question, &[])).await, 201).await;
    let attached = ok(
        chat(&app, &token, &asking(LOCAL, question, &[help_id])).await,
        201,
    )
    .await;
    let input = |answer: &Value| answer["usage"]["inputTokens"].as_u64().unwrap();
    assert!(
        input(&attached) > input(&plain) + 40,
        "{} vs {}",
        input(&attached),
        input(&plain)
    );
    // The message keeps its text as written and names what it attached.
    let record = ok(
        app.call(
            Method::GET,
            &format!("/v1/chats/{}", attached["id"].as_str().unwrap()),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(record["messages"][0]["content"], question);
    assert_eq!(
        record["messages"][0]["attachments"],
        json!([{
            "fileId": help_id,
            "fileName": "help.md",
            "kind": "document",
            "mediaType": "text/markdown; charset=utf-8"
        }])
    );
    assert_eq!(record["messages"][1]["attachments"], json!([]));
    // Continuing the chat sends the attachment again (history is rebuilt every turn).
    let next = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({
                "chatId": attached["id"],
                "messages": [{"role": "user", "content": "Thanks."}],
                "maxTokens": 4,
                "temperature": 0
            }),
        )
        .await,
        200,
    )
    .await;
    assert!(input(&next) > input(&attached), "{next}");

    // A document longer than the model's window: its tokens are counted, and refused.
    let too_long = problem(
        chat(
            &app,
            &token,
            &asking(LOCAL, "Summarise.", &[long["id"].as_str().unwrap()]),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refusals(&too_long),
        [(
            "body.messages".to_owned(),
            "context_window_exceeded".to_owned()
        )]
    );

    // Every file that cannot be attached, at its place: an image for a model without
    // vision, a failed document, an unknown id, another organization's file.
    let other = app.caller_token(SCOPES).await;
    let foreign = upload_image(
        &app,
        &other,
        "theirs.png",
        b"\x89PNG\r\n\x1a\n....".to_vec(),
    )
    .await;
    let refused = problem(
        chat(
            &app,
            &token,
            &asking(
                LOCAL,
                "What is this?",
                &[
                    help_id,
                    image_id,
                    broken["id"].as_str().unwrap(),
                    "file_0193b0c4e5f67a8b9c0d1e2f3a4b5c6d",
                    foreign["id"].as_str().unwrap(),
                    "not-an-id",
                ],
            ),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    let at = |j: usize, kind: &str| {
        (
            format!("body.messages.0.attachments.{j}.fileId"),
            kind.to_owned(),
        )
    };
    assert_eq!(
        refusals(&refused),
        [
            at(1, "vision_unsupported"),
            at(2, "file_failed"),
            at(3, "not_found"),
            at(4, "not_found"),
            at(5, "not_found"),
        ]
    );
    // Only user messages attach, at most 10 files.
    let mut from_assistant = asking(LOCAL, "q", &[help_id]);
    from_assistant["messages"] = json!([
        {"role": "assistant", "content": "a", "attachments": [{"fileId": help_id}]},
        {"role": "user", "content": "q"}
    ]);
    let refused = problem(
        chat(&app, &token, &from_assistant).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refusals(&refused),
        [(
            "body.messages.0.attachments".to_owned(),
            "value_error".to_owned()
        )]
    );
    let refused = problem(
        chat(&app, &token, &asking(LOCAL, "q", &[help_id; 11])).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(refusals(&refused)[0].0, "body.messages.0.attachments");
    // Attaching reads files: `files:read` is needed besides `chats:invoke`.
    let chats_only = app.caller_token("chats:invoke chats:read").await;
    problem(
        chat(&app, &chats_only, &asking(LOCAL, "q", &[help_id])).await,
        403,
        "insufficient_scope",
    )
    .await;

    // An image goes to a vision model (through the OpenAI-compatible adapter and the
    // proxy) with a document beside it.
    let seen = ok(
        chat(
            &app,
            &token,
            &asking(
                "test/vision",
                "What is in the picture?",
                &[image_id, help_id],
            ),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(seen["message"]["content"], "A single pixel.");
    let record = ok(
        app.call(
            Method::GET,
            &format!("/v1/chats/{}", seen["id"].as_str().unwrap()),
            &token,
        )
        .await,
        200,
    )
    .await;
    let kinds: Vec<&Value> = record["messages"][0]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["kind"])
        .collect();
    assert_eq!(kinds, [&json!("image"), &json!("document")]);
    assert_eq!(
        record["messages"][0]["attachments"][0]["mediaType"],
        "image/png"
    );
    app.stop().await;
}

tessera_store::on_both_databases!(files_attach_to_chat_messages);

/// About 3,000 words: more than the 2048-token window holds.
fn long_text() -> String {
    (0..300)
        .map(|i| format!("Line {i}: the archive keeps every signed contract for ten years.\n"))
        .collect()
}

/// Images are `ready` at once.
async fn upload_image(app: &TestApp, token: &str, name: &str, content: Vec<u8>) -> Value {
    let file = ok(crate::files::upload(app, token, name, content).await, 201).await;
    assert_eq!(file["status"], "ready", "{file}");
    file
}
