//! Scanned PDFs end to end (issue 37): pages without a text layer are read by OCR
//! (Tesseract, installed by `.ci/run`) in the processing workers, indexed with their page
//! number and found by search; a PDF whose page images are damaged fails with the reason
//! while the server stays healthy; with `knowledge.ocr = "off"` such pages are skipped.

use serde_json::{Value, json};
use tessera_api::config::{Settings, Switch};
use tessera_api::startup::Application;
use tessera_documents::testing::{ScanPage, scanned_pdf};
use tessera_store::Backend;

use crate::processing::{knowledge_app_with, models_root, ready, search, settled, upload};
use crate::rag::dataset_with;

const SCOPES: &str = "files:read files:write datasets:read datasets:write";
const TYPED: &str = "Invoices are archived for ten years in the basement vault.";
const SCANNED: &str = "The lighthouse keeper counted seventeen ships before dawn.";

fn mixed_pdf() -> Vec<u8> {
    scanned_pdf(&[
        ScanPage::Text(vec![TYPED.to_owned()]),
        ScanPage::Scanned(vec![SCANNED.to_owned()]),
    ])
}

async fn a_scanned_page_is_read_by_ocr_and_found_on_its_page(backend: Backend) {
    let app = knowledge_app_with(backend, |_| {}).await;
    let token = app.caller_token(SCOPES).await;
    let dataset = dataset_with(&app, &token, "Scans", &[("archive.pdf", mixed_pdf())]).await;

    let hits = search(
        &app,
        &token,
        &dataset,
        json!({"query": "How many ships did the lighthouse keeper count?", "limit": 2}),
    )
    .await;
    let top = &hits[0];
    assert_eq!(top["page"], 2, "{hits:#?}");
    let text = top["text"].as_str().unwrap().to_lowercase();
    assert!(text.contains("seventeen ships"), "{hits:#?}");
    let hits = search(
        &app,
        &token,
        &dataset,
        json!({"query": "How long are invoices archived?", "limit": 2}),
    )
    .await;
    assert_eq!(
        (&hits[0]["page"], &hits[0]["text"]),
        (&json!(1), &json!(TYPED)),
        "{hits:#?}"
    );
    app.stop().await;
}

async fn damaged_scans_fail_with_the_reason_and_the_server_stays_healthy(backend: Backend) {
    let app = knowledge_app_with(backend, |_| {}).await;
    let token = app.caller_token(SCOPES).await;
    let file = upload(
        &app,
        &token,
        "damaged.pdf",
        scanned_pdf(&[ScanPage::CorruptImage, ScanPage::CorruptImage]),
    )
    .await;
    let done = settled(&app, &token, file["id"].as_str().unwrap()).await;
    assert_eq!(
        (&done["status"], &done["error"], &done["chunkCount"]),
        (
            &json!("failed"),
            &json!(
                "the document is damaged and cannot be read: no page's text could be read \
                 (page 1: its image is damaged: not a JPEG image; page 2: its image is \
                 damaged: not a JPEG image)"
            ),
            &json!(0)
        ),
        "{done}"
    );
    let health = app
        .client
        .get(app.url("/v1/health/ready"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // The next file is processed as usual.
    let file = upload(&app, &token, "archive.pdf", mixed_pdf()).await;
    ready(&app, &token, &file).await;
    app.stop().await;
}

async fn with_ocr_off_scanned_pages_are_skipped(backend: Backend) {
    let app = knowledge_app_with(backend, |settings| {
        settings.knowledge.ocr = Switch::Off;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let file = upload(&app, &token, "archive.pdf", mixed_pdf()).await;
    let done: Value = ready(&app, &token, &file).await;
    assert_eq!(done["chunkCount"], 1, "the typed page alone: {done}");
    let scan = upload(
        &app,
        &token,
        "scan.pdf",
        scanned_pdf(&[ScanPage::Scanned(vec![SCANNED.to_owned()])]),
    )
    .await;
    let done = settled(&app, &token, scan["id"].as_str().unwrap()).await;
    assert_eq!(
        (&done["status"], &done["error"]),
        (&json!("failed"), &json!("the document contains no text")),
        "{done}"
    );
    app.stop().await;
}

/// `ocr = "on"` refuses to start without what it needs; `auto` starts and skips such pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocr_on_without_its_language_stops_start_up() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut settings = Settings {
        data_dir: data_dir.path().to_path_buf(),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Settings::default()
    };
    settings.knowledge.embedding_model_dir = Some(models_root());
    settings.knowledge.ocr = Switch::On;
    settings.knowledge.ocr_languages = "eng+xyz".into();
    let error = Application::build(settings.clone())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("knowledge.ocr = \"on\"") && error.contains("xyz"),
        "{error}"
    );
    settings.knowledge.ocr = Switch::Auto;
    assert!(Application::build(settings).await.is_ok());
}

tessera_store::on_both_databases!(a_scanned_page_is_read_by_ocr_and_found_on_its_page);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_scans_fail_with_the_reason_and_the_server_stays_healthy_on_sqlite() {
    damaged_scans_fail_with_the_reason_and_the_server_stays_healthy(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_ocr_off_scanned_pages_are_skipped_on_sqlite() {
    with_ocr_off_scanned_pages_are_skipped(Backend::Sqlite).await;
}
