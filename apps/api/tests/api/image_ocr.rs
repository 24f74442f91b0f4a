//! Uploaded images read by OCR when the organization opts in (issue 37): `PATCH
//! /v1/organization` sets `imageOcr` with `org:admin` only, validated, audited, for the
//! caller's organization alone; with the opt-in an uploaded PNG of a sentence is processed by
//! the real Tesseract and found by dataset search, without it an image is `ready` at once
//! with no chunks as before; a damaged or blank image ends `failed` with the reason while the
//! server stays healthy.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_documents::testing::image::{png_of_text, truncated_png};
use tessera_store::Backend;

use crate::audit::{admin, events};
use crate::processing::{knowledge_app_with, ready, search, settled, upload_any};
use crate::support::{TestApp, ok, problem};

const SENTENCE: &str = "The lighthouse keeper counted seventeen ships before dawn.";
const FILE_SCOPES: &str = "files:read files:write datasets:read datasets:write";

async fn organization(app: &TestApp, token: &str) -> Value {
    ok(app.call(Method::GET, "/v1/organization", token).await, 200).await
}

async fn set_image_ocr(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    app.call_json(Method::PATCH, "/v1/organization", token, body)
        .await
}

/// A dataset named `name` holding `file`.
async fn dataset_of(app: &TestApp, token: &str, name: &str, file: &Value) -> String {
    let dataset = ok(
        app.call_json(Method::POST, "/v1/datasets", token, &json!({"name": name}))
            .await,
        201,
    )
    .await;
    let dataset = dataset["id"].as_str().unwrap().to_owned();
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
    dataset
}

async fn the_setting_is_changed_by_admins_only_validated_and_audited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org, client, token) = admin(&app).await;
    let (other_org, _, other) = admin(&app).await;
    let before = organization(&app, &token).await;
    assert_eq!(before["imageOcr"], false, "off by default: {before}");

    // Without org:admin: refused, nothing changed.
    let reader = app.caller_token(FILE_SCOPES).await;
    problem(
        set_image_ocr(&app, &reader, &json!({"imageOcr": true})).await,
        403,
        "insufficient_scope",
    )
    .await;
    assert_eq!(organization(&app, &reader).await["imageOcr"], false);

    let changed = ok(
        set_image_ocr(&app, &token, &json!({"imageOcr": true})).await,
        200,
    )
    .await;
    assert_eq!(
        (
            &changed["id"],
            &changed["name"],
            &changed["plan"],
            &changed["imageOcr"]
        ),
        (&json!(org), &before["name"], &before["plan"], &json!(true)),
        "{changed}"
    );
    assert_eq!(changed["createdAt"], before["createdAt"]);
    assert_ne!(changed["updatedAt"], before["updatedAt"]);
    assert_eq!(
        organization(&app, &token).await,
        changed,
        "GET answers the same body"
    );
    // Another organization is unaffected.
    let theirs = organization(&app, &other).await;
    assert_eq!(
        (&theirs["id"], &theirs["imageOcr"]),
        (&json!(other_org), &json!(false))
    );

    // The snake_case spelling is accepted too.
    let off = ok(
        set_image_ocr(&app, &token, &json!({"image_ocr": false})).await,
        200,
    )
    .await;
    assert_eq!(off["imageOcr"], false);

    // Bad bodies: 422 with where and why; nothing changed.
    let refused = [
        (json!({}), json!(["body", "imageOcr"]), "missing"),
        (json!({"imageOcr": "yes"}), json!(["body", "imageOcr"]), ""),
        (json!({"imageOcr": null}), json!(["body", "imageOcr"]), ""),
        (
            json!({"imageOcr": true, "plan": "enterprise"}),
            json!(["body", "plan"]),
            "extra_forbidden",
        ),
        (json!([true]), json!(["body"]), "type_error"),
    ];
    for (body, loc, kind) in refused {
        let answer = problem(
            set_image_ocr(&app, &token, &body).await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(answer["detail"][0]["loc"], loc, "{body}: {answer}");
        assert!(answer["detail"][0]["msg"].is_string(), "{answer}");
        if !kind.is_empty() {
            assert_eq!(answer["detail"][0]["type"], kind, "{body}: {answer}");
        }
    }
    let empty = app
        .client
        .patch(app.url("/v1/organization"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    let answer = problem(empty, 422, "validation_failed").await;
    assert_eq!(
        (&answer["detail"][0]["loc"], &answer["detail"][0]["type"]),
        (&json!(["body"]), &json!("missing"))
    );
    assert_eq!(organization(&app, &token).await["imageOcr"], false);

    // Each change is one event in the change's transaction, by the client, on its
    // organization; none for the refused ones, none in the other organization.
    let updates = events(&app, &token, "action=organization.update").await;
    assert_eq!(updates.len(), 2, "{updates:#?}");
    for event in &updates {
        assert_eq!(
            (
                &event["organizationId"],
                &event["resourceType"],
                &event["resourceId"],
                &event["actorKind"],
                &event["actorId"]
            ),
            (
                &json!(org),
                &json!("organization"),
                &json!(org),
                &json!("client"),
                &json!(client)
            ),
            "{event}"
        );
    }
    assert!(
        events(&app, &other, "action=organization.update")
            .await
            .is_empty()
    );
    app.stop().await;
}

async fn with_the_opt_in_an_image_is_read_and_found_by_search(backend: Backend) {
    let app = knowledge_app_with(backend, |_| {}).await;
    let (_, _, token) = admin(&app).await;
    ok(
        set_image_ocr(&app, &token, &json!({"imageOcr": true})).await,
        200,
    )
    .await;
    let file = upload_any(&app, &token, "whiteboard.png", png_of_text(&[SENTENCE])).await;
    assert_eq!(
        (&file["status"], &file["progress"]),
        (&json!("processing"), &json!(0)),
        "{file}"
    );
    let done = ready(&app, &token, &file).await;
    assert_eq!(done["format"], "png", "{done}");
    let dataset = dataset_of(&app, &token, "Photos", &file).await;
    let hits = search(
        &app,
        &token,
        &dataset,
        json!({"query": "How many ships did the lighthouse keeper count?", "limit": 3}),
    )
    .await;
    let top = &hits[0];
    assert_eq!(top["fileId"], file["id"], "{hits:#?}");
    assert_eq!(top["page"], Value::Null, "an image has no pages: {hits:#?}");
    let text = top["text"].as_str().unwrap().to_lowercase();
    assert!(text.contains("seventeen ships"), "{hits:#?}");

    // Another organization, not opted in: its image is ready at once, with no chunks, and
    // nothing of it is found.
    let other = app.caller_token("org:admin").await;
    let stored = upload_any(&app, &other, "whiteboard.png", png_of_text(&[SENTENCE])).await;
    assert_eq!(
        (
            &stored["status"],
            &stored["progress"],
            &stored["chunkCount"]
        ),
        (&json!("ready"), &json!(100), &json!(0)),
        "{stored}"
    );
    let theirs = dataset_of(&app, &other, "Photos", &stored).await;
    let nothing = search(
        &app,
        &other,
        &theirs,
        json!({"query": "How many ships did the lighthouse keeper count?"}),
    )
    .await;
    assert!(nothing.is_empty(), "{nothing:#?}");

    // Turned off again: the next image is stored as before; the one read keeps its chunks.
    ok(
        set_image_ocr(&app, &token, &json!({"imageOcr": false})).await,
        200,
    )
    .await;
    let later = upload_any(&app, &token, "later.png", png_of_text(&[SENTENCE])).await;
    assert_eq!(later["status"], "ready", "{later}");
    assert_eq!(later["chunkCount"], 0, "{later}");
    let kept = ok(
        app.call(
            Method::GET,
            &format!("/v1/files/{}", file["id"].as_str().unwrap()),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(kept["chunkCount"], done["chunkCount"]);
    app.stop().await;
}

async fn damaged_and_blank_images_fail_with_the_reason_and_the_server_stays_healthy(
    backend: Backend,
) {
    let app = knowledge_app_with(backend, |_| {}).await;
    let (_, _, token) = admin(&app).await;
    ok(
        set_image_ocr(&app, &token, &json!({"imageOcr": true})).await,
        200,
    )
    .await;
    let damaged = upload_any(&app, &token, "damaged.png", truncated_png(&[SENTENCE], 300)).await;
    assert_eq!(damaged["status"], "processing", "{damaged}");
    let done = settled(&app, &token, damaged["id"].as_str().unwrap()).await;
    assert_eq!(
        (&done["status"], &done["chunkCount"]),
        (&json!("failed"), &json!(0)),
        "{done}"
    );
    let reason = done["error"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "the document is damaged and cannot be read: the image could not be decoded: libpng"
        ),
        "{reason}"
    );

    let blank = upload_any(&app, &token, "blank.png", png_of_text(&[])).await;
    let done = settled(&app, &token, blank["id"].as_str().unwrap()).await;
    assert_eq!(
        (&done["status"], &done["error"]),
        (&json!("failed"), &json!("the document contains no text")),
        "{done}"
    );

    let health = app
        .client
        .get(app.url("/v1/health/ready"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // The next image is read as usual.
    let good = upload_any(&app, &token, "note.png", png_of_text(&[SENTENCE])).await;
    ready(&app, &token, &good).await;
    app.stop().await;
}

tessera_store::on_both_databases!(
    the_setting_is_changed_by_admins_only_validated_and_audited,
    with_the_opt_in_an_image_is_read_and_found_by_search,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_and_blank_images_fail_with_the_reason_and_the_server_stays_healthy_on_sqlite() {
    damaged_and_blank_images_fail_with_the_reason_and_the_server_stays_healthy(Backend::Sqlite)
        .await;
}
