//! Files and datasets through the real HTTP stack on SQLite and PostgreSQL: uploads checked
//! while they stream (size, extension, content, encoding), images ready at once, documents
//! queued, pagination, idempotent uploads, dataset validation and updates, scopes, and
//! another organization's records answering 404.

use reqwest::{
    Method,
    multipart::{Form, Part},
};
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::support::{TestApp, ok, problem};

const FILES_SCOPES: &str =
    "files:read files:write files:delete datasets:read datasets:write datasets:delete";

/// An app without an embedding model: uploads are stored, nothing is processed.
async fn storage_app(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |settings| {
        settings.rate_limit.enabled = false;
    })
    .await
}

pub async fn upload(app: &TestApp, token: &str, name: &str, content: Vec<u8>) -> reqwest::Response {
    let form = Form::new().part("file", Part::bytes(content).file_name(name.to_owned()));
    app.client
        .post(app.url("/v1/files"))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap()
}

async fn uploads_are_checked_before_anything_is_stored(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(FILES_SCOPES).await;
    let refused = problem(
        upload(&app, &token, "run.exe", b"MZ".to_vec()).await,
        415,
        "unsupported_file_type",
    )
    .await;
    assert!(refused["detail"].as_str().unwrap().contains(".exe"));
    problem(
        upload(&app, &token, "fake.pdf", b"MZ\x90\x00 not a pdf".to_vec()).await,
        415,
        "content_mismatch",
    )
    .await;
    problem(
        upload(&app, &token, "photo.png", b"GIF89a......".to_vec()).await,
        415,
        "content_mismatch",
    )
    .await;
    problem(
        upload(&app, &token, "notes.txt", b"caf\xe9 latin-1".to_vec()).await,
        415,
        "content_mismatch",
    )
    .await;
    let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
    big.resize(20 * 1024 * 1024 + 1, 0);
    let too_big = problem(
        upload(&app, &token, "huge.png", big).await,
        413,
        "file_too_large",
    )
    .await;
    assert_eq!(too_big["limitBytes"], 20 * 1024 * 1024);
    let empty = problem(
        upload(&app, &token, "empty.txt", Vec::new()).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(empty["detail"][0]["loc"], json!(["body", "file"]));

    let no_file = Form::new().text("note", "no file here");
    let response = app
        .client
        .post(app.url("/v1/files"))
        .bearer_auth(&token)
        .multipart(no_file)
        .send()
        .await
        .unwrap();
    problem(response, 422, "validation_failed").await;
    let no_name = Form::new().part("file", Part::bytes(b"text".to_vec()));
    let response = app
        .client
        .post(app.url("/v1/files"))
        .bearer_auth(&token)
        .multipart(no_name)
        .send()
        .await
        .unwrap();
    problem(response, 422, "validation_failed").await;
    let json_body = app
        .call_json(Method::POST, "/v1/files", &token, &json!({"file": "x"}))
        .await;
    problem(json_body, 415, "unsupported_media_type").await;

    let listed = ok(app.call(Method::GET, "/v1/files", &token).await, 200).await;
    assert_eq!(
        listed["totalCount"], 0,
        "nothing refused was stored: {listed}"
    );
    let blobs = app.settings.data_dir.join("blobs");
    let leftovers = std::fs::read_dir(blobs.join("tmp")).unwrap().count();
    assert_eq!(leftovers, 0, "refused uploads leave no temporary file");

    // An image is ready at once; a document without an embedding model waits, queued.
    let image = ok(
        upload(
            &app,
            &token,
            "pixel.gif",
            b"GIF89a\x01\x00\x01\x00".to_vec(),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(
        (&image["status"], &image["progress"]),
        (&json!("ready"), &json!(100))
    );
    let queued = ok(
        upload(&app, &token, "notes.txt", "plain text".into()).await,
        201,
    )
    .await;
    assert_eq!(queued["status"], "processing");
    problem(
        app.call(Method::GET, "/v1/files?status=done", &token).await,
        422,
        "validation_failed",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/files?cursor=garbage", &token)
            .await,
        422,
        "validation_failed",
    )
    .await;
    let page = ok(
        app.call(Method::GET, "/v1/files?limit=1", &token).await,
        200,
    )
    .await;
    assert_eq!(
        (&page["items"][0]["id"], &page["hasMore"]),
        (&queued["id"], &json!(true))
    );
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = ok(
        app.call(
            Method::GET,
            &format!("/v1/files?limit=1&cursor={cursor}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&rest["items"][0]["id"], &rest["hasMore"]),
        (&image["id"], &json!(false))
    );

    // Searching without an embedding model is 503, not a silent empty answer.
    let dataset = ok(
        app.call_json(Method::POST, "/v1/datasets", &token, &json!({"name": "D"}))
            .await,
        201,
    )
    .await;
    let path = format!("/v1/datasets/{}/search", dataset["id"].as_str().unwrap());
    problem(
        app.call_json(Method::POST, &path, &token, &json!({"query": "x"}))
            .await,
        503,
        "service_unavailable",
    )
    .await;
    let invalid = problem(
        app.call_json(
            Method::POST,
            &path,
            &token,
            &json!({"query": "", "limit": 0}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(
        invalid["detail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["loc"] == json!(["body", "limit"]))
    );
    app.stop().await;
}

async fn uploads_with_an_idempotency_key_are_stored_once(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(FILES_SCOPES).await;
    let send = || {
        let form = Form::new().part("file", Part::bytes(b"once".to_vec()).file_name("once.txt"));
        app.client
            .post(app.url("/v1/files"))
            .bearer_auth(&token)
            .header("Idempotency-Key", "upload-1")
            .multipart(form)
            .send()
    };
    let first = ok(send().await.unwrap(), 201).await;
    let replay = send().await.unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(ok(replay, 201).await["id"], first["id"]);
    let listed = ok(app.call(Method::GET, "/v1/files", &token).await, 200).await;
    assert_eq!(listed["totalCount"], 1);
    app.stop().await;
}

async fn bulk_delete_reports_each_file(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(FILES_SCOPES).await;
    let free = ok(
        upload(&app, &token, "free.md", b"# free".to_vec()).await,
        201,
    )
    .await;
    let held = ok(
        upload(&app, &token, "held.md", b"# held".to_vec()).await,
        201,
    )
    .await;
    let dataset = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": "Keep"}),
        )
        .await,
        201,
    )
    .await;
    ok(
        app.call_json(
            Method::POST,
            &format!("/v1/files/{}/associations", held["id"].as_str().unwrap()),
            &token,
            &json!({"datasetId": dataset["id"]}),
        )
        .await,
        201,
    )
    .await;
    let foreign = app.caller_token(FILES_SCOPES).await;
    let theirs = ok(
        upload(&app, &foreign, "theirs.md", b"# theirs".to_vec()).await,
        201,
    )
    .await;
    let report = ok(
        app.call_json(
            Method::POST,
            "/v1/files/bulk-delete",
            &token,
            &json!({"fileIds": [free["id"], held["id"], theirs["id"], "file_nonsense"]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(report["deleted"], json!([free["id"]]));
    let failed: Vec<(Value, Value)> = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["fileId"].clone(), f["code"].clone()))
        .collect();
    assert_eq!(
        failed,
        vec![
            (held["id"].clone(), json!("file_in_use")),
            (theirs["id"].clone(), json!("not_found")),
            (json!("file_nonsense"), json!("not_found")),
        ]
    );
    let mine = ok(app.call(Method::GET, "/v1/files", &token).await, 200).await;
    assert_eq!(mine["totalCount"], 1);
    let still = ok(app.call(Method::GET, "/v1/files", &foreign).await, 200).await;
    assert_eq!(still["totalCount"], 1, "another organization's file stays");
    problem(
        app.call_json(
            Method::POST,
            "/v1/files/bulk-delete",
            &token,
            &json!({"fileIds": []}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    let reader = app.caller_token("files:read files:write").await;
    problem(
        app.call_json(
            Method::POST,
            "/v1/files/bulk-delete",
            &reader,
            &json!({"fileIds": [free["id"]]}),
        )
        .await,
        403,
        "insufficient_scope",
    )
    .await;
    app.stop().await;
}

async fn scopes_and_organizations_fence_files_and_datasets(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(FILES_SCOPES).await;
    let file = ok(upload(&app, &token, "a.md", b"# A".to_vec()).await, 201).await;
    let file_id = file["id"].as_str().unwrap();
    let dataset = ok(
        app.call_json(Method::POST, "/v1/datasets", &token, &json!({"name": "D"}))
            .await,
        201,
    )
    .await;
    let dataset_id = dataset["id"].as_str().unwrap();

    let reader = app.caller_token("files:read datasets:read").await;
    problem(
        upload(&app, &reader, "b.md", b"# B".to_vec()).await,
        403,
        "insufficient_scope",
    )
    .await;
    let stranger = app.caller_token(FILES_SCOPES).await;
    for path in [
        format!("/v1/files/{file_id}"),
        format!("/v1/files/{file_id}/content"),
        format!("/v1/datasets/{dataset_id}"),
        format!("/v1/datasets/{dataset_id}/files"),
        format!("/v1/datasets/{dataset_id}/snapshots"),
    ] {
        problem(
            app.call(Method::GET, &path, &stranger).await,
            404,
            "not_found",
        )
        .await;
    }
    problem(
        app.call(Method::DELETE, &format!("/v1/files/{file_id}"), &stranger)
            .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(
            Method::DELETE,
            &format!("/v1/datasets/{dataset_id}"),
            &stranger,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call_json(
            Method::PATCH,
            &format!("/v1/datasets/{dataset_id}"),
            &stranger,
            &json!({"name": "Mine"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    // Neither side of an association may belong to another organization.
    let own = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &stranger,
            &json!({"name": "S"}),
        )
        .await,
        201,
    )
    .await;
    problem(
        app.call_json(
            Method::POST,
            &format!("/v1/files/{file_id}/associations"),
            &stranger,
            &json!({"datasetId": own["id"]}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call_json(
            Method::POST,
            &format!("/v1/files/{file_id}/associations"),
            &token,
            &json!({"datasetId": own["id"]}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let listed = ok(app.call(Method::GET, "/v1/datasets", &stranger).await, 200).await;
    assert_eq!(listed["totalCount"], 1);

    // Dataset validation and updates.
    let invalid = problem(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": " ", "extra": 1}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(!invalid["detail"].as_array().unwrap().is_empty());
    let renamed = ok(
        app.call_json(
            Method::PATCH,
            &format!("/v1/datasets/{dataset_id}"),
            &token,
            &json!({"name": "Renamed", "description": null}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &renamed["name"],
            &renamed["description"],
            &renamed["version"]
        ),
        (&json!("Renamed"), &Value::Null, &json!(1))
    );
    app.stop().await;
}

tessera_store::on_both_databases!(
    uploads_are_checked_before_anything_is_stored,
    uploads_with_an_idempotency_key_are_stored_once,
    bulk_delete_reports_each_file,
    scopes_and_organizations_fence_files_and_datasets,
);
