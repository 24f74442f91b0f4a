//! `/openai/v1/files` and `/openai/v1/vector_stores` through the real HTTP stack on SQLite
//! and PostgreSQL (the official `openai` package's run is in `openai_clients`): a purpose
//! named before or after the content, a refused or missing purpose storing nothing, the
//! purpose filter, a vector store being the dataset `/v1` serves, attributes and filters,
//! file batches and their cancellation, expiry (`expires_after`, an expired store refused
//! for use but kept), what is not supported refused by name, a file held
//! by a store kept, scopes, and another organization's records answering 404, every error
//! in OpenAI's shape.

use reqwest::{
    Method,
    multipart::{Form, Part},
};
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    openai::openai_error,
    support::{TestApp, ok},
};

const SCOPES: &str =
    "files:read files:write files:delete datasets:read datasets:write datasets:delete";

/// An app without an embedding model: uploads are stored, nothing is processed.
async fn storage_app(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |settings| {
        settings.rate_limit.enabled = false;
    })
    .await
}

/// Posts a multipart form of `(name, file name, bytes)` parts, in order.
pub(crate) async fn post_form(
    app: &TestApp,
    token: &str,
    parts: &[(&str, Option<&str>, &[u8])],
) -> reqwest::Response {
    let mut form = Form::new();
    for (name, file_name, bytes) in parts {
        let mut part = Part::bytes(bytes.to_vec());
        if let Some(file_name) = file_name {
            part = part.file_name((*file_name).to_owned());
        }
        form = form.part((*name).to_owned(), part);
    }
    app.client
        .post(app.url("/openai/v1/files"))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap()
}

/// Uploads `text` as `name` for `purpose` (the purpose part first).
async fn upload(app: &TestApp, token: &str, name: &str, purpose: &str) -> Value {
    let text = format!("{name}: a few words to keep.");
    ok(
        post_form(
            app,
            token,
            &[
                ("purpose", None, purpose.as_bytes()),
                ("file", Some(name), text.as_bytes()),
            ],
        )
        .await,
        200,
    )
    .await
}

/// How many files the organization has, as `/v1/files` counts them.
async fn file_count(app: &TestApp, token: &str) -> u64 {
    let files = ok(app.call(Method::GET, "/v1/files", token).await, 200).await;
    files["totalCount"].as_u64().unwrap()
}

fn ids(list: &Value) -> Vec<&str> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect()
}

async fn files_keep_their_purpose_and_a_refused_one_stores_nothing(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let first = upload(&app, &token, "first.txt", "assistants").await;
    assert_eq!(
        (&first["object"], &first["purpose"], &first["status"]),
        (&json!("file"), &json!("assistants"), &json!("uploaded")),
        "{first}"
    );
    assert_eq!(first["bytes"], "first.txt: a few words to keep.".len());
    // The purpose after the content (as the Node SDK sends a `{file, purpose}` object).
    let after = ok(
        post_form(
            &app,
            &token,
            &[
                (
                    "file",
                    Some("after.md"),
                    b"# After\n\nThe purpose comes last.",
                ),
                ("purpose", None, b"user_data"),
            ],
        )
        .await,
        200,
    )
    .await;
    assert_eq!(after["purpose"], "user_data", "{after}");
    let retrieved = ok(
        app.call(
            Method::GET,
            &format!("/openai/v1/files/{}", after["id"].as_str().unwrap()),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(retrieved["purpose"], "user_data", "{retrieved}");
    assert_eq!(file_count(&app, &token).await, 2);

    // Refused or missing purposes, before or after the content: nothing is stored.
    for parts in [
        vec![
            ("purpose", None, &b"batch_output"[..]),
            ("file", Some("a.txt"), &b"text"[..]),
        ],
        vec![
            ("file", Some("a.txt"), &b"text"[..]),
            ("purpose", None, &b"fine-tune"[..]),
        ],
        vec![("file", Some("a.txt"), &b"text"[..])],
    ] {
        let error = openai_error(post_form(&app, &token, &parts).await, 400).await;
        assert_eq!(error["param"], "purpose", "{error}");
        assert_eq!(error["type"], "invalid_request_error", "{error}");
    }
    // A batch's input must be JSON lines.
    let error = openai_error(
        post_form(
            &app,
            &token,
            &[("purpose", None, b"batch"), ("file", Some("a.txt"), b"{}")],
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "file", "{error}");
    let error = openai_error(
        post_form(&app, &token, &[("purpose", None, b"assistants")]).await,
        400,
    )
    .await;
    assert_eq!(error["param"], "file", "{error}");
    let error = openai_error(
        post_form(
            &app,
            &token,
            &[
                ("purpose", None, b"assistants"),
                ("file", Some("run.exe"), b"MZ"),
            ],
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["code"], "unsupported_file_type", "{error}");
    assert_eq!(
        file_count(&app, &token).await,
        2,
        "nothing refused was kept"
    );

    // A file uploaded through /v1 reads as `assistants`; the purpose filters.
    let form = Form::new().part("file", Part::bytes(b"plain".to_vec()).file_name("v1.txt"));
    let v1 = ok(
        app.client
            .post(app.url("/v1/files"))
            .bearer_auth(&token)
            .multipart(form)
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let assistants = ok(
        app.call(Method::GET, "/openai/v1/files?purpose=assistants", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        ids(&assistants),
        [v1["id"].as_str().unwrap(), first["id"].as_str().unwrap()],
        "{assistants}"
    );
    let user_data = ok(
        app.call(Method::GET, "/openai/v1/files?purpose=user_data", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&user_data), [after["id"].as_str().unwrap()]);

    // Paging by `after`, larger limits served 100 at a time, what lists cannot do refused.
    let page = ok(
        app.call(Method::GET, "/openai/v1/files?limit=2", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (page["has_more"].as_bool(), ids(&page).len()),
        (Some(true), 2)
    );
    let next = ok(
        app.call(
            Method::GET,
            &format!(
                "/openai/v1/files?limit=2&after={}",
                page["last_id"].as_str().unwrap()
            ),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(ids(&next), [first["id"].as_str().unwrap()], "{next}");
    assert_eq!(next["has_more"], false);
    let all = ok(
        app.call(Method::GET, "/openai/v1/files?limit=10000", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&all).len(), 3);
    for (query, param) in [
        ("order=asc", "query.order"),
        ("before=file_x", "query.before"),
        ("after=nonsense", "query.after"),
        ("purpose=fine-tune", "query.purpose"),
        ("limit=0", "query.limit"),
    ] {
        let error = openai_error(
            app.call(Method::GET, &format!("/openai/v1/files?{query}"), &token)
                .await,
            400,
        )
        .await;
        assert_eq!(error["param"], param, "{query}: {error}");
    }
    app.stop().await;
}

async fn a_vector_store_is_a_dataset(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let file = upload(&app, &token, "notes.txt", "assistants").await;
    let file_id = file["id"].as_str().unwrap();
    let store = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &token,
            &json!({"name": "Notes", "file_ids": [file_id], "metadata": {"team": "docs"},
                    "chunking_strategy": {"type": "auto"}}),
        )
        .await,
        200,
    )
    .await;
    let store_id = store["id"].as_str().unwrap();
    assert_eq!(
        (
            &store["object"],
            &store["status"],
            &store["metadata"],
            &store["file_counts"]
        ),
        (
            &json!("vector_store"),
            &json!("in_progress"),
            &json!({"team": "docs"}),
            &json!({"in_progress": 1, "completed": 0, "failed": 0, "cancelled": 0, "total": 1})
        ),
        "{store}"
    );
    assert_eq!(store["usage_bytes"], file["bytes"]);
    // The same record through /v1: the dataset, holding the file.
    let dataset = ok(
        app.call(Method::GET, &format!("/v1/datasets/{store_id}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &dataset["name"],
            &dataset["fileCount"],
            &dataset["metadata"]
        ),
        (&json!("Notes"), &json!(1), &json!({"team": "docs"}))
    );
    let held = ok(
        app.call(
            Method::GET,
            &format!("/openai/v1/vector_stores/{store_id}/files/{file_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&held["object"], &held["status"], &held["vector_store_id"]),
        (
            &json!("vector_store.file"),
            &json!("in_progress"),
            &json!(store_id)
        ),
        "{held}"
    );

    // Not processed in this app: no chunks yet.
    let content = ok(
        app.call(
            Method::GET,
            &format!("/openai/v1/vector_stores/{store_id}/files/{file_id}/content"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        content,
        json!({"object": "vector_store.file_content.page", "data": [], "has_more": false, "next_page": null})
    );

    // A file added through /v1 is one of the store's files.
    let other = upload(&app, &token, "other.txt", "assistants").await;
    let other_id = other["id"].as_str().unwrap();
    ok(
        app.call_json(
            Method::POST,
            &format!("/v1/files/{other_id}/associations"),
            &token,
            &json!({"datasetId": store_id}),
        )
        .await,
        201,
    )
    .await;
    let files = ok(
        app.call(
            Method::GET,
            &format!("/openai/v1/vector_stores/{store_id}/files?limit=1"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (ids(&files), &files["has_more"]),
        (vec![other_id], &json!(true))
    );

    // Modified: the name and metadata change, the files stay.
    let modified = ok(
        app.call_json(
            Method::POST,
            &format!("/openai/v1/vector_stores/{store_id}"),
            &token,
            &json!({"name": "Renamed", "metadata": {"team": "core", "tier": "1"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &modified["name"],
            &modified["metadata"],
            &modified["file_counts"]["total"]
        ),
        (
            &json!("Renamed"),
            &json!({"team": "core", "tier": "1"}),
            &json!(2)
        )
    );

    // What the door does not do yet is refused by name; bad metadata too.
    for (path, body, param) in [
        (
            "/openai/v1/vector_stores",
            json!({"chunking_strategy": {"type": "static", "static": {"max_chunk_size_tokens": 400, "chunk_overlap_tokens": 201}}}),
            "chunking_strategy.static.chunk_overlap_tokens",
        ),
        (
            "/openai/v1/vector_stores",
            json!({"chunking_strategy": {"type": "static", "static": {"max_chunk_size_tokens": 5000, "chunk_overlap_tokens": 0}}}),
            "chunking_strategy.static.max_chunk_size_tokens",
        ),
        (
            "/openai/v1/vector_stores",
            json!({"chunking_strategy": {"type": "fixed"}}),
            "chunking_strategy.type",
        ),
        (
            "/openai/v1/vector_stores",
            json!({"metadata": {"k": "x".repeat(513)}}),
            "metadata",
        ),
        ("/openai/v1/vector_stores", json!({"name": ""}), "name"),
        ("/openai/v1/vector_stores", json!({"unknown": 1}), ""),
    ] {
        let error = openai_error(app.call_json(Method::POST, path, &token, &body).await, 400).await;
        if !param.is_empty() {
            assert_eq!(error["param"], param, "{body}: {error}");
        }
    }
    let store_path = format!("/openai/v1/vector_stores/{store_id}");
    for (path, body, param) in [
        (
            format!("{store_path}/files"),
            json!({"file_id": file_id, "attributes": {"tags": ["a"]}}),
            "attributes.tags",
        ),
        (
            format!("{store_path}/search"),
            json!({"query": "notes", "filters": {"type": "within", "key": "a", "value": [1]}}),
            "filters.type",
        ),
        (
            format!("{store_path}/search"),
            json!({"query": "notes", "rewrite_query": true}),
            "rewrite_query",
        ),
        (
            format!("{store_path}/search"),
            json!({"query": "notes", "max_num_results": 51}),
            "max_num_results",
        ),
        (
            format!("{store_path}/search"),
            json!({"query": " "}),
            "query",
        ),
        (
            format!("{store_path}/search"),
            json!({"query": "notes", "ranking_options": {"ranker": "best"}}),
            "ranking_options.ranker",
        ),
    ] {
        let error =
            openai_error(app.call_json(Method::POST, &path, &token, &body).await, 400).await;
        assert_eq!(error["param"], param, "{body}: {error}");
    }
    // Files by status: both are still in progress here (nothing is processed in this app).
    let error = openai_error(
        app.call(
            Method::GET,
            &format!("{store_path}/files?filter=done"),
            &token,
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "query.filter", "{error}");
    for (filter, expected) in [
        ("in_progress", vec![other_id, file_id]),
        ("completed", vec![]),
        ("failed", vec![]),
        ("cancelled", vec![]),
    ] {
        let listed = ok(
            app.call(
                Method::GET,
                &format!("{store_path}/files?filter={filter}"),
                &token,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(ids(&listed), expected, "{filter}: {listed}");
    }
    let first = ok(
        app.call(
            Method::GET,
            &format!("{store_path}/files?filter=in_progress&limit=1"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (ids(&first), &first["has_more"]),
        (vec![other_id], &json!(true)),
        "a full page"
    );
    let next = ok(
        app.call(
            Method::GET,
            &format!("{store_path}/files?filter=in_progress&after={other_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (ids(&next), &next["has_more"]),
        (vec![file_id], &json!(false))
    );
    assert_eq!(
        next["data"][0]["chunking_strategy"],
        json!({"type": "other"})
    );

    // Attributes: set with the file, replaced, cleared; a filter no file matches finds
    // nothing (before any embedding: this app has no embedding model).
    let tagged = ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/files"),
            &token,
            &json!({"file_id": other_id, "attributes": {"team": "docs", "year": 2024, "draft": false}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        tagged["attributes"],
        json!({"team": "docs", "year": 2024, "draft": false})
    );
    let listed = ok(
        app.call(Method::GET, &format!("{store_path}/files"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(listed["data"][0]["attributes"]["team"], "docs", "{listed}");
    assert_eq!(listed["data"][1]["attributes"], json!({}), "{listed}");
    let replaced = ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/files/{other_id}"),
            &token,
            &json!({"attributes": {"team": "core"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(replaced["attributes"], json!({"team": "core"}));
    let nothing = ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/search"),
            &token,
            &json!({"query": "notes", "filters": {"type": "and", "filters": [
                {"type": "eq", "key": "team", "value": "core"},
                {"type": "gt", "key": "year", "value": 2000}]}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(nothing["data"], json!([]), "{nothing}");
    let cleared = ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/files/{other_id}"),
            &token,
            &json!({"attributes": null}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(cleared["attributes"], json!({}));
    let outside = upload(&app, &token, "outside.txt", "assistants").await;
    openai_error(
        app.call_json(
            Method::POST,
            &format!("{store_path}/files/{}", outside["id"].as_str().unwrap()),
            &token,
            &json!({"attributes": {}}),
        )
        .await,
        404,
    )
    .await;

    // A held file is kept (409); removed from the store, it can be deleted.
    let error = openai_error(
        app.call(
            Method::DELETE,
            &format!("/openai/v1/files/{file_id}"),
            &token,
        )
        .await,
        409,
    )
    .await;
    assert_eq!(error["code"], "file_in_use", "{error}");
    let removed = ok(
        app.call(
            Method::DELETE,
            &format!("{store_path}/files/{file_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        removed,
        json!({"id": file_id, "object": "vector_store.file.deleted", "deleted": true})
    );
    openai_error(
        app.call(
            Method::GET,
            &format!("{store_path}/files/{file_id}"),
            &token,
        )
        .await,
        404,
    )
    .await;
    let deleted = ok(
        app.call(
            Method::DELETE,
            &format!("/openai/v1/files/{file_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        deleted,
        json!({"id": file_id, "object": "file", "deleted": true})
    );
    let deleted = ok(app.call(Method::DELETE, &store_path, &token).await, 200).await;
    assert_eq!(
        deleted,
        json!({"id": store_id, "object": "vector_store.deleted", "deleted": true})
    );
    let gone = openai_error(app.call(Method::GET, &store_path, &token).await, 404).await;
    assert_eq!(gone["type"], "not_found_error", "{gone}");
    app.stop().await;
}

async fn scopes_and_organizations_fence_vector_stores(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let file = upload(&app, &token, "mine.txt", "assistants").await;
    let file_id = file["id"].as_str().unwrap();
    let store = ok(
        app.call_json(Method::POST, "/openai/v1/vector_stores", &token, &json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(store["name"], "Untitled vector store");
    let store_id = store["id"].as_str().unwrap();

    // Another organization sees none of it: every id is unknown there.
    let stranger = app.caller_token(SCOPES).await;
    for path in [
        format!("/openai/v1/vector_stores/{store_id}"),
        format!("/openai/v1/vector_stores/{store_id}/files"),
        format!("/openai/v1/vector_stores/{store_id}/files/{file_id}/content"),
        format!("/openai/v1/files/{file_id}"),
        format!("/openai/v1/files/{file_id}/content"),
    ] {
        openai_error(app.call(Method::GET, &path, &stranger).await, 404).await;
    }
    for (path, body) in [
        (
            format!("/openai/v1/vector_stores/{store_id}/search"),
            json!({"query": "mine"}),
        ),
        (
            format!("/openai/v1/vector_stores/{store_id}"),
            json!({"name": "Taken"}),
        ),
        (
            format!("/openai/v1/vector_stores/{store_id}/files"),
            json!({"file_id": file_id}),
        ),
        (
            "/openai/v1/vector_stores".into(),
            json!({"file_ids": [file_id]}),
        ),
    ] {
        openai_error(
            app.call_json(Method::POST, &path, &stranger, &body).await,
            404,
        )
        .await;
    }
    let theirs = ok(
        app.call(Method::GET, "/openai/v1/vector_stores", &stranger)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&theirs), Vec::<&str>::new(), "{theirs}");
    // Their own store cannot take my file either.
    let their_store = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &stranger,
            &json!({"name": "Theirs"}),
        )
        .await,
        200,
    )
    .await;
    openai_error(
        app.call_json(
            Method::POST,
            &format!(
                "/openai/v1/vector_stores/{}/files",
                their_store["id"].as_str().unwrap()
            ),
            &stranger,
            &json!({"file_id": file_id}),
        )
        .await,
        404,
    )
    .await;

    // Scopes: a reader reads, and nothing more; files in a new store need `files:write`.
    let reader = app.caller_token("files:read datasets:read").await;
    openai_error(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &reader,
            &json!({}),
        )
        .await,
        403,
    )
    .await;
    let curator = app.caller_token("datasets:read datasets:write").await;
    let refused = openai_error(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &curator,
            &json!({"file_ids": [file_id]}),
        )
        .await,
        403,
    )
    .await;
    assert_eq!(refused["type"], "permission_error", "{refused}");
    openai_error(
        app.call(
            Method::DELETE,
            &format!("/openai/v1/files/{file_id}"),
            &reader,
        )
        .await,
        403,
    )
    .await;
    let error = openai_error(
        post_form(
            &app,
            &reader,
            &[
                ("purpose", None, b"assistants"),
                ("file", Some("x.txt"), b"x"),
            ],
        )
        .await,
        403,
    )
    .await;
    assert_eq!(error["type"], "permission_error", "{error}");
    app.stop().await;
}

async fn file_batches_add_together_and_cancel_what_is_processing(backend: Backend) {
    let app = storage_app(backend).await;
    let token = app.caller_token(SCOPES).await;
    let store = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &token,
            &json!({"name": "Batch"}),
        )
        .await,
        200,
    )
    .await;
    let store_path = format!("/openai/v1/vector_stores/{}", store["id"].as_str().unwrap());
    let mut files = Vec::new();
    for name in ["a.txt", "b.txt", "c.txt"] {
        files.push(
            upload(&app, &token, name, "assistants").await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }

    // An unknown file (or another organization's) adds nothing.
    let stranger = app.caller_token(SCOPES).await;
    let theirs = upload(&app, &stranger, "theirs.txt", "assistants").await;
    openai_error(
        app.call_json(
            Method::POST,
            &format!("{store_path}/file_batches"),
            &token,
            &json!({"file_ids": [files[0], theirs["id"]]}),
        )
        .await,
        404,
    )
    .await;
    let held = ok(app.call(Method::GET, &store_path, &token).await, 200).await;
    assert_eq!(held["file_counts"]["total"], 0, "{held}");
    for (body, param) in [
        (json!({"file_ids": []}), "file_ids"),
        (json!({"file_ids": ["nope"]}), "file_ids.0"),
        (
            json!({"file_ids": [files[0]], "attributes": {"k": {"x": 1}}}),
            "attributes.k",
        ),
    ] {
        let error = openai_error(
            app.call_json(
                Method::POST,
                &format!("{store_path}/file_batches"),
                &token,
                &body,
            )
            .await,
            400,
        )
        .await;
        assert_eq!(error["param"], param, "{body}: {error}");
    }

    // Added together (a repeated id once), with the batch's attributes; nothing is
    // processed in this app, so the batch stays in progress.
    let batch = ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/file_batches"),
            &token,
            &json!({"file_ids": [files[0], files[1], files[0]], "attributes": {"source": "batch"}}),
        )
        .await,
        200,
    )
    .await;
    let batch_id = batch["id"].as_str().unwrap();
    assert!(batch_id.starts_with("vsfb_"), "{batch}");
    assert_eq!(
        (
            &batch["object"],
            &batch["status"],
            &batch["vector_store_id"],
            &batch["file_counts"]
        ),
        (
            &json!("vector_store.files_batch"),
            &json!("in_progress"),
            &store["id"],
            &json!({"in_progress": 2, "completed": 0, "failed": 0, "cancelled": 0, "total": 2})
        ),
        "{batch}"
    );
    let batch_path = format!("{store_path}/file_batches/{batch_id}");
    let listed = ok(
        app.call(Method::GET, &format!("{batch_path}/files?limit=1"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (ids(&listed), &listed["has_more"]),
        (vec![files[1].as_str()], &json!(true))
    );
    assert_eq!(listed["data"][0]["attributes"], json!({"source": "batch"}));
    for (filter, expected) in [
        ("in_progress", vec![files[1].as_str(), files[0].as_str()]),
        ("completed", vec![]),
        ("cancelled", vec![]),
    ] {
        let listed = ok(
            app.call(
                Method::GET,
                &format!("{batch_path}/files?filter={filter}"),
                &token,
            )
            .await,
            200,
        )
        .await;
        assert_eq!(ids(&listed), expected, "{filter}: {listed}");
    }
    openai_error(
        app.call(
            Method::GET,
            &format!("{batch_path}/files?filter=all"),
            &token,
        )
        .await,
        400,
    )
    .await;
    let next = ok(
        app.call(
            Method::GET,
            &format!("{batch_path}/files?after={}", files[1]),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (ids(&next), &next["has_more"]),
        (vec![files[0].as_str()], &json!(false))
    );
    // A file added alone is the store's, not the batch's.
    ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/files"),
            &token,
            &json!({"file_id": files[2]}),
        )
        .await,
        200,
    )
    .await;

    // Another organization, a narrow key: not found, forbidden.
    openai_error(app.call(Method::GET, &batch_path, &stranger).await, 404).await;
    let reader = app.caller_token("files:read datasets:read").await;
    openai_error(
        app.call(Method::POST, &format!("{batch_path}/cancel"), &reader)
            .await,
        403,
    )
    .await;

    // Cancelled: its files still processing leave the store; the lone file stays.
    let cancelled = ok(
        app.call(Method::POST, &format!("{batch_path}/cancel"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (&cancelled["status"], &cancelled["file_counts"]),
        (
            &json!("cancelled"),
            &json!({"in_progress": 0, "completed": 0, "failed": 0, "cancelled": 2, "total": 2})
        ),
        "{cancelled}"
    );
    let again = ok(app.call(Method::GET, &batch_path, &token).await, 200).await;
    assert_eq!(again["status"], "cancelled");
    let left = ok(
        app.call(Method::GET, &format!("{store_path}/files"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&left), [files[2].as_str()], "{left}");
    app.stop().await;
}

/// Sets a vector store's `last_active_at` in the database (the clock cannot be moved in a
/// running app): `at` as `YYYY-MM-DD HH:MM:SS`, which both backends read.
async fn last_active(app: &TestApp, store: &str, at: chrono::DateTime<chrono::Utc>) {
    let at = at.format("%Y-%m-%d %H:%M:%S");
    let changed = tessera_store::testing::execute(
        &app.state.database,
        &format!("UPDATE datasets SET last_active_at = '{at}' WHERE id = '{store}'"),
    )
    .await
    .unwrap();
    assert_eq!(changed, 1);
}

async fn vector_stores_expire_days_after_their_last_activity(backend: Backend) {
    let app = storage_app(backend).await;
    // `chats:invoke` for the Responses API's `file_search`.
    let token = app.caller_token(&format!("{SCOPES} chats:invoke")).await;
    let expiry = |days: i64| json!({"anchor": "last_active_at", "days": days});
    let store = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &token,
            &json!({"name": "Scratch", "expires_after": expiry(7)}),
        )
        .await,
        200,
    )
    .await;
    let store_id = store["id"].as_str().unwrap();
    let store_path = format!("/openai/v1/vector_stores/{store_id}");
    let active = store["last_active_at"].as_i64().unwrap();
    assert_eq!(
        (
            &store["expires_after"],
            store["expires_at"].as_i64(),
            &store["status"]
        ),
        (&expiry(7), Some(active + 7 * 86_400), &json!("completed")),
        "{store}"
    );
    assert!(
        (active - store["created_at"].as_i64().unwrap()).abs() <= 1,
        "{store}"
    );

    // OpenAI's bounds and anchor, on create and on modify, named.
    for (body, param) in [
        (expiry(0), "expires_after.days"),
        (expiry(366), "expires_after.days"),
        (
            json!({"anchor": "created_at", "days": 7}),
            "expires_after.anchor",
        ),
        (json!({"days": 7}), ""),
    ] {
        for path in ["/openai/v1/vector_stores", store_path.as_str()] {
            let error = openai_error(
                app.call_json(Method::POST, path, &token, &json!({"expires_after": body}))
                    .await,
                400,
            )
            .await;
            if !param.is_empty() {
                assert_eq!(error["param"], param, "{path} {body}: {error}");
            }
        }
    }

    // Absent leaves it, null clears it, a new one is set.
    let renamed = ok(
        app.call_json(Method::POST, &store_path, &token, &json!({"name": "Kept"}))
            .await,
        200,
    )
    .await;
    assert_eq!(renamed["expires_after"], expiry(7), "{renamed}");
    let cleared = ok(
        app.call_json(
            Method::POST,
            &store_path,
            &token,
            &json!({"expires_after": null}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&cleared["expires_after"], &cleared["expires_at"]),
        (&Value::Null, &Value::Null),
        "{cleared}"
    );
    let set = ok(
        app.call_json(
            Method::POST,
            &store_path,
            &token,
            &json!({"expires_after": expiry(1)}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        set["expires_at"].as_i64(),
        Some(set["last_active_at"].as_i64().unwrap() + 86_400),
        "{set}"
    );

    // A search records activity: last active 12 hours ago, it is now.
    let file = upload(&app, &token, "kept.txt", "assistants").await;
    let file_id = file["id"].as_str().unwrap();
    ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/files"),
            &token,
            &json!({"file_id": file_id}),
        )
        .await,
        200,
    )
    .await;
    last_active(
        &app,
        store_id,
        chrono::Utc::now() - chrono::Duration::hours(12),
    )
    .await;
    // A filter no file matches: nothing to embed (this app has no embedding model).
    let nothing = json!({"query": "kept", "filters": {"type": "eq", "key": "none", "value": 1}});
    let found = ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/search"),
            &token,
            &nothing,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(found["data"], json!([]));
    let searched = ok(app.call(Method::GET, &store_path, &token).await, 200).await;
    let now = chrono::Utc::now().timestamp();
    let active = searched["last_active_at"].as_i64().unwrap();
    assert!((now - active).abs() <= 5, "{searched}");
    assert_eq!(searched["expires_at"].as_i64(), Some(active + 86_400));
    // Its file is never processed in this app.
    assert_eq!(searched["status"], "in_progress");

    // Expired: shown so, refused for use, kept with its file.
    last_active(&app, store_id, "2020-01-01T00:00:00Z".parse().unwrap()).await;
    let expired = ok(app.call(Method::GET, &store_path, &token).await, 200).await;
    assert_eq!(
        (
            &expired["status"],
            &expired["last_active_at"],
            &expired["expires_at"],
            &expired["file_counts"]["total"]
        ),
        (
            &json!("expired"),
            &json!(1_577_836_800),
            &json!(1_577_923_200),
            &json!(1)
        ),
        "{expired}"
    );
    let listed = ok(
        app.call(Method::GET, "/openai/v1/vector_stores", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(listed["data"][0]["status"], "expired", "{listed}");
    let dataset = ok(
        app.call(Method::GET, &format!("/v1/datasets/{store_id}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &dataset["expiresAfterDays"],
            &dataset["lastActiveAt"],
            &dataset["expiresAt"]
        ),
        (
            &json!(1),
            &json!("2020-01-01T00:00:00Z"),
            &json!("2020-01-02T00:00:00Z")
        ),
        "{dataset}"
    );
    let other = upload(&app, &token, "other.txt", "assistants").await;
    let other_id = other["id"].as_str().unwrap();
    for (path, body) in [
        (format!("{store_path}/search"), nothing.clone()),
        (format!("{store_path}/search"), json!({"query": "kept"})),
        (format!("{store_path}/files"), json!({"file_id": other_id})),
        (
            format!("{store_path}/file_batches"),
            json!({"file_ids": [other_id]}),
        ),
    ] {
        let error =
            openai_error(app.call_json(Method::POST, &path, &token, &body).await, 400).await;
        assert_eq!(error["type"], "invalid_request_error", "{path}: {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&format!("vector store {store_id} expired")),
            "{path}: {error}"
        );
    }
    // `file_search` over it is refused before any model is asked.
    let error = openai_error(
        app.call_json(
            Method::POST,
            "/openai/v1/responses",
            &token,
            &json!({"model": "any", "input": "Hello?",
                    "tools": [{"type": "file_search", "vector_store_ids": [store_id]}]}),
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "tools", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("expired"),
        "{error}"
    );
    // /v1 refuses it too, in its own shape.
    let problem = ok(
        app.call_json(
            Method::POST,
            &format!("/v1/datasets/{store_id}/search"),
            &token,
            &json!({"query": "kept"}),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(problem["detail"][0]["type"], "expired", "{problem}");
    let problem = ok(
        app.call_json(
            Method::POST,
            &format!("/v1/files/{other_id}/associations"),
            &token,
            &json!({"datasetId": store_id}),
        )
        .await,
        422,
    )
    .await;
    assert_eq!(problem["detail"][0]["type"], "expired", "{problem}");
    // Its files can be listed and removed (removing does not revive it).
    let files = ok(
        app.call(Method::GET, &format!("{store_path}/files"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&files), [file_id]);
    ok(
        app.call(
            Method::DELETE,
            &format!("{store_path}/files/{file_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    let still = ok(app.call(Method::GET, &store_path, &token).await, 200).await;
    assert_eq!(still["status"], "expired", "{still}");

    // A new expiry runs from now: the store is used again.
    let revived = ok(
        app.call_json(
            Method::POST,
            &store_path,
            &token,
            &json!({"expires_after": expiry(30)}),
        )
        .await,
        200,
    )
    .await;
    let active = revived["last_active_at"].as_i64().unwrap();
    assert!(
        (chrono::Utc::now().timestamp() - active).abs() <= 5,
        "{revived}"
    );
    assert_eq!(
        (&revived["status"], revived["expires_at"].as_i64()),
        (&json!("completed"), Some(active + 30 * 86_400)),
        "{revived}"
    );
    ok(
        app.call_json(
            Method::POST,
            &format!("{store_path}/search"),
            &token,
            &nothing,
        )
        .await,
        200,
    )
    .await;

    // Expired again, it is still deleted.
    last_active(&app, store_id, "2020-01-01T00:00:00Z".parse().unwrap()).await;
    let deleted = ok(app.call(Method::DELETE, &store_path, &token).await, 200).await;
    assert_eq!(deleted["deleted"], true, "{deleted}");
    openai_error(app.call(Method::GET, &store_path, &token).await, 404).await;
    app.stop().await;
}

/// A long text of varied sentences (about 1,500 words).
fn long_text() -> String {
    let subjects = [
        "The harbour office",
        "Every invoice",
        "A volcano survey",
        "The night train",
    ];
    let verbs = ["records", "delays", "measures", "announces"];
    let objects = [
        "the tides of the northern fjord",
        "payments due on the first of the month",
        "ash clouds drifting over the glacier",
        "departures to the southern coast",
    ];
    let mut text = String::new();
    for i in 0..150 {
        text.push_str(&format!(
            "{} {} {} in paragraph {i}, as noted by clerk number {}. ",
            subjects[i % 4],
            verbs[(i / 4) % 4],
            objects[(i / 16) % 4],
            i * 7
        ));
        if i % 10 == 9 {
            text.push_str("\n\n");
        }
    }
    text
}

/// What the embedding model reads of a text, counted as chunks are sized.
fn word_pieces() -> std::sync::Arc<dyn tessera_knowledge::ChunkTokens> {
    use tessera_knowledge::Embedder;
    let root = crate::processing::models_root();
    let dir = tessera_embed_local::find_model_dir(&root).unwrap();
    let embedder = tessera_embed_local::LocalEmbedder::load(
        &dir,
        tessera_embed_local::LocalEmbedderOptions::default(),
    )
    .unwrap();
    embedder.chunk_tokens().unwrap()
}

async fn chunk_count(app: &TestApp, token: &str, file: &str) -> u64 {
    let read = ok(
        app.call(Method::GET, &format!("/v1/files/{file}"), token)
            .await,
        200,
    )
    .await;
    read["chunkCount"].as_u64().unwrap()
}

async fn static_chunking_cuts_a_file_with_its_own_sizes(backend: Backend) {
    use crate::processing::{knowledge_app_with, ready, settled};
    let app = knowledge_app_with(backend, |_| {}).await;
    let token = app.caller_token(SCOPES).await;
    let text = long_text();
    let auto = crate::processing::upload(&app, &token, "auto.txt", text.clone().into_bytes()).await;
    let sized = crate::processing::upload(&app, &token, "sized.txt", text.into_bytes()).await;
    let (auto_id, sized_id) = (auto["id"].as_str().unwrap(), sized["id"].as_str().unwrap());
    let auto_chunks = ready(&app, &token, &auto).await["chunkCount"]
        .as_u64()
        .unwrap();
    ready(&app, &token, &sized).await;

    // A store of the file as the server cuts it.
    let first = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &token,
            &json!({"name": "Auto", "file_ids": [auto_id], "chunking_strategy": {"type": "auto"}}),
        )
        .await,
        200,
    )
    .await;
    let first_path = format!("/openai/v1/vector_stores/{}", first["id"].as_str().unwrap());
    let held = ok(
        app.call(
            Method::GET,
            &format!("{first_path}/files/{auto_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        held["chunking_strategy"],
        json!({"type": "other"}),
        "{held}"
    );

    // Another store cuts the other (ready) file with small sizes: it is cut again.
    let second = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/vector_stores",
            &token,
            &json!({"name": "Small"}),
        )
        .await,
        200,
    )
    .await;
    let second_path = format!(
        "/openai/v1/vector_stores/{}",
        second["id"].as_str().unwrap()
    );
    let small = json!({"type": "static", "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 20}});
    let added = ok(
        app.call_json(
            Method::POST,
            &format!("{second_path}/files"),
            &token,
            &json!({"file_id": sized_id, "chunking_strategy": small}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&added["status"], &added["chunking_strategy"]),
        (&json!("in_progress"), &small),
        "{added}"
    );
    let done = settled(&app, &token, sized_id).await;
    assert_eq!(done["status"], "ready", "{done}");
    let sized_chunks = done["chunkCount"].as_u64().unwrap();
    assert!(
        sized_chunks > auto_chunks,
        "{sized_chunks} chunks of at most 100 tokens, {auto_chunks} as the server cuts"
    );
    let content = ok(
        app.call(
            Method::GET,
            &format!("{second_path}/files/{sized_id}/content"),
            &token,
        )
        .await,
        200,
    )
    .await;
    let chunks = content["data"].as_array().unwrap();
    assert_eq!(chunks.len() as u64, sized_chunks);
    let tokens = word_pieces();
    for chunk in chunks {
        let text = chunk["text"].as_str().unwrap();
        assert!(
            tokens.count(text) <= 100,
            "{} tokens: {text}",
            tokens.count(text)
        );
    }
    let listed = ok(
        app.call(
            Method::GET,
            &format!("{second_path}/files?filter=completed"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(ids(&listed), [sized_id], "{listed}");
    assert_eq!(listed["data"][0]["chunking_strategy"], small);
    // Found by search, in its small chunks.
    let found = ok(
        app.call_json(
            Method::POST,
            &format!("{second_path}/search"),
            &token,
            &json!({"query": "ash clouds over the glacier", "ranking_options": {"ranker": "none"}}),
        )
        .await,
        200,
    )
    .await;
    let hits = found["data"].as_array().unwrap();
    assert!(!hits.is_empty(), "{found}");
    for hit in hits {
        assert_eq!(hit["file_id"], sized_id);
        let text = hit["content"][0]["text"].as_str().unwrap();
        assert!(tokens.count(text) <= 100, "{text}");
    }

    // Sizes the model cannot read, or a bad overlap: 400 naming the field, nothing changes.
    for (strategy, param, says) in [
        (
            json!({"type": "static", "static": {"max_chunk_size_tokens": 300, "chunk_overlap_tokens": 0}}),
            "chunking_strategy.static.max_chunk_size_tokens",
            "254",
        ),
        (
            json!({"type": "static", "static": {"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 101}}),
            "chunking_strategy.static.chunk_overlap_tokens",
            "half",
        ),
        // Held by the first store, cut as the server cuts.
        (small.clone(), "chunking_strategy", "another vector store"),
    ] {
        let error = openai_error(
            app.call_json(
                Method::POST,
                &format!("{second_path}/files"),
                &token,
                &json!({"file_id": auto_id, "chunking_strategy": strategy}),
            )
            .await,
            400,
        )
        .await;
        assert_eq!(error["param"], param, "{error}");
        assert!(error["message"].as_str().unwrap().contains(says), "{error}");
    }
    let error = openai_error(
        app.call_json(
            Method::POST,
            &format!("{second_path}/file_batches"),
            &token,
            &json!({"file_ids": [auto_id], "chunking_strategy": small}),
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["param"], "chunking_strategy", "{error}");
    let second_files = ok(
        app.call(Method::GET, &format!("{second_path}/files"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&second_files), [sized_id], "nothing added");
    let kept = ok(
        app.call(Method::GET, &format!("/v1/files/{auto_id}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (&kept["status"], &kept["chunkCount"]),
        (&json!("ready"), &json!(auto_chunks)),
        "{kept}"
    );
    let held = ok(
        app.call(
            Method::GET,
            &format!("{first_path}/files/{auto_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(held["chunking_strategy"], json!({"type": "other"}));

    // `auto` keeps how a file is cut: the small file in the first store too.
    ok(
        app.call_json(
            Method::POST,
            &format!("{first_path}/files"),
            &token,
            &json!({"file_id": sized_id, "chunking_strategy": {"type": "auto"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(chunk_count(&app, &token, sized_id).await, sized_chunks);
    let held = ok(
        app.call(
            Method::GET,
            &format!("{first_path}/files/{sized_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&held["status"], &held["chunking_strategy"]),
        (&json!("completed"), &small)
    );
    app.stop().await;
}

tessera_store::on_both_databases!(
    vector_stores_expire_days_after_their_last_activity,
    files_keep_their_purpose_and_a_refused_one_stores_nothing,
    a_vector_store_is_a_dataset,
    scopes_and_organizations_fence_vector_stores,
    file_batches_add_together_and_cancel_what_is_processing,
    static_chunking_cuts_a_file_with_its_own_sizes,
);
