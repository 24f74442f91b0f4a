//! `Idempotency-Key` over HTTPS on both databases: replay, mismatch, concurrency, secrets.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::support::{TestApp, problem};

async fn post(app: &TestApp, token: &str, path: &str, key: &str, body: &str) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

async fn count(app: &TestApp, token: &str, path: &str) -> u64 {
    let page: Value = app
        .call(Method::GET, path, token)
        .await
        .json()
        .await
        .unwrap();
    page["totalCount"].as_u64().unwrap()
}

async fn retries_replay_the_first_response(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, client_id, secret) = app.organization_with_client("particles:admin").await;
    let token = app.token(&client_id, &secret).await;
    let body = r#"{"name": "Tone", "category": "tone", "content": "Be brief."}"#;

    let first = post(&app, &token, "/v1/particles", "key-1", body).await;
    assert_eq!(first.status(), 201);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let location = first.headers()["location"].clone();
    let first: Value = first.json().await.unwrap();

    // The same request, keys reordered and spaced differently: replayed, not run again.
    let same = r#"{"content":"Be brief.","category":"tone","name":"Tone"}"#;
    let replay = post(&app, &token, "/v1/particles", "key-1", same).await;
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.headers()["location"], location);
    assert!(replay.headers().get("ratelimit-remaining").is_some());
    let replayed: Value = replay.json().await.unwrap();
    assert_eq!(replayed, first);
    assert_eq!(count(&app, &token, "/v1/particles").await, 1);

    // The same key with another request is refused; a new key runs.
    let other = r#"{"name": "Tone", "category": "tone", "content": "Be very brief."}"#;
    let reused = problem(
        post(&app, &token, "/v1/particles", "key-1", other).await,
        422,
        "idempotency_key_reused",
    )
    .await;
    // Its body is a validation problem, as the document says of every 422.
    assert_eq!(
        reused["detail"][0]["loc"],
        json!(["header", "Idempotency-Key"])
    );
    assert_eq!(
        post(&app, &token, "/v1/particles", "key-2", other)
            .await
            .status(),
        201
    );
    assert_eq!(count(&app, &token, "/v1/particles").await, 2);

    // Refusals are answers too: a 422 is replayed as a 422.
    let invalid = r#"{"name": "", "category": "tone", "content": "x"}"#;
    problem(
        post(&app, &token, "/v1/particles", "key-3", invalid).await,
        422,
        "validation_failed",
    )
    .await;
    let again = post(&app, &token, "/v1/particles", "key-3", invalid).await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    problem(again, 422, "validation_failed").await;

    // Keys belong to a principal: another client's "key-1" is its own.
    let (_, other_client, other_secret) = app.organization_with_client("particles:admin").await;
    let other_token = app.token(&other_client, &other_secret).await;
    let theirs = post(&app, &other_token, "/v1/particles", "key-1", body).await;
    assert_eq!(theirs.status(), 201);
    assert!(theirs.headers().get("idempotent-replayed").is_none());

    // Malformed keys are refused with their location.
    let long = "k".repeat(256);
    let refused = problem(
        post(&app, &token, "/v1/particles", &long, body).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["header", "Idempotency-Key"])
    );
}

async fn parallel_duplicates_create_one_record(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, client_id, secret) = app.organization_with_client("system-prompts:admin").await;
    let token = app.token(&client_id, &secret).await;
    let body = r#"{"name": "Parallel", "description": "one of twenty"}"#;
    let requests = (0..20).map(|_| post(&app, &token, "/v1/system-prompts", "same-key", body));
    let responses = futures_util::future::join_all(requests).await;
    let mut created = 0;
    let mut ids = std::collections::BTreeSet::new();
    for response in responses {
        match response.status().as_u16() {
            201 => {
                created += 1;
                let body: Value = response.json().await.unwrap();
                ids.insert(body["id"].as_str().unwrap().to_owned());
            }
            409 => {
                assert_eq!(response.headers()["retry-after"], "1");
                problem(response, 409, "idempotency_key_in_flight").await;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(created >= 1);
    assert_eq!(ids.len(), 1, "every 201 names the same record");
    assert_eq!(count(&app, &token, "/v1/system-prompts").await, 1);
}

async fn secrets_are_never_stored_for_replay(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org_id, client_id, secret) = app.organization_with_client("org:admin").await;
    let token = app.token(&client_id, &secret).await;
    let body = r#"{"name": "worker", "scopes": ["files:read"]}"#;
    let first = post(&app, &token, "/v1/clients", "client-key", body).await;
    assert_eq!(first.status(), 201);
    let location = first.headers()["location"].to_str().unwrap().to_owned();
    let created: Value = first.json().await.unwrap();
    let client_secret = created["clientSecret"].as_str().unwrap().to_owned();

    let retry = post(&app, &token, "/v1/clients", "client-key", body).await;
    assert_eq!(retry.headers()["location"].to_str().unwrap(), location);
    let refused = problem(retry, 409, "idempotent_response_withheld").await;
    assert!(refused["detail"].as_str().unwrap().contains(&location));
    assert_eq!(
        count(&app, &token, "/v1/clients").await,
        2,
        "no second client"
    );

    // The stored record has no body: the secret is not in the database.
    use tessera_idempotency::{Claim, Fingerprint, IdempotencyKey, IdempotencyStore, KeyOwner};
    let store = tessera_store::SqlIdempotencyStore::new(app.state.database.clone());
    let owner = KeyOwner {
        organization_id: org_id.parse().unwrap(),
        principal: client_id.clone(),
    };
    let canonical = br#"{"name":"worker","scopes":["files:read"]}"#;
    let now = chrono::Utc::now();
    let claim = store
        .claim(
            &owner,
            &IdempotencyKey::parse("client-key").unwrap(),
            &Fingerprint::of("POST", "/v1/clients", canonical),
            now,
            now + chrono::Duration::hours(1),
        )
        .await
        .unwrap();
    let Claim::Taken(record) = claim else {
        panic!("the key should be taken");
    };
    let response = record.response.unwrap();
    assert_eq!((response.status, response.body), (201, None));
    assert!(!client_secret.is_empty());
}

tessera_store::on_both_databases!(
    retries_replay_the_first_response,
    parallel_duplicates_create_one_record,
    secrets_are_never_stored_for_replay,
);
