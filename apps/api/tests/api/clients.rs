//! `/v1/clients`: create, list, get, rotate and revoke API clients over HTTPS, with
//! validation, scope checks and tenant isolation.

use serde_json::{Value, json};
use tessera_store::Backend;

use crate::support::{TestApp, problem};

async fn admin(app: &TestApp) -> (String, String) {
    let (org_id, client_id, secret) = app.organization_with_client("org:admin").await;
    (org_id, app.token(&client_id, &secret).await)
}

async fn clients_lifecycle_over_http(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org_id, token) = admin(&app).await;
    let created = app
        .client
        .post(app.url("/v1/clients"))
        .bearer_auth(&token)
        .json(&json!({"name": "ingest job", "scopes": ["files:read", "chat:invoke"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let location = created
        .headers()
        .get("location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let body: Value = created.json().await.unwrap();
    let id = body["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/v1/clients/{id}"));
    assert_eq!(
        (body["organizationId"].as_str(), body["scopes"].clone()),
        (Some(org_id.as_str()), json!(["chats:invoke", "files:read"]))
    );
    let secret = body["clientSecret"].as_str().unwrap().to_owned();

    // The new client works.
    let its_token = app.token(&id, &secret).await;
    assert_eq!(
        app.call(reqwest::Method::GET, "/v1/organization", &its_token)
            .await
            .status(),
        200
    );

    let listed: Value = app
        .call(reqwest::Method::GET, "/v1/clients?limit=1", &token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (listed["totalCount"].as_u64(), listed["hasMore"].as_bool()),
        (Some(2), Some(true))
    );
    assert!(
        listed["items"][0].get("clientSecret").is_none(),
        "secrets are shown only once"
    );
    let cursor = listed["nextCursor"].as_str().unwrap();
    let next: Value = app
        .call(
            reqwest::Method::GET,
            &format!("/v1/clients?limit=1&cursor={cursor}"),
            &token,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(next["items"][0]["id"], id.as_str());

    let fetched: Value = app
        .call(reqwest::Method::GET, &location, &token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (
            fetched["name"].as_str(),
            fetched["secretGeneration"].as_u64()
        ),
        (Some("ingest job"), Some(1))
    );

    let rotated: Value = app
        .call(reqwest::Method::POST, &format!("{location}/rotate"), &token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rotated["secretGeneration"], 2);
    assert_ne!(rotated["clientSecret"].as_str(), Some(secret.as_str()));
    problem(
        app.call(reqwest::Method::GET, "/v1/organization", &its_token)
            .await,
        401,
        "invalid_token",
    )
    .await;

    assert_eq!(
        app.call(reqwest::Method::DELETE, &location, &token)
            .await
            .status(),
        204
    );
    problem(
        app.call(reqwest::Method::DELETE, &location, &token).await,
        404,
        "not_found",
    )
    .await;
    let revoked: Value = app
        .call(reqwest::Method::GET, &location, &token)
        .await
        .json()
        .await
        .unwrap();
    assert!(revoked["revokedAt"].is_string());
}

async fn invalid_requests_are_422(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, token) = admin(&app).await;
    let post = |body: String| {
        app.client
            .post(app.url("/v1/clients"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases = [
        (
            json!({"name": "x", "scopes": []}).to_string(),
            json!(["body", "scopes"]),
        ),
        (
            json!({"name": "x", "scopes": ["files:read", "nope"]}).to_string(),
            json!(["body", "scopes", 1]),
        ),
        (
            json!({"name": "", "scopes": ["files:read"]}).to_string(),
            json!(["body", "name"]),
        ),
        (
            json!({"scopes": ["files:read"]}).to_string(),
            json!(["body", "name"]),
        ),
        (
            json!({"name": "x", "scopes": ["files:read"], "extra": 1}).to_string(),
            json!(["body", "extra"]),
        ),
        ("{\"name\": ".to_owned(), json!(["body", "name"])),
    ];
    for (body, loc) in cases {
        let problem_body =
            problem(post(body.clone()).await.unwrap(), 422, "validation_failed").await;
        assert_eq!(problem_body["detail"][0]["loc"], loc, "{body}");
    }
    for query in [
        "limit=0",
        "limit=abc",
        "cursor=forged.AAAAAAAAAAAAAAAAAAAAAA",
    ] {
        let response = app
            .call(
                reqwest::Method::GET,
                &format!("/v1/clients?{query}"),
                &token,
            )
            .await;
        problem(response, 422, "validation_failed").await;
    }
}

async fn scopes_and_tenants_are_enforced(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, token_a) = admin(&app).await;
    let (_, token_b) = admin(&app).await;
    let created: Value = app
        .client
        .post(app.url("/v1/clients"))
        .bearer_auth(&token_a)
        .json(&json!({"name": "a's", "scopes": ["files:read"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let location = format!("/v1/clients/{}", created["id"].as_str().unwrap());

    // Organization B sees none of A's clients: not by id, not in lists, not to change.
    problem(
        app.call(reqwest::Method::GET, &location, &token_b).await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(
            reqwest::Method::POST,
            &format!("{location}/rotate"),
            &token_b,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(reqwest::Method::DELETE, &location, &token_b).await,
        404,
        "not_found",
    )
    .await;
    let listed: Value = app
        .call(reqwest::Method::GET, "/v1/clients", &token_b)
        .await
        .json()
        .await
        .unwrap();
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != created["id"])
    );
    assert_eq!(
        app.call(reqwest::Method::GET, &location, &token_a)
            .await
            .status(),
        200,
        "A still has it"
    );

    // A token without org:admin cannot manage clients; an admin cannot grant org:owner.
    let reader = app
        .token(
            created["id"].as_str().unwrap(),
            created["clientSecret"].as_str().unwrap(),
        )
        .await;
    problem(
        app.call(reqwest::Method::GET, "/v1/clients", &reader).await,
        403,
        "insufficient_scope",
    )
    .await;
    let escalation = app
        .client
        .post(app.url("/v1/clients"))
        .bearer_auth(&token_a)
        .json(&json!({"name": "x", "scopes": ["org:owner"]}))
        .send()
        .await
        .unwrap();
    problem(escalation, 403, "scope_not_held").await;
    problem(
        app.call(reqwest::Method::GET, "/v1/clients/not-an-id", &token_a)
            .await,
        404,
        "not_found",
    )
    .await;
}

tessera_store::on_both_databases!(
    clients_lifecycle_over_http,
    invalid_requests_are_422,
    scopes_and_tenants_are_enforced
);
