//! Response cache policies through the real HTTP stack: a model's policy written, read,
//! listed and removed (catalog models, whose ids contain `/`, and the organization's own),
//! the body checked with every refusal located (`body.semantic.threshold`, unknown fields
//! too), `org:admin` needed, unknown models 404, another organization seeing none of it, and
//! every change in the audit log.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, local_app},
    support::{TestApp, locs, ok, problem},
};

const ADMIN: &str = "org:admin chats:invoke chats:read models:read models:write";
const CATALOG: &str = "openai/gpt-4o-mini";

fn path(model: &str) -> String {
    format!("/v1/response-cache/models/{model}")
}

async fn put(app: &TestApp, token: &str, model: &str, body: &Value) -> reqwest::Response {
    app.call_json(Method::PUT, &path(model), token, body).await
}

async fn listed_models(app: &TestApp, token: &str) -> Vec<String> {
    let listed = ok(
        app.call(Method::GET, "/v1/response-cache/models", token)
            .await,
        200,
    )
    .await;
    (listed["items"].as_array().unwrap().iter())
        .map(|policy| policy["modelId"].as_str().unwrap().to_owned())
        .collect()
}

async fn response_cache_policies_are_organization_resources(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let admin = app.caller_token(ADMIN).await;

    // Absent at first; written (the defaults filled in), read back, replaced whole.
    problem(
        app.call(Method::GET, &path(LOCAL), &admin).await,
        404,
        "not_found",
    )
    .await;
    assert!(listed_models(&app, &admin).await.is_empty());
    let stored = ok(put(&app, &admin, LOCAL, &json!({})).await, 200).await;
    assert_eq!(stored["modelId"], json!(LOCAL));
    assert_eq!(
        stored["policy"],
        json!({"ttlSeconds": 3600, "maxTemperature": 1.0}),
        "{stored}"
    );
    assert!(stored["updatedBy"].is_string() && stored["updatedAt"].is_string());
    let semantic =
        json!({"ttlSeconds": 600, "semantic": {"threshold": 0.9}, "maxTemperature": 0.5});
    let stored = ok(put(&app, &admin, LOCAL, &semantic).await, 200).await;
    assert_eq!(stored["policy"], semantic, "{stored}");
    let read = ok(app.call(Method::GET, &path(LOCAL), &admin).await, 200).await;
    assert_eq!(read, stored);
    let replaced = ok(
        put(&app, &admin, LOCAL, &json!({"semantic": {}})).await,
        200,
    )
    .await;
    assert_eq!(
        replaced["policy"],
        json!({"ttlSeconds": 3600, "semantic": {"threshold": 0.95}, "maxTemperature": 1.0}),
        "{replaced}"
    );

    // Another catalog model and one of the organization's own; listed by model id.
    ok(
        put(&app, &admin, CATALOG, &json!({"ttlSeconds": 60})).await,
        200,
    )
    .await;
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &admin,
            &json!({"parentModelId": LOCAL, "displayName": "Cached"}),
        )
        .await,
        201,
    )
    .await;
    let own = model["id"].as_str().unwrap().to_owned();
    ok(put(&app, &admin, &own, &json!({})).await, 200).await;
    let mut expected = vec![LOCAL.to_owned(), CATALOG.to_owned(), own.clone()];
    expected.sort();
    assert_eq!(listed_models(&app, &admin).await, expected);

    // Unknown models are 404, whether catalog-like or user-model-like.
    for unknown in [
        "local/none",
        "mdl_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
        "nothing",
    ] {
        problem(
            put(&app, &admin, unknown, &json!({})).await,
            404,
            "not_found",
        )
        .await;
        problem(
            app.call(Method::GET, &path(unknown), &admin).await,
            404,
            "not_found",
        )
        .await;
        problem(
            app.call(Method::DELETE, &path(unknown), &admin).await,
            404,
            "not_found",
        )
        .await;
    }

    // Validation: every value out of bounds located in the body, all at once.
    let bad = problem(
        put(
            &app,
            &admin,
            LOCAL,
            &json!({"ttlSeconds": 0, "semantic": {"threshold": 0.2}, "maxTemperature": 2.5}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        locs(&bad),
        [
            "body.ttlSeconds",
            "body.maxTemperature",
            "body.semantic.threshold"
        ],
        "{bad}"
    );
    assert_eq!(bad["detail"][0]["type"], json!("range"), "{bad}");
    assert!(bad["detail"][0]["msg"].is_string());
    for (body, loc) in [
        (json!({"ttlSeconds": 2_592_001}), "body.ttlSeconds"),
        (json!({"ttlSeconds": 5_000_000_000_u64}), "body.ttlSeconds"),
        (
            json!({"semantic": {"threshold": 1.5}}),
            "body.semantic.threshold",
        ),
        (json!({"maxTemperature": -1}), "body.maxTemperature"),
    ] {
        let refused = problem(
            put(&app, &admin, LOCAL, &body).await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(locs(&refused), [loc], "{body}: {refused}");
    }
    // Values of the wrong type and unknown fields are refused where they are.
    let wrong_type = problem(
        put(&app, &admin, LOCAL, &json!({"ttlSeconds": "an hour"})).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(locs(&wrong_type), ["body.ttlSeconds"], "{wrong_type}");
    let unknown_field = problem(
        put(&app, &admin, LOCAL, &json!({"ttlSeconds": 60, "ttl": 60})).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(locs(&unknown_field), ["body.ttl"], "{unknown_field}");
    assert_eq!(
        unknown_field["detail"][0]["type"],
        json!("extra_forbidden"),
        "{unknown_field}"
    );
    let unknown_nested = problem(
        put(
            &app,
            &admin,
            LOCAL,
            &json!({"semantic": {"threshold": 0.9, "model": "x"}}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        locs(&unknown_nested),
        ["body.semantic.model"],
        "{unknown_nested}"
    );
    // A body's refusal comes before the model's lookup: an unknown model's bad body is 422.
    problem(
        put(&app, &admin, "nothing", &json!({"ttlSeconds": 0})).await,
        422,
        "validation_failed",
    )
    .await;
    // The refused writes changed nothing.
    let read = ok(app.call(Method::GET, &path(LOCAL), &admin).await, 200).await;
    assert_eq!(read["policy"], replaced["policy"]);

    // Without org:admin: 403 on every operation.
    let user = app
        .caller_token("chats:invoke chats:read models:read models:write")
        .await;
    for (method, path) in [
        (Method::GET, "/v1/response-cache/models".to_owned()),
        (Method::GET, path(LOCAL)),
        (Method::PUT, path(LOCAL)),
        (Method::DELETE, path(LOCAL)),
    ] {
        let response = app
            .call_json(method.clone(), &path, &user, &json!({}))
            .await;
        assert_eq!(response.status().as_u16(), 403, "{method} {path}");
    }

    // Another organization sees none of it, cannot name this one's model, and has its own.
    let other = app.caller_token(ADMIN).await;
    for model in [LOCAL, CATALOG, own.as_str()] {
        problem(
            app.call(Method::GET, &path(model), &other).await,
            404,
            "not_found",
        )
        .await;
        problem(
            app.call(Method::DELETE, &path(model), &other).await,
            404,
            "not_found",
        )
        .await;
    }
    assert!(listed_models(&app, &other).await.is_empty());
    problem(put(&app, &other, &own, &json!({})).await, 404, "not_found").await;
    ok(
        put(&app, &other, CATALOG, &json!({"ttlSeconds": 5})).await,
        200,
    )
    .await;
    assert_eq!(listed_models(&app, &other).await, [CATALOG]);
    let mine = ok(app.call(Method::GET, &path(CATALOG), &admin).await, 200).await;
    assert_eq!(mine["policy"]["ttlSeconds"], json!(60));

    // Deleted: 204, then 404; the other models' policies stay.
    ok(app.call(Method::DELETE, &path(LOCAL), &admin).await, 204).await;
    problem(
        app.call(Method::DELETE, &path(LOCAL), &admin).await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(Method::GET, &path(LOCAL), &admin).await,
        404,
        "not_found",
    )
    .await;
    let mut expected = vec![CATALOG.to_owned(), own.clone()];
    expected.sort();
    assert_eq!(listed_models(&app, &admin).await, expected);

    // Every change is in the audit log, the model's id as the resource.
    let audit = ok(
        app.call(
            Method::GET,
            "/v1/audit-events?resourceType=response_cache_policy&limit=100",
            &admin,
        )
        .await,
        200,
    )
    .await;
    let mut events: Vec<(String, String)> = (audit["items"].as_array().unwrap().iter())
        .map(|event| {
            assert_eq!(event["resourceType"], json!("response_cache_policy"));
            (
                event["action"].as_str().unwrap().to_owned(),
                event["resourceId"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    events.sort();
    let event =
        |action: &str, model: &str| (format!("response_cache_policy.{action}"), model.to_owned());
    let mut expected = vec![
        event("delete", LOCAL),
        event("update", LOCAL),
        event("update", LOCAL),
        event("update", LOCAL),
        event("update", CATALOG),
        event("update", &own),
    ];
    expected.sort();
    assert_eq!(events, expected, "{audit}");
}

tessera_store::on_both_databases!(response_cache_policies_are_organization_resources);
