//! Embeddings from an OpenAI-compatible server instead of the embedded model: the real
//! application, configured with `knowledge.embedding_base_url`, sends every chunk to a real
//! LiteLLM proxy (whose mock answers one fixed vector per request), indexes what comes back
//! and searches it, on SQLite and PostgreSQL. Incomplete configurations stop start-up with
//! the key named.

use std::path::Path;

use serde_json::json;
use tessera_api::{config::Settings, startup::Application};
use tessera_llm_openai::testing::LiteLlm;
use tessera_store::Backend;

use crate::{processing::search, rag::dataset_with, support::TestApp};

const SCOPES: &str = "files:read files:write datasets:read datasets:write";

fn proxy_config() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/api/litellm.yaml"
    ))
}

fn remote(settings: &mut Settings, base_url: String) {
    settings.knowledge.embedding_base_url = Some(base_url);
    settings.knowledge.embedding_model = Some("mock-embed".into());
    settings.knowledge.embedding_dimensions = Some(3);
    // The mock answers one vector per request.
    settings.knowledge.embedding_batch_size = 1;
}

async fn files_are_embedded_by_an_openai_compatible_server(backend: Backend) {
    let proxy = LiteLlm::start_without_key(proxy_config()).await;
    let app = TestApp::spawn_with(backend, |settings| {
        settings.rate_limit.enabled = false;
        settings.knowledge.poll_secs = 1;
        remote(settings, format!("{}/v1", proxy.base_url));
        // Any set variable works as the key (the proxy asks for none); this one always is.
        settings.knowledge.embedding_api_key_env = Some("HOME".into());
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let dataset = dataset_with(
        &app,
        &token,
        "Handbook",
        &[
            (
                "refunds.md",
                b"# Refunds\n\nInvoices are refunded within 14 days of a written request.".to_vec(),
            ),
            (
                "parking.txt",
                b"Visitors park on level two of the garage behind the office.".to_vec(),
            ),
        ],
    )
    .await;
    let dataset = dataset.as_str();
    // Every chunk has the same (mock) vector, so dense search finds both files and hybrid
    // search ranks by the words.
    let dense = search(
        &app,
        &token,
        dataset,
        json!({"query": "anything", "mode": "dense"}),
    )
    .await;
    let found: std::collections::HashSet<&str> = dense
        .iter()
        .filter_map(|hit| hit["fileId"].as_str())
        .collect();
    assert_eq!(found.len(), 2, "{dense:?}");
    let hybrid = search(
        &app,
        &token,
        dataset,
        json!({"query": "when are invoices refunded"}),
    )
    .await;
    assert_eq!(hybrid[0]["fileName"], "refunds.md", "{hybrid:?}");
    app.stop().await;
}

tessera_store::on_both_databases!(files_are_embedded_by_an_openai_compatible_server);

#[tokio::test]
async fn incomplete_remote_embedding_settings_stop_start_up() {
    let data_dir = tempfile::tempdir().unwrap();
    let base = Settings {
        data_dir: data_dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Settings::default()
    };
    let mut no_model = base.clone();
    no_model.knowledge.embedding_base_url = Some("http://127.0.0.1:9/v1".into());
    let error = Application::build(no_model)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("knowledge.embedding_model"), "{error}");

    let mut no_key = base.clone();
    remote(&mut no_key, "http://127.0.0.1:9/v1".into());
    no_key.knowledge.embedding_api_key_env = Some("TESSERA_TEST_UNSET_EMBEDDING_KEY".into());
    let error = Application::build(no_key).await.err().unwrap().to_string();
    assert!(
        error.contains("TESSERA_TEST_UNSET_EMBEDDING_KEY"),
        "{error}"
    );

    let mut bad_url = base;
    remote(&mut bad_url, "ftp://example.com/v1".into());
    let error = Application::build(bad_url).await.err().unwrap().to_string();
    assert!(error.contains("knowledge.embedding_base_url"), "{error}");
}
