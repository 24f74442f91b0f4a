//! `/v1/api-keys` and `Authorization: Bearer tsk_…` over HTTPS: create (secret shown once,
//! stored only as a keyed hash), use with the key's own scopes, `lastUsedAt`, revocation
//! effective on the next request, expiry, tenant isolation, no scope escalation, validation,
//! and usage attributed to the key, on SQLite and PostgreSQL.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::{Backend, testing::text_rows};

use crate::{
    chats::{LOCAL, local_app},
    support::{TestApp, ok, problem},
};

/// An organization with an `org:admin` client: (organization id, client id, token).
async fn admin(app: &TestApp) -> (String, String, String) {
    let (org, client, secret) = app.organization_with_client("org:admin").await;
    let token = app.token(&client, &secret).await;
    (org, client, token)
}

async fn create(app: &TestApp, token: &str, body: &Value) -> reqwest::Response {
    app.call_json(Method::POST, "/v1/api-keys", token, body)
        .await
}

/// Creates a key; returns its record (with the secret).
async fn created(app: &TestApp, token: &str, body: &Value) -> Value {
    ok(create(app, token, body).await, 201).await
}

async fn keys_authenticate_until_revoked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org, client, token) = admin(&app).await;
    let response = create(
        &app,
        &token,
        &json!({"name": " deploy bot ", "scopes": ["models:read", "chat:invoke"]}),
    )
    .await;
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let body: Value = response.json().await.unwrap();
    let id = body["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("key_"), "{body}");
    assert_eq!(location, format!("/v1/api-keys/{id}"));
    let secret = body["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("tsk_") && secret.len() == 47, "{secret}");
    assert_eq!(
        (
            body["name"].as_str(),
            body["organizationId"].as_str(),
            body["createdBy"].as_str()
        ),
        (
            Some("deploy bot"),
            Some(org.as_str()),
            Some(client.as_str())
        )
    );
    assert_eq!(body["scopes"], json!(["chats:invoke", "models:read"]));
    assert!(body["expiresAt"].is_null() && body["lastUsedAt"].is_null());
    assert!(body["createdAt"].is_string());

    // Only the keyed hash is stored: no column of the row holds the secret or its random part.
    let rows = text_rows(
        &app.state.database,
        "SELECT id || ' ' || name || ' ' || scopes || ' ' || secret_hash || ' ' || created_by AS value FROM api_keys",
    )
    .await;
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].contains(&secret[4..]), "{}", rows[0]);
    let hashes = text_rows(
        &app.state.database,
        "SELECT secret_hash AS value FROM api_keys",
    )
    .await;
    assert!(
        hashes[0].len() == 64 && hashes[0].bytes().all(|b| b.is_ascii_hexdigit()),
        "an HMAC-SHA256 in hex: {}",
        hashes[0]
    );

    // The key works on every kind of operation, with its own scopes only.
    let organization = ok(
        app.call(Method::GET, "/v1/organization", &secret).await,
        200,
    )
    .await;
    assert_eq!(organization["id"], org.as_str());
    let catalog = app.call(Method::GET, "/v1/models/catalog", &secret).await;
    assert_eq!(catalog.status(), 200);
    assert!(catalog.headers().contains_key("ratelimit-limit"));
    problem(
        app.call(Method::GET, "/v1/files", &secret).await,
        403,
        "insufficient_scope",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/api-keys", &secret).await,
        403,
        "insufficient_scope",
    )
    .await;

    // Read back without the secret, with its last use.
    let fetched = ok(app.call(Method::GET, &location, &token).await, 200).await;
    assert!(fetched.get("secret").is_none(), "{fetched}");
    assert!(fetched["lastUsedAt"].is_string(), "{fetched}");
    assert_eq!(fetched["id"], id.as_str());

    let second = created(
        &app,
        &token,
        &json!({"name": "second", "scopes": ["files:read"]}),
    )
    .await;
    let page = ok(
        app.call(Method::GET, "/v1/api-keys?limit=1", &token).await,
        200,
    )
    .await;
    assert_eq!(
        (page["totalCount"].as_u64(), page["hasMore"].as_bool()),
        (Some(2), Some(true))
    );
    assert_eq!(page["items"][0]["id"], id.as_str());
    assert!(page["items"][0].get("secret").is_none());
    let cursor = page["nextCursor"].as_str().unwrap();
    let next = ok(
        app.call(
            Method::GET,
            &format!("/v1/api-keys?limit=1&cursor={cursor}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(next["items"][0]["id"], second["id"]);
    assert_eq!(next["hasMore"], false);

    // Revocation holds on the very next request.
    assert_eq!(
        app.call(Method::DELETE, &location, &token).await.status(),
        204
    );
    let refused = app.call(Method::GET, "/v1/organization", &secret).await;
    assert!(refused.headers().contains_key("www-authenticate"));
    let refused = problem(refused, 401, "invalid_token").await;
    assert_eq!(
        refused["detail"], "the API key is unknown or has been revoked",
        "{refused}"
    );
    problem(
        app.call(Method::GET, &location, &token).await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(Method::DELETE, &location, &token).await,
        404,
        "not_found",
    )
    .await;
    let listed = ok(app.call(Method::GET, "/v1/api-keys", &token).await, 200).await;
    assert_eq!(listed["totalCount"], 1);
    assert_eq!(listed["items"][0]["id"], second["id"]);

    // A key nobody made, or one cut short, is refused the same way.
    let forged = format!("tsk_{}", "A".repeat(43));
    for presented in [forged.as_str(), "tsk_short"] {
        problem(
            app.call(Method::GET, "/v1/organization", presented).await,
            401,
            "invalid_token",
        )
        .await;
    }
}

async fn expired_keys_are_refused(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, _, token) = admin(&app).await;
    let expires_at = chrono::Utc::now() + chrono::Duration::seconds(3);
    let key = created(
        &app,
        &token,
        &json!({"name": "short-lived", "scopes": ["models:read"], "expiresAt": expires_at}),
    )
    .await;
    let parsed: chrono::DateTime<chrono::Utc> = key["expiresAt"].as_str().unwrap().parse().unwrap();
    assert_eq!(parsed, expires_at, "microseconds are kept");
    let secret = key["secret"].as_str().unwrap();
    ok(app.call(Method::GET, "/v1/organization", secret).await, 200).await;
    let left = (expires_at - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(left + Duration::from_millis(300)).await;
    let refused = problem(
        app.call(Method::GET, "/v1/organization", secret).await,
        401,
        "invalid_token",
    )
    .await;
    assert_eq!(refused["detail"], "the API key has expired", "{refused}");
    // Still listed (it was not revoked), with its expiry for the admin to see.
    let listed = ok(app.call(Method::GET, "/v1/api-keys", &token).await, 200).await;
    assert_eq!(listed["items"][0]["id"], key["id"]);
}

async fn tenants_scopes_and_validation_are_enforced(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, _, token_a) = admin(&app).await;
    let (_, _, token_b) = admin(&app).await;
    let key_a = created(
        &app,
        &token_a,
        &json!({"name": "a's", "scopes": ["org:admin"]}),
    )
    .await;
    let location = format!("/v1/api-keys/{}", key_a["id"].as_str().unwrap());

    // Organization B sees none of A's keys, whichever credential it uses.
    let key_b = created(
        &app,
        &token_b,
        &json!({"name": "b's", "scopes": ["org:admin"]}),
    )
    .await;
    let secret_b = key_b["secret"].as_str().unwrap();
    for credential in [token_b.as_str(), secret_b] {
        problem(
            app.call(Method::GET, &location, credential).await,
            404,
            "not_found",
        )
        .await;
        problem(
            app.call(Method::DELETE, &location, credential).await,
            404,
            "not_found",
        )
        .await;
        let listed = ok(app.call(Method::GET, "/v1/api-keys", credential).await, 200).await;
        assert_eq!(listed["totalCount"], 1);
        assert_eq!(listed["items"][0]["id"], key_b["id"]);
    }
    ok(app.call(Method::GET, &location, &token_a).await, 200).await;
    problem(
        app.call(Method::GET, "/v1/api-keys/not-an-id", &token_a)
            .await,
        404,
        "not_found",
    )
    .await;

    // A key may create keys, with no scope it does not hold itself.
    let secret_a = key_a["secret"].as_str().unwrap();
    let child = created(
        &app,
        secret_a,
        &json!({"name": "child", "scopes": ["files:read"]}),
    )
    .await;
    assert_eq!(child["createdBy"], key_a["id"]);
    let escalation = problem(
        create(
            &app,
            &token_a,
            &json!({"name": "x", "scopes": ["files:read", "org:owner"]}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(escalation["detail"][0]["loc"], json!(["body", "scopes", 1]));
    assert_eq!(escalation["detail"][0]["type"], "scope_not_held");
    // A key without `org:admin` cannot manage keys at all.
    problem(
        create(
            &app,
            child["secret"].as_str().unwrap(),
            &json!({"name": "x", "scopes": ["files:read"]}),
        )
        .await,
        403,
        "insufficient_scope",
    )
    .await;

    // Validation: 422 with where and why.
    let past = chrono::Utc::now() - chrono::Duration::minutes(1);
    let cases = [
        (
            json!({"name": "", "scopes": ["files:read"]}),
            json!(["body", "name"]),
        ),
        (
            json!({"name": "   ", "scopes": ["files:read"]}),
            json!(["body", "name"]),
        ),
        (json!({"scopes": ["files:read"]}), json!(["body", "name"])),
        (
            json!({"name": "x", "scopes": []}),
            json!(["body", "scopes"]),
        ),
        (
            json!({"name": "x", "scopes": ["files:read", "nope:read"]}),
            json!(["body", "scopes", 1]),
        ),
        (
            json!({"name": "x", "scopes": ["files:read"], "expiresAt": past}),
            json!(["body", "expiresAt"]),
        ),
        (
            json!({"name": "x", "scopes": ["files:read"], "expiresAt": "tomorrow"}),
            json!(["body", "expiresAt"]),
        ),
        (
            json!({"name": "x", "scopes": ["files:read"], "extra": 1}),
            json!(["body", "extra"]),
        ),
    ];
    for (body, loc) in cases {
        let refused = problem(
            create(&app, &token_a, &body).await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(refused["detail"][0]["loc"], loc, "{body}: {refused}");
    }
    for query in [
        "limit=0",
        "limit=abc",
        "cursor=forged.AAAAAAAAAAAAAAAAAAAAAA",
    ] {
        problem(
            app.call(Method::GET, &format!("/v1/api-keys?{query}"), &token_a)
                .await,
            422,
            "validation_failed",
        )
        .await;
    }
    let listed = ok(app.call(Method::GET, "/v1/api-keys", &token_a).await, 200).await;
    assert_eq!(listed["totalCount"], 2, "nothing refused was created");
}

/// A creation's answer holds the secret, so an `Idempotency-Key` retry is refused (409), never
/// answered with a stored copy of the secret, and creates no second key.
async fn retried_creations_never_replay_the_secret(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, _, token) = admin(&app).await;
    let send = || {
        app.client
            .post(app.url("/v1/api-keys"))
            .bearer_auth(&token)
            .header("Idempotency-Key", "create-bot-once")
            .json(&json!({"name": "bot", "scopes": ["models:read"]}))
            .send()
    };
    let first = ok(send().await.unwrap(), 201).await;
    let retry = problem(send().await.unwrap(), 409, "idempotent_response_withheld").await;
    assert!(!retry.to_string().contains("tsk_"), "{retry}");
    let stored = text_rows(
        &app.state.database,
        "SELECT CASE WHEN response_body IS NULL THEN 'withheld' ELSE 'stored' END AS value FROM idempotency_keys",
    )
    .await;
    assert_eq!(
        stored,
        ["withheld"],
        "the answer with {} was not kept",
        first["id"]
    );
    let listed = ok(app.call(Method::GET, "/v1/api-keys", &token).await, 200).await;
    assert_eq!(listed["totalCount"], 1);
}

/// A completion made with a key is billed to the key: its usage record names the key as the
/// principal, of kind `api_key`.
async fn usage_is_attributed_to_the_key(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let (_, _, token) = admin(&app).await;
    let key = created(
        &app,
        &token,
        &json!({"name": "chat bot", "scopes": ["chats:invoke", "usage:admin"]}),
    )
    .await;
    let (id, secret) = (key["id"].as_str().unwrap(), key["secret"].as_str().unwrap());
    let answer = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            secret,
            &json!({
                "modelId": LOCAL,
                "messages": [{"role": "user", "content": "Hi"}],
                "maxTokens": 2,
                "temperature": 0
            }),
        )
        .await,
        201,
    )
    .await;
    assert!(
        answer["usage"]["totalTokens"].as_u64().unwrap() > 0,
        "{answer}"
    );
    let records = text_rows(
        &app.state.database,
        "SELECT principal || ' ' || principal_kind AS value FROM usage_records",
    )
    .await;
    assert_eq!(records, [format!("{id} api_key")]);
    let report = ok(
        app.call(Method::GET, "/v1/usage?groupBy=user", secret)
            .await,
        200,
    )
    .await;
    assert_eq!(report["totals"]["requests"], 1, "{report}");
    assert_eq!(report["items"][0]["userId"], id, "{report}");
}

tessera_store::on_both_databases!(
    keys_authenticate_until_revoked,
    expired_keys_are_refused,
    tenants_scopes_and_validation_are_enforced,
    retried_creations_never_replay_the_secret,
    usage_is_attributed_to_the_key,
);
