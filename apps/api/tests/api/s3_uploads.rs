//! Uploads kept in S3-compatible object storage (`knowledge.s3_bucket`): the real application
//! stores what it receives in a real S3 server (moto, from `tessera_blobs_s3::testing`),
//! serves it back, shares identical content, and deletes the object with its last file.

use reqwest::Method;
use tessera_api::config::Secret;
use tessera_blobs_s3::{S3BlobStore, S3Location, testing};
use tessera_knowledge::{BlobError, BlobStore};
use tessera_store::Backend;

use crate::{
    files,
    support::{TestApp, ok},
};

async fn upload(app: &TestApp, token: &str, name: &str, content: &[u8]) -> serde_json::Value {
    ok(files::upload(app, token, name, content.to_vec()).await, 201).await
}

async fn uploads_live_in_the_bucket(backend: Backend) {
    let moto = testing::start().await;
    moto.create_bucket("uploads").await;
    let location = S3Location {
        bucket: "uploads".into(),
        prefix: "tessera/".into(),
        endpoint: Some(moto.endpoint()),
        region: Some("us-east-1".into()),
        allow_http: true,
    };
    let app = TestApp::spawn_with(backend, |settings| {
        settings.rate_limit.enabled = false;
        let knowledge = &mut settings.knowledge;
        knowledge.s3_bucket = Some(location.bucket.clone());
        knowledge.s3_prefix = location.prefix.clone();
        knowledge.s3_endpoint = location.endpoint.clone();
        knowledge.s3_region = location.region.clone();
        knowledge.s3_allow_http = true;
        knowledge.s3_access_key_id = Some("testing".into());
        knowledge.s3_secret_access_key = Some(Secret::new("testing"));
    })
    .await;
    let spool = tempfile::tempdir().unwrap();
    let bucket =
        S3BlobStore::connect_with_keys(&location, "testing", "testing", spool.path()).unwrap();
    let token = app
        .caller_token("files:read files:write files:delete")
        .await;

    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR an image".to_vec();
    let first = upload(&app, &token, "logo.png", &png).await;
    let second = upload(&app, &token, "copy.png", &png).await;
    assert_eq!(first["sha256"], second["sha256"]);
    let sha256 = first["sha256"].as_str().unwrap().to_owned();
    assert_eq!(
        bucket.read(&sha256).await.unwrap(),
        png,
        "the object is in the bucket"
    );

    let download = app
        .call(
            Method::GET,
            &format!("/v1/files/{}/content", first["id"].as_str().unwrap()),
            &token,
        )
        .await;
    assert_eq!(download.status(), 200);
    assert_eq!(download.bytes().await.unwrap().as_ref(), png.as_slice());

    // The object goes with the last file that holds it.
    let delete = |file: &serde_json::Value| format!("/v1/files/{}", file["id"].as_str().unwrap());
    ok(app.call(Method::DELETE, &delete(&first), &token).await, 204).await;
    assert_eq!(
        bucket.read(&sha256).await.unwrap(),
        png,
        "the copy still holds it"
    );
    ok(
        app.call(Method::DELETE, &delete(&second), &token).await,
        204,
    )
    .await;
    assert!(matches!(
        bucket.read(&sha256).await,
        Err(BlobError::NotFound(_))
    ));
    app.stop().await;
}

tessera_store::on_both_databases!(uploads_live_in_the_bucket);
