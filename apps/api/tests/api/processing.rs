//! File processing end to end, through the real HTTP stack on SQLite and PostgreSQL with the
//! real embedding model (all-MiniLM-L6-v2, fetched by `just models`) and the embedded
//! qdrant-edge index: every document type is extracted, chunked, embedded and indexed by the
//! in-process workers; search finds the right chunk, follows dataset membership and
//! snapshots, stays inside the organization; broken documents end `failed` with a reason.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use reqwest::{
    Method,
    multipart::{Form, Part},
};
use serde_json::{Value, json};
use tessera_documents::testing::{document_xml, docx, paragraph, pdf_bytes};
use tessera_store::Backend;

use crate::support::{TestApp, ok, problem};

const SCOPES: &str =
    "files:read files:write files:delete datasets:read datasets:write datasets:delete";

/// The folder `just models` fills; the embedding model is found anywhere below it.
pub fn models_root() -> PathBuf {
    let root = std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tessera-models"),
        PathBuf::from,
    );
    assert!(
        tessera_embed_local::find_model_dir(&root).is_some(),
        "all-MiniLM-L6-v2 is not under {}: run `just models`",
        root.display()
    );
    root
}

async fn knowledge_app(backend: Backend) -> TestApp {
    knowledge_app_with(backend, |_| {}).await
}

/// The app with the embedding model, settings adjusted by `customize`.
pub async fn knowledge_app_with(
    backend: Backend,
    customize: impl FnOnce(&mut tessera_api::config::Settings),
) -> TestApp {
    let models = models_root();
    TestApp::spawn_with(backend, |settings| {
        settings.rate_limit.enabled = false;
        settings.knowledge.embedding_model_dir = Some(models);
        settings.knowledge.poll_secs = 1;
        customize(settings);
    })
    .await
}

/// Uploads `content` as `name` and returns the stored file as answered (any status).
pub async fn upload_any(app: &TestApp, token: &str, name: &str, content: Vec<u8>) -> Value {
    let form = Form::new().part("file", Part::bytes(content).file_name(name.to_owned()));
    let response = app
        .client
        .post(app.url("/v1/files"))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    ok(response, 201).await
}

/// Uploads a document, which is queued for processing.
pub async fn upload(app: &TestApp, token: &str, name: &str, content: Vec<u8>) -> Value {
    let file = upload_any(app, token, name, content).await;
    assert_eq!(file["status"], "processing", "{file}");
    file
}

/// Polls the file until processing ends (`ready` or `failed`).
pub async fn settled(app: &TestApp, token: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let file = ok(
            app.call(Method::GET, &format!("/v1/files/{id}"), token)
                .await,
            200,
        )
        .await;
        if file["status"] != "processing" {
            return file;
        }
        assert!(Instant::now() < deadline, "still processing: {file}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub async fn ready(app: &TestApp, token: &str, file: &Value) -> Value {
    let done = settled(app, token, file["id"].as_str().unwrap()).await;
    assert_eq!(
        (&done["status"], &done["progress"], &done["error"]),
        (&json!("ready"), &json!(100), &Value::Null),
        "{done}"
    );
    assert!(done["chunkCount"].as_u64().unwrap() > 0, "{done}");
    done
}

pub async fn search(app: &TestApp, token: &str, dataset: &str, body: Value) -> Vec<Value> {
    let found = ok(
        app.call_json(
            Method::POST,
            &format!("/v1/datasets/{dataset}/search"),
            token,
            &body,
        )
        .await,
        200,
    )
    .await;
    found["items"].as_array().unwrap().clone()
}

fn top_file(hits: &[Value]) -> &str {
    hits.first()
        .and_then(|hit| hit["fileId"].as_str())
        .unwrap_or("<no hit>")
}

fn pdf_fixture() -> Vec<u8> {
    pdf_bytes(&[
        vec![
            "Shipping policy".into(),
            "Orders ship within two days.".into(),
        ],
        vec![
            "Returns".into(),
            "Unused items may be returned within 30 days for a full refund.".into(),
        ],
    ])
}

fn docx_fixture() -> Vec<u8> {
    let body = [
        paragraph(Some("Heading1"), "Parental leave"),
        paragraph(
            None,
            "Employees are entitled to sixteen weeks of paid parental leave after the birth or adoption of a child.",
        ),
    ]
    .concat();
    docx(&document_xml(&body), None)
}

pub const MARKDOWN: &str = "# Account help\n\n## Passwords\n\nTo reset your password, open Settings, \
choose Security and click Reset password. A link is sent to your e-mail address.\n\n## Billing\n\n\
Invoices are sent on the first day of each month.\n";
const CSV: &str = "product,price,colour\nKettle,35,steel\nToaster,49,red\nTelescope,899,black\n";
const TEXT: &str =
    "The office is closed on public holidays. Visitors must sign in at the front desk.";
const JSON: &str =
    r#"{"api": {"rateLimit": "Our API allows 600 requests per minute per organization."}}"#;

async fn every_document_type_is_processed_and_found(backend: Backend) {
    let app = knowledge_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let uploads = [
        ("help.md", MARKDOWN.as_bytes().to_vec()),
        ("prices.csv", CSV.as_bytes().to_vec()),
        ("office.txt", TEXT.as_bytes().to_vec()),
        ("limits.json", JSON.as_bytes().to_vec()),
        ("policy.pdf", pdf_fixture()),
        ("handbook.docx", docx_fixture()),
    ];
    let mut ids = Vec::new();
    for (name, content) in uploads {
        let file = upload(&app, &token, name, content).await;
        ids.push(file["id"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        ready(&app, &token, &json!({"id": id})).await;
    }
    let [md, csv, txt, json_file, pdf, docx] = ids.as_slice() else {
        unreachable!()
    };

    let dataset = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": "Help"}),
        )
        .await,
        201,
    )
    .await;
    let dataset = dataset["id"].as_str().unwrap().to_owned();
    for id in &ids {
        ok(
            app.call_json(
                Method::POST,
                &format!("/v1/files/{id}/associations"),
                &token,
                &json!({"datasetId": dataset}),
            )
            .await,
            201,
        )
        .await;
    }

    // Each question's best chunk comes from the document that answers it.
    let questions = [
        ("How do I change my password?", md),
        ("How much does the toaster cost?", csv),
        ("When is the office closed?", txt),
        ("How many API requests per minute are allowed?", json_file),
        ("Can I return an item for a refund?", pdf),
        ("How long is paid parental leave?", docx),
    ];
    for (question, expected) in questions {
        let hits = search(
            &app,
            &token,
            &dataset,
            json!({"query": question, "limit": 3}),
        )
        .await;
        assert_eq!(top_file(&hits), expected.as_str(), "{question}: {hits:#?}");
    }

    // A hit says where it is: the PDF's page, the markdown's section, character offsets.
    let refund = search(
        &app,
        &token,
        &dataset,
        json!({"query": "refund within 30 days", "limit": 1}),
    )
    .await;
    assert_eq!(
        (&refund[0]["fileName"], &refund[0]["page"]),
        (&json!("policy.pdf"), &json!(2)),
        "{refund:#?}"
    );
    assert!(refund[0]["text"].as_str().unwrap().contains("30 days"));
    assert!(refund[0]["score"].as_f64().unwrap() > 0.0);
    let password = search(
        &app,
        &token,
        &dataset,
        json!({"query": "reset password link", "limit": 1}),
    )
    .await;
    // The whole page is one chunk, under its top heading.
    assert_eq!(password[0]["section"], "Account help", "{password:#?}");
    assert!(password[0]["charEnd"].as_u64() > password[0]["charStart"].as_u64());

    // Words only, and meaning only.
    let words = search(
        &app,
        &token,
        &dataset,
        json!({"query": "Telescope", "mode": "sparse"}),
    )
    .await;
    assert_eq!(top_file(&words), csv.as_str(), "{words:#?}");
    assert!(
        words.iter().all(|hit| hit["fileId"] == json!(csv)),
        "only files with the word"
    );
    let meaning = search(
        &app,
        &token,
        &dataset,
        json!({"query": "forgot my login secret", "mode": "dense"}),
    )
    .await;
    assert_eq!(top_file(&meaning), md.as_str(), "{meaning:#?}");
    let bad_mode = problem(
        app.call_json(
            Method::POST,
            &format!("/v1/datasets/{dataset}/search"),
            &token,
            &json!({"query": "x", "mode": "fuzzy"}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(bad_mode["detail"][0]["loc"], json!(["body", "mode"]));

    // A file filter keeps the search inside the named files.
    let filtered = search(
        &app,
        &token,
        &dataset,
        json!({"query": "How do I change my password?", "fileIds": [txt]}),
    )
    .await;
    assert!(
        filtered.iter().all(|hit| hit["fileId"] == json!(txt)),
        "{filtered:#?}"
    );

    // A snapshot keeps searching what it froze after the dataset changes.
    let snapshot = ok(
        app.call(
            Method::POST,
            &format!("/v1/datasets/{dataset}/snapshots"),
            &token,
        )
        .await,
        201,
    )
    .await;
    let version = snapshot["version"].as_u64().unwrap();
    ok(
        app.call(
            Method::DELETE,
            &format!("/v1/files/{md}/associations/{dataset}"),
            &token,
        )
        .await,
        204,
    )
    .await;
    let now = search(
        &app,
        &token,
        &dataset,
        json!({"query": "How do I change my password?"}),
    )
    .await;
    assert!(now.iter().all(|hit| hit["fileId"] != json!(md)), "{now:#?}");
    let then = search(
        &app,
        &token,
        &dataset,
        json!({"query": "How do I change my password?", "version": version}),
    )
    .await;
    assert_eq!(top_file(&then), md.as_str());
    let never = problem(
        app.call_json(
            Method::POST,
            &format!("/v1/datasets/{dataset}/search"),
            &token,
            &json!({"query": "password", "version": 999}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(never["detail"][0]["loc"], json!(["body", "version"]));

    // A file a dataset holds cannot be deleted; one no dataset holds can, with its chunks.
    let in_use = problem(
        app.call(Method::DELETE, &format!("/v1/files/{txt}"), &token)
            .await,
        409,
        "file_in_use",
    )
    .await;
    assert!(
        in_use["detail"].as_str().unwrap().contains("Help"),
        "{in_use}"
    );
    let extra = upload(
        &app,
        &token,
        "extra.txt",
        b"Kettles boil water quickly.".to_vec(),
    )
    .await;
    let extra_id = extra["id"].as_str().unwrap().to_owned();
    ready(&app, &token, &extra).await;
    ok(
        app.call(Method::DELETE, &format!("/v1/files/{extra_id}"), &token)
            .await,
        204,
    )
    .await;
    problem(
        app.call(Method::GET, &format!("/v1/files/{extra_id}"), &token)
            .await,
        404,
        "not_found",
    )
    .await;

    // Another organization's dataset searches only its own files.
    let other = app.caller_token(SCOPES).await;
    let theirs = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &other,
            &json!({"name": "Help"}),
        )
        .await,
        201,
    )
    .await;
    let theirs = theirs["id"].as_str().unwrap();
    assert!(
        search(&app, &other, theirs, json!({"query": "password"}))
            .await
            .is_empty()
    );
    problem(
        app.call_json(
            Method::POST,
            &format!("/v1/datasets/{dataset}/search"),
            &other,
            &json!({"query": "password"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    app.stop().await;
}

async fn broken_documents_fail_with_a_reason(backend: Backend) {
    let app = knowledge_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let broken = [
        (
            "broken.pdf",
            b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage".to_vec(),
        ),
        ("broken.json", b"{\"unterminated\": [1, 2".to_vec()),
        (
            "broken.docx",
            b"PK\x03\x04 this is not a zip archive".to_vec(),
        ),
        ("blank.txt", b"   \n\n  ".to_vec()),
    ];
    for (name, content) in broken {
        let file = upload(&app, &token, name, content).await;
        let done = settled(&app, &token, file["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "failed", "{name}: {done}");
        let reason = done["error"].as_str().unwrap_or_default();
        assert!(!reason.is_empty(), "{name}: {done}");
        assert_eq!(done["chunkCount"], 0, "{name}: {done}");
    }
    app.stop().await;
}

/// Text that takes many more word pieces than `cl100k_base` tokens: code (about 1.5 times
/// as many; prose takes about as many).
fn word_piece_heavy() -> String {
    (0..60)
        .map(|i| {
            format!(
                "fn step_{i}() {{ let values: Vec<u32> = (0..{i}).map(|v| v * 2).collect(); \
                 println!(\"{{values:?}}\"); }}"
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn chunks_are_sized_in_the_embedding_models_word_pieces(backend: Backend) {
    // More than either embedded model reads of one text (254 or 510 word pieces).
    let app = knowledge_app_with(backend, |settings| {
        settings.knowledge.chunk_tokens = 600;
        settings.knowledge.chunk_overlap_tokens = 0;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let file = upload(&app, &token, "samples.txt", word_piece_heavy().into_bytes()).await;
    let file = ready(&app, &token, &file).await;
    let id = file["id"].as_str().unwrap();
    let column = |expression: &str| {
        format!(
            "SELECT {expression} AS value FROM file_chunks WHERE file_id = '{id}' ORDER BY ordinal"
        )
    };
    let database = &app.state.database;
    let counts =
        tessera_store::testing::text_rows(database, &column("CAST(token_count AS TEXT)")).await;
    let texts = tessera_store::testing::text_rows(database, &column("text")).await;
    assert!(texts.len() >= 3, "{} chunks", texts.len());
    let embedder = app.state.knowledge.embedder.clone().unwrap();
    let window = match embedder.model() {
        "all-MiniLM-L6-v2" => 254,
        "bge-small-en-v1.5" => 510,
        other => panic!("an embedded model was expected, not {other}"),
    };
    let cl100k =
        tessera_tokenizer::TiktokenCounter::new(tessera_tokenizer::Encoding::Cl100kBase).unwrap();
    for (count, text) in counts.iter().zip(&texts) {
        let count: usize = count.parse().unwrap();
        // What the model reads of the chunk, less its two special tokens: all of it.
        let read = embedder.count_tokens(text).unwrap() as usize - 2;
        assert_eq!(count, read, "{text}");
        assert!(count <= window, "{count} word pieces: {text}");
        // Counted in word pieces, not in cl100k_base tokens (fewer for this text).
        assert!(cl100k.encode(text).len() < count, "{text}");
    }
    let longest = counts
        .iter()
        .map(|count| count.parse::<usize>().unwrap())
        .max();
    assert!(
        longest > Some(window * 4 / 5),
        "chunks fill the window: {counts:?}"
    );
    app.stop().await;
}

tessera_store::on_both_databases!(
    every_document_type_is_processed_and_found,
    broken_documents_fail_with_a_reason,
    chunks_are_sized_in_the_embedding_models_word_pieces,
);
