//! `GET /v1/audit-events` over HTTPS: the audited changes of each domain appear with their
//! actor, action, resource, address and request id; another organization never sees them; a
//! change that fails leaves no event; refused credentials are recorded without the credential;
//! filters, pages and bad filters; on SQLite and PostgreSQL.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_audit::{AuditQuery, AuditScope};
use tessera_kernel::Limit;
use tessera_store::{Backend, testing::text_rows};

use crate::support::{TestApp, ok, problem};

/// An organization with an `org:admin` client: (organization id, client id, token).
pub async fn admin(app: &TestApp) -> (String, String, String) {
    let (org, client, secret) = app.organization_with_client("org:admin").await;
    let token = app.token(&client, &secret).await;
    (org, client, token)
}

/// Sends `method path` with a bearer token, an optional JSON body and an `X-Request-Id`.
pub async fn traced(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
    request_id: &str,
) -> reqwest::Response {
    let mut request = app
        .client
        .request(method, app.url(path))
        .bearer_auth(token)
        .header("x-request-id", request_id);
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.unwrap()
}

/// The organization's audit events matching `query` (a query string without `?`).
pub async fn events(app: &TestApp, token: &str, query: &str) -> Vec<Value> {
    let page = ok(
        app.call(
            Method::GET,
            &format!("/v1/audit-events?limit=100&{query}"),
            token,
        )
        .await,
        200,
    )
    .await;
    page["items"].as_array().unwrap().clone()
}

/// Asserts the one event of `action` on `resource_id`: made by `actor` (a client id) with
/// `request_id`, from the loopback address; returns it.
pub async fn the_event(
    app: &TestApp,
    token: &str,
    action: &str,
    resource_id: &str,
    actor: &str,
    request_id: &str,
) -> Value {
    let found = events(
        app,
        token,
        &format!("action={action}&resourceId={resource_id}"),
    )
    .await;
    assert_eq!(found.len(), 1, "one {action} of {resource_id}: {found:?}");
    let event = found[0].clone();
    assert_eq!(event["actorKind"], "client", "{event}");
    assert_eq!(event["actorId"], actor, "{event}");
    assert_eq!(event["requestId"], request_id, "{event}");
    assert_eq!(event["address"], "127.0.0.1", "{event}");
    assert!(
        event["occurredAt"].is_string() && event["id"].is_string(),
        "{event}"
    );
    event
}

async fn api_key_and_client_changes_are_audited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org, client, token) = admin(&app).await;
    let (_, _, other) = admin(&app).await;

    let key = ok(
        traced(
            &app,
            Method::POST,
            "/v1/api-keys",
            &token,
            Some(&json!({"name": "bot", "scopes": ["models:read"]})),
            "req-key-create",
        )
        .await,
        201,
    )
    .await;
    let key_id = key["id"].as_str().unwrap();
    let event = the_event(
        &app,
        &token,
        "api_key.create",
        key_id,
        &client,
        "req-key-create",
    )
    .await;
    assert_eq!(
        (&event["resourceType"], &event["organizationId"]),
        (&json!("api_key"), &json!(org))
    );
    let path = format!("/v1/api-keys/{key_id}");
    ok(
        traced(&app, Method::DELETE, &path, &token, None, "req-key-revoke").await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "api_key.revoke",
        key_id,
        &client,
        "req-key-revoke",
    )
    .await;
    // Revoking again reaches the store, changes nothing, and leaves no event.
    problem(
        traced(&app, Method::DELETE, &path, &token, None, "req-again").await,
        404,
        "not_found",
    )
    .await;
    assert!(events(&app, &token, "requestId=req-again").await.is_empty());
    assert_eq!(events(&app, &token, "action=api_key.revoke").await.len(), 1);

    // Clients: created, rotated, revoked.
    let created = ok(
        traced(
            &app,
            Method::POST,
            "/v1/clients",
            &token,
            Some(&json!({"name": "ci", "scopes": ["files:read"]})),
            "req-client-create",
        )
        .await,
        201,
    )
    .await;
    let ci = created["id"].as_str().unwrap().to_owned();
    the_event(
        &app,
        &token,
        "client.create",
        &ci,
        &client,
        "req-client-create",
    )
    .await;
    let rotate = format!("/v1/clients/{ci}/rotate");
    ok(
        traced(&app, Method::POST, &rotate, &token, None, "req-rotate").await,
        200,
    )
    .await;
    the_event(
        &app,
        &token,
        "client.rotate_secret",
        &ci,
        &client,
        "req-rotate",
    )
    .await;
    let path = format!("/v1/clients/{ci}");
    ok(
        traced(
            &app,
            Method::DELETE,
            &path,
            &token,
            None,
            "req-client-revoke",
        )
        .await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "client.revoke",
        &ci,
        &client,
        "req-client-revoke",
    )
    .await;
    problem(
        traced(
            &app,
            Method::POST,
            &rotate,
            &token,
            None,
            "req-rotate-revoked",
        )
        .await,
        404,
        "not_found",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-rotate-revoked")
            .await
            .is_empty()
    );

    // Another organization sees none of it, by any filter.
    for query in ["", "action=api_key.create", &format!("resourceId={key_id}")] {
        let theirs = events(&app, &other, query).await;
        assert!(
            theirs.iter().all(|e| e["organizationId"] != json!(org)),
            "{query}: {theirs:?}"
        );
        assert!(theirs.iter().all(|e| e["resourceId"] != json!(key_id)));
    }
    // Nor does a key without `org:admin`.
    let reader = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            &token,
            &json!({"name": "reader", "scopes": ["models:read"]}),
        )
        .await,
        201,
    )
    .await;
    problem(
        app.call(
            Method::GET,
            "/v1/audit-events",
            reader["secret"].as_str().unwrap(),
        )
        .await,
        403,
        "insufficient_scope",
    )
    .await;
}

async fn lists_filter_and_page_newest_first(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, client, token) = admin(&app).await;
    let (_, _, other) = admin(&app).await;
    let mut ids = Vec::new();
    for name in ["a", "b", "c"] {
        let key = ok(
            app.call_json(
                Method::POST,
                "/v1/api-keys",
                &token,
                &json!({"name": name, "scopes": ["models:read"]}),
            )
            .await,
            201,
        )
        .await;
        ids.push(key["id"].as_str().unwrap().to_owned());
    }
    let first = ok(
        app.call(
            Method::GET,
            "/v1/audit-events?action=api_key.create&limit=2",
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (first["totalCount"].as_u64(), first["hasMore"].as_bool()),
        (Some(3), Some(true)),
        "{first}"
    );
    let newest: Vec<&str> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["resourceId"].as_str().unwrap())
        .collect();
    assert_eq!(newest, [ids[2].as_str(), ids[1].as_str()]);
    let cursor = first["nextCursor"].as_str().unwrap();
    let rest = ok(
        app.call(
            Method::GET,
            &format!("/v1/audit-events?action=api_key.create&limit=2&cursor={cursor}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(rest["items"][0]["resourceId"], ids[0].as_str());
    assert_eq!(rest["hasMore"], false);
    // The cursor belongs to this organization's list.
    problem(
        app.call(
            Method::GET,
            &format!("/v1/audit-events?cursor={cursor}"),
            &other,
        )
        .await,
        422,
        "validation_failed",
    )
    .await;

    // Filters: actor, resource type, time range.
    assert_eq!(
        events(
            &app,
            &token,
            &format!("actorKind=client&actorId={client}&resourceType=api_key")
        )
        .await
        .len(),
        3
    );
    assert!(
        events(&app, &token, "actorKind=api_key").await.is_empty(),
        "no key made a change"
    );
    assert!(
        events(
            &app,
            &token,
            "from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z"
        )
        .await
        .is_empty()
    );
    assert_eq!(
        events(
            &app,
            &token,
            "action=api_key.create&from=2000-01-01T00:00:00Z"
        )
        .await
        .len(),
        3
    );

    // Bad filters: located 422s.
    for (query, field) in [
        ("from=yesterday", "from"),
        ("actorKind=root", "actorKind"),
        ("from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "to"),
        ("limit=0", "limit"),
        ("colour=blue", "colour"),
    ] {
        let body = problem(
            app.call(Method::GET, &format!("/v1/audit-events?{query}"), &token)
                .await,
            422,
            "validation_failed",
        )
        .await;
        let locs = body["detail"].to_string();
        assert!(
            body["detail"][0]["loc"][0] == "query" && locs.contains(field),
            "{query}: {body}"
        );
        assert!(body["detail"][0]["msg"].is_string() && body["detail"][0]["type"].is_string());
    }
}

async fn refused_credentials_are_recorded_without_them(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org, client, token) = admin(&app).await;
    let (_, _, other) = admin(&app).await;

    // A wrong secret for an existing client: its organization sees the refusal.
    let wrong = "tss_wrong-secret-that-must-not-be-stored";
    let response = app
        .client
        .post(app.url("/oauth/token"))
        .header("x-request-id", "req-bad-secret")
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", client.as_str()),
            ("client_secret", wrong),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let refused = events(&app, &token, "action=authentication.fail").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    let event = &refused[0];
    assert_eq!(
        (
            &event["actorKind"],
            &event["actorId"],
            &event["resourceType"],
            &event["resourceId"],
            &event["organizationId"],
            &event["requestId"],
            &event["address"],
        ),
        (
            &json!("anonymous"),
            &Value::Null,
            &json!("client_secret"),
            &json!(client),
            &json!(org),
            &json!("req-bad-secret"),
            &json!("127.0.0.1"),
        )
    );

    // A revoked API key: the key and its organization are known.
    let key = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            &token,
            &json!({"name": "old", "scopes": ["models:read"]}),
        )
        .await,
        201,
    )
    .await;
    let (key_id, secret) = (key["id"].as_str().unwrap(), key["secret"].as_str().unwrap());
    ok(
        app.call(Method::DELETE, &format!("/v1/api-keys/{key_id}"), &token)
            .await,
        204,
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/models", secret).await,
        401,
        "invalid_token",
    )
    .await;
    let refused = events(
        &app,
        &token,
        "action=authentication.fail&resourceType=api_key",
    )
    .await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["resourceId"], key_id);

    // A token nobody issued: no organization, so only operators see it.
    let garbage = "not.a.token";
    problem(
        app.call(Method::GET, "/v1/models", garbage).await,
        401,
        "invalid_token",
    )
    .await;
    let unknown_key = format!("tsk_{}", "A".repeat(43));
    problem(
        app.call(Method::GET, "/v1/models", &unknown_key).await,
        401,
        "invalid_token",
    )
    .await;
    for credential in [&token, &other] {
        let seen = events(&app, credential, "action=authentication.fail").await;
        assert!(
            seen.iter().all(|e| !e["organizationId"].is_null()),
            "{seen:?}"
        );
    }
    assert!(
        events(&app, &other, "action=authentication.fail")
            .await
            .is_empty()
    );
    let everyone = app
        .state
        .audit
        .list(
            &AuditScope::All,
            AuditQuery {
                action: Some("authentication.fail".into()),
                ..AuditQuery::default()
            },
            Limit::new(100).unwrap(),
            None,
        )
        .await
        .unwrap();
    let kinds: Vec<(&str, bool)> = everyone
        .items
        .iter()
        .map(|e| (e.resource_type.as_str(), e.organization_id.is_none()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("api_key", true),
            ("access_token", true),
            ("api_key", false),
            ("client_secret", false)
        ]
    );

    // No column of any event holds a presented credential.
    let stored = text_rows(
        &app.state.database,
        "SELECT coalesce(organization_id, '') || ' ' || actor_kind || ' ' || coalesce(actor_id, '') || ' ' || action || ' ' || resource_type || ' ' || coalesce(resource_id, '') || ' ' || coalesce(address, '') || ' ' || coalesce(request_id, '') AS value FROM audit_events",
    )
    .await;
    for row in &stored {
        for credential in [wrong, secret, &secret[4..], garbage, &unknown_key, &token] {
            assert!(!row.contains(credential), "{row}");
        }
    }
}

async fn webhook_and_model_changes_are_audited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org, client, token) = admin(&app).await;
    let (_, _, other) = admin(&app).await;

    // Webhooks: created and deleted; deleting again leaves nothing.
    let hook = ok(
        traced(
            &app,
            Method::POST,
            "/v1/webhooks",
            &token,
            Some(&json!({"url": "https://hooks.example.com/tessera", "events": ["file.ready"]})),
            "req-hook-create",
        )
        .await,
        201,
    )
    .await;
    let hook_id = hook["id"].as_str().unwrap();
    the_event(
        &app,
        &token,
        "webhook.create",
        hook_id,
        &client,
        "req-hook-create",
    )
    .await;
    let path = format!("/v1/webhooks/{hook_id}");
    ok(
        traced(&app, Method::DELETE, &path, &token, None, "req-hook-delete").await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "webhook.delete",
        hook_id,
        &client,
        "req-hook-delete",
    )
    .await;
    problem(
        traced(&app, Method::DELETE, &path, &token, None, "req-hook-again").await,
        404,
        "not_found",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-hook-again")
            .await
            .is_empty()
    );

    // Models: created, updated, linked to a dataset, unlinked, deleted.
    let model = ok(
        traced(
            &app,
            Method::POST,
            "/v1/models",
            &token,
            Some(&json!({"parentModelId": crate::chats::LOCAL, "displayName": "Tutor"})),
            "req-model-create",
        )
        .await,
        201,
    )
    .await;
    let model_id = model["id"].as_str().unwrap();
    the_event(
        &app,
        &token,
        "model.create",
        model_id,
        &client,
        "req-model-create",
    )
    .await;
    let path = format!("/v1/models/{model_id}");
    ok(
        traced(
            &app,
            Method::PATCH,
            &path,
            &token,
            Some(&json!({"displayName": "Geography tutor"})),
            "req-model-update",
        )
        .await,
        200,
    )
    .await;
    the_event(
        &app,
        &token,
        "model.update",
        model_id,
        &client,
        "req-model-update",
    )
    .await;
    // A refused update (a parent that is not in the catalog) leaves no event.
    problem(
        traced(
            &app,
            Method::PATCH,
            &path,
            &token,
            Some(&json!({"parentModelId": "nowhere/none"})),
            "req-model-refused",
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-model-refused")
            .await
            .is_empty()
    );

    let dataset = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": "faq"}),
        )
        .await,
        201,
    )
    .await;
    let dataset_id = dataset["id"].as_str().unwrap();
    let links = format!("/v1/models/{model_id}/datasets");
    let linked = traced(
        &app,
        Method::POST,
        &links,
        &token,
        Some(&json!({"datasetId": dataset_id, "usageType": "rag"})),
        "req-link",
    )
    .await;
    assert!(linked.status().is_success(), "{}", linked.status());
    let link_id = format!("{model_id}/{dataset_id}");
    let event = the_event(
        &app,
        &token,
        "model_dataset.link",
        &link_id,
        &client,
        "req-link",
    )
    .await;
    assert_eq!(event["resourceType"], "model_dataset");
    let unlink = format!("{links}/{dataset_id}");
    ok(
        traced(&app, Method::DELETE, &unlink, &token, None, "req-unlink").await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "model_dataset.unlink",
        &link_id,
        &client,
        "req-unlink",
    )
    .await;
    problem(
        traced(
            &app,
            Method::DELETE,
            &unlink,
            &token,
            None,
            "req-unlink-again",
        )
        .await,
        404,
        "not_found",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-unlink-again")
            .await
            .is_empty()
    );

    ok(
        traced(
            &app,
            Method::DELETE,
            &path,
            &token,
            None,
            "req-model-delete",
        )
        .await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "model.delete",
        model_id,
        &client,
        "req-model-delete",
    )
    .await;

    let theirs = events(&app, &other, "").await;
    assert!(
        theirs.iter().all(|e| e["organizationId"] != json!(org)),
        "{theirs:?}"
    );
    assert!(events(&app, &other, "resourceType=model").await.is_empty());
    assert!(
        events(&app, &other, "resourceType=webhook")
            .await
            .is_empty()
    );
}

async fn prompt_changes_are_audited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org, client, token) = admin(&app).await;
    let (_, _, other) = admin(&app).await;
    let send = |method: Method, path: String, body: Option<Value>, request: &'static str| {
        let (app, token) = (&app, token.clone());
        async move { traced(app, method, &path, &token, body.as_ref(), request).await }
    };

    let particle = ok(
        send(
            Method::POST,
            "/v1/particles".into(),
            Some(json!({"name": "Terse", "category": "tone", "content": "Be terse.", "description": "Short"})),
            "req-particle-create",
        )
        .await,
        201,
    )
    .await;
    let particle_id = particle["id"].as_str().unwrap().to_owned();
    the_event(
        &app,
        &token,
        "particle.create",
        &particle_id,
        &client,
        "req-particle-create",
    )
    .await;
    let particle_path = format!("/v1/particles/{particle_id}");
    ok(
        send(
            Method::PATCH,
            particle_path.clone(),
            Some(json!({"name": "Very terse"})),
            "req-particle-rename",
        )
        .await,
        200,
    )
    .await;
    the_event(
        &app,
        &token,
        "particle.update",
        &particle_id,
        &client,
        "req-particle-rename",
    )
    .await;

    let prompt = ok(
        send(
            Method::POST,
            "/v1/system-prompts".into(),
            Some(
                json!({"name": "Support", "particles": [{"particleId": particle_id, "order": 0}]}),
            ),
            "req-prompt-create",
        )
        .await,
        201,
    )
    .await;
    let prompt_id = prompt["id"].as_str().unwrap().to_owned();
    the_event(
        &app,
        &token,
        "system_prompt.create",
        &prompt_id,
        &client,
        "req-prompt-create",
    )
    .await;

    // A placement: added, moved, removed.
    let placements = format!("/v1/system-prompts/{prompt_id}/particles");
    let added = ok(
        send(
            Method::POST,
            placements.clone(),
            Some(json!({"particleId": particle_id, "order": 1})),
            "req-place",
        )
        .await,
        201,
    )
    .await;
    let placement = added["id"].as_str().unwrap().to_owned();
    let event = the_event(
        &app,
        &token,
        "system_prompt_particle.add",
        &placement,
        &client,
        "req-place",
    )
    .await;
    assert_eq!(event["resourceType"], "system_prompt_particle");
    let placement_path = format!("{placements}/{placement}");
    ok(
        send(
            Method::PATCH,
            placement_path.clone(),
            Some(json!({"order": 5})),
            "req-move",
        )
        .await,
        200,
    )
    .await;
    the_event(
        &app,
        &token,
        "system_prompt_particle.update",
        &placement,
        &client,
        "req-move",
    )
    .await;

    // Deleting a placed particle reaches the store, which refuses it: no event.
    problem(
        send(
            Method::DELETE,
            particle_path.clone(),
            None,
            "req-particle-in-use",
        )
        .await,
        409,
        "particle_in_use",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-particle-in-use")
            .await
            .is_empty()
    );

    ok(
        send(Method::DELETE, placement_path.clone(), None, "req-unplace").await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "system_prompt_particle.remove",
        &placement,
        &client,
        "req-unplace",
    )
    .await;
    problem(
        send(Method::DELETE, placement_path, None, "req-unplace-again").await,
        404,
        "not_found",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-unplace-again")
            .await
            .is_empty()
    );

    let prompt_path = format!("/v1/system-prompts/{prompt_id}");
    ok(
        send(
            Method::PATCH,
            prompt_path.clone(),
            Some(json!({"enabled": false})),
            "req-prompt-update",
        )
        .await,
        200,
    )
    .await;
    the_event(
        &app,
        &token,
        "system_prompt.update",
        &prompt_id,
        &client,
        "req-prompt-update",
    )
    .await;
    ok(
        send(Method::DELETE, prompt_path, None, "req-prompt-delete").await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "system_prompt.delete",
        &prompt_id,
        &client,
        "req-prompt-delete",
    )
    .await;
    ok(
        send(Method::DELETE, particle_path, None, "req-particle-delete").await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "particle.delete",
        &particle_id,
        &client,
        "req-particle-delete",
    )
    .await;

    let theirs = events(&app, &other, "").await;
    assert!(
        theirs.iter().all(|e| e["organizationId"] != json!(org)),
        "{theirs:?}"
    );
    assert!(
        events(&app, &other, "resourceType=particle")
            .await
            .is_empty()
    );
}

/// Uploads a file with an `X-Request-Id`; returns its record.
async fn upload_traced(app: &TestApp, token: &str, name: &str, request_id: &str) -> Value {
    use reqwest::multipart::{Form, Part};
    let form = Form::new().part(
        "file",
        Part::bytes(format!("# {name}\n\nSome notes.").into_bytes()).file_name(name.to_owned()),
    );
    let response = app
        .client
        .post(app.url("/v1/files"))
        .bearer_auth(token)
        .header("x-request-id", request_id)
        .multipart(form)
        .send()
        .await
        .unwrap();
    ok(response, 201).await
}

async fn knowledge_changes_are_audited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org, client, token) = admin(&app).await;
    let (_, _, other) = admin(&app).await;

    let file = upload_traced(&app, &token, "notes.md", "req-upload").await;
    let file_id = file["id"].as_str().unwrap().to_owned();
    the_event(&app, &token, "file.upload", &file_id, &client, "req-upload").await;

    let dataset = ok(
        traced(
            &app,
            Method::POST,
            "/v1/datasets",
            &token,
            Some(&json!({"name": "Docs"})),
            "req-ds-create",
        )
        .await,
        201,
    )
    .await;
    let dataset_id = dataset["id"].as_str().unwrap().to_owned();
    the_event(
        &app,
        &token,
        "dataset.create",
        &dataset_id,
        &client,
        "req-ds-create",
    )
    .await;
    let dataset_path = format!("/v1/datasets/{dataset_id}");
    ok(
        traced(
            &app,
            Method::PATCH,
            &dataset_path,
            &token,
            Some(&json!({"name": "Handbook"})),
            "req-ds-update",
        )
        .await,
        200,
    )
    .await;
    the_event(
        &app,
        &token,
        "dataset.update",
        &dataset_id,
        &client,
        "req-ds-update",
    )
    .await;

    // The file joins the dataset once: a repeated association changes nothing.
    let associations = format!("/v1/files/{file_id}/associations");
    let body = json!({"datasetId": dataset_id});
    for request in ["req-associate", "req-associate-again"] {
        let response = traced(
            &app,
            Method::POST,
            &associations,
            &token,
            Some(&body),
            request,
        )
        .await;
        assert!(response.status().is_success(), "{}", response.status());
    }
    let membership = format!("{dataset_id}/{file_id}");
    the_event(
        &app,
        &token,
        "dataset_file.add",
        &membership,
        &client,
        "req-associate",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-associate-again")
            .await
            .is_empty()
    );

    ok(
        traced(
            &app,
            Method::POST,
            &format!("{dataset_path}/snapshots"),
            &token,
            None,
            "req-snapshot",
        )
        .await,
        201,
    )
    .await;
    the_event(
        &app,
        &token,
        "dataset.snapshot",
        &dataset_id,
        &client,
        "req-snapshot",
    )
    .await;

    // Deleting a file a dataset holds reaches the store, which refuses it: no event.
    let file_path = format!("/v1/files/{file_id}");
    problem(
        traced(
            &app,
            Method::DELETE,
            &file_path,
            &token,
            None,
            "req-file-in-use",
        )
        .await,
        409,
        "file_in_use",
    )
    .await;
    assert!(
        events(&app, &token, "requestId=req-file-in-use")
            .await
            .is_empty()
    );

    ok(
        traced(
            &app,
            Method::DELETE,
            &format!("{associations}/{dataset_id}"),
            &token,
            None,
            "req-dissociate",
        )
        .await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "dataset_file.remove",
        &membership,
        &client,
        "req-dissociate",
    )
    .await;
    ok(
        traced(
            &app,
            Method::DELETE,
            &dataset_path,
            &token,
            None,
            "req-ds-delete",
        )
        .await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "dataset.delete",
        &dataset_id,
        &client,
        "req-ds-delete",
    )
    .await;
    ok(
        traced(
            &app,
            Method::DELETE,
            &file_path,
            &token,
            None,
            "req-file-delete",
        )
        .await,
        204,
    )
    .await;
    the_event(
        &app,
        &token,
        "file.delete",
        &file_id,
        &client,
        "req-file-delete",
    )
    .await;

    // Bulk deletion: one event per deleted file, none for the ones refused.
    let second = upload_traced(&app, &token, "more.md", "req-upload-2").await;
    let second_id = second["id"].as_str().unwrap().to_owned();
    ok(
        traced(
            &app,
            Method::POST,
            "/v1/files/bulk-delete",
            &token,
            Some(&json!({"fileIds": [second_id, file_id]})),
            "req-bulk",
        )
        .await,
        200,
    )
    .await;
    let bulk = events(&app, &token, "requestId=req-bulk").await;
    assert_eq!(bulk.len(), 1, "{bulk:?}");
    assert_eq!(
        (&bulk[0]["action"], &bulk[0]["resourceId"]),
        (&json!("file.delete"), &json!(second_id))
    );

    let theirs = events(&app, &other, "").await;
    assert!(
        theirs.iter().all(|e| e["organizationId"] != json!(org)),
        "{theirs:?}"
    );
    assert!(events(&app, &other, "resourceType=file").await.is_empty());
}

tessera_store::on_both_databases!(
    knowledge_changes_are_audited,
    prompt_changes_are_audited,
    webhook_and_model_changes_are_audited,
    api_key_and_client_changes_are_audited,
    lists_filter_and_page_newest_first,
    refused_credentials_are_recorded_without_them,
);
