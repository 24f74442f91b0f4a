//! `/v1/api-keys/{id}/limits` and `/v1/clients/{id}/limits` over HTTPS: limits set, read,
//! replaced and lifted (audited, validated, tenant-scoped, `org:admin` only), and enforced:
//! a key's model allow-list on every completion dialect and on the model lists it is shown,
//! a key's spent budget refused while another key of the same organization goes on, on
//! SQLite and PostgreSQL.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::{Backend, testing::text_rows};

use crate::{
    openai::openai_error,
    support::{TestApp, locs, ok, problem},
};

/// An organization's `org:admin` token: (organization id, token).
async fn admin(app: &TestApp) -> (String, String) {
    let (org, client, secret) = app
        .organization_with_client("org:admin chats:admin usage:admin models:read")
        .await;
    (org, app.token(&client, &secret).await)
}

/// A new API key of the admin's organization: (id, secret).
async fn key(app: &TestApp, token: &str, scopes: &[&str]) -> (String, String) {
    let key = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            token,
            &json!({"name": "limited", "scopes": scopes}),
        )
        .await,
        201,
    )
    .await;
    (
        key["id"].as_str().unwrap().to_owned(),
        key["secret"].as_str().unwrap().to_owned(),
    )
}

async fn put_limits(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    app.call_json(Method::PUT, path, token, body).await
}

async fn limits_are_set_read_and_lifted(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, token) = admin(&app).await;
    let (id, _) = key(&app, &token, &["chats:invoke"]).await;
    let path = format!("/v1/api-keys/{id}/limits");

    let none = ok(app.call(Method::GET, &path, &token).await, 200).await;
    assert_eq!(
        none,
        json!({"credential": id, "models": null, "budget": null, "updatedAt": null})
    );

    let set = ok(
        put_limits(
            &app,
            &token,
            &path,
            &json!({"models": ["test/b", "test/a", "test/a"],
                    "budget": {"credits": 500, "period": "week"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(set["models"], json!(["test/a", "test/b"]), "{set}");
    let budget = &set["budget"];
    assert_eq!(
        (
            &budget["credits"],
            &budget["period"],
            &budget["onSpent"],
            &budget["usedCredits"]
        ),
        (&json!(500), &json!("week"), &json!("refuse"), &json!(0)),
        "{set}"
    );
    assert!(
        budget["resetsAt"].as_str().unwrap().ends_with("T00:00:00Z"),
        "{set}"
    );
    assert!(set["updatedAt"].is_string(), "{set}");
    assert_eq!(
        ok(app.call(Method::GET, &path, &token).await, 200).await,
        set
    );

    // A PUT replaces the limits whole: no budget now.
    let replaced = ok(
        put_limits(&app, &token, &path, &json!({"models": []})).await,
        200,
    )
    .await;
    assert_eq!(
        (&replaced["models"], &replaced["budget"]),
        (&json!([]), &Value::Null)
    );

    // Every problem at once, located.
    let invalid = problem(
        put_limits(
            &app,
            &token,
            &path,
            &json!({"models": [" padded", ""],
                    "budget": {"credits": 0, "period": "year", "onSpent": "shrug"}}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        locs(&invalid),
        [
            "body.models.0",
            "body.models.1",
            "body.budget.credits",
            "body.budget.period",
            "body.budget.onSpent"
        ],
        "{invalid}"
    );
    problem(
        put_limits(&app, &token, &path, &json!({"model": ["typo"]})).await,
        422,
        "validation_failed",
    )
    .await;

    // Tenants, ids and scopes.
    let (_, stranger) = admin(&app).await;
    problem(
        app.call(Method::GET, &path, &stranger).await,
        404,
        "not_found",
    )
    .await;
    problem(
        put_limits(&app, &stranger, &path, &json!({})).await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/api-keys/key_nope/limits", &token)
            .await,
        404,
        "not_found",
    )
    .await;
    let invoker = app.caller_token("chats:invoke").await;
    problem(
        app.call(Method::GET, &path, &invoker).await,
        403,
        "insufficient_scope",
    )
    .await;

    // A client's limits, the same way; another organization's client is not found.
    let (_, foreign_client, _) = app.organization_with_client("chats:invoke").await;
    problem(
        app.call(
            Method::GET,
            &format!("/v1/clients/{foreign_client}/limits"),
            &token,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let client = ok(
        app.call_json(
            Method::POST,
            "/v1/clients",
            &token,
            &json!({"name": "worker", "scopes": ["chats:invoke"],
                    "limits": {"models": ["test/a"]}}),
        )
        .await,
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let client_path = format!("/v1/clients/{client}/limits");
    let born = ok(app.call(Method::GET, &client_path, &token).await, 200).await;
    assert_eq!(
        (&born["models"], &born["budget"]),
        (&json!(["test/a"]), &Value::Null),
        "{born}"
    );
    let set = ok(
        put_limits(
            &app,
            &token,
            &client_path,
            &json!({"budget": {"credits": 9, "period": "day", "onSpent": "refuse"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(set["credential"], client.as_str(), "{set}");
    assert_eq!(set["models"], Value::Null);

    // A key can be created with its limits; invalid ones create no key.
    let born_limited = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            &token,
            &json!({"name": "born limited", "scopes": ["chats:invoke"],
                    "limits": {"models": ["test/a"], "budget": {"credits": 7, "period": "day"}}}),
        )
        .await,
        201,
    )
    .await;
    let born_path = format!(
        "/v1/api-keys/{}/limits",
        born_limited["id"].as_str().unwrap()
    );
    let born = ok(app.call(Method::GET, &born_path, &token).await, 200).await;
    assert_eq!(
        (&born["models"], &born["budget"]["credits"]),
        (&json!(["test/a"]), &json!(7)),
        "{born}"
    );
    let refused = problem(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            &token,
            &json!({"name": "never", "scopes": ["chats:invoke"],
                    "limits": {"budget": {"credits": -1, "period": "day"}}}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["body", "limits", "budget", "credits"]),
        "{refused}"
    );
    let keys = ok(app.call(Method::GET, "/v1/api-keys", &token).await, 200).await;
    assert_eq!(keys["totalCount"], 2, "{keys}");

    // Lifting is audited like setting; lifting again changes nothing and still answers 204.
    for _ in 0..2 {
        let response = app.call(Method::DELETE, &path, &token).await;
        assert_eq!(response.status(), 204);
    }
    assert_eq!(
        ok(app.call(Method::GET, &path, &token).await, 200).await["models"],
        Value::Null
    );
    let actions = text_rows(
        &app.state.database,
        "SELECT action AS value FROM audit_events WHERE action LIKE '%.limits.%' ORDER BY id",
    )
    .await;
    assert_eq!(
        actions,
        [
            "api_key.limits.set",
            "api_key.limits.set",
            "client.limits.set",
            "client.limits.set",
            "api_key.limits.set",
            "api_key.limits.clear"
        ]
    );
}

const LOCAL: &str = crate::chats::LOCAL;

/// A completion of `model` in each dialect, with `secret`: (dialect, status, body).
async fn ask_everywhere(
    app: &TestApp,
    secret: &str,
    model: &str,
) -> Vec<(&'static str, u16, Value)> {
    let calls = [
        (
            "/v1/chats",
            json!({"modelId": model, "maxTokens": 2, "temperature": 0,
                   "messages": [{"role": "user", "content": "Hi"}]}),
        ),
        (
            "/openai/v1/chat/completions",
            json!({"model": model, "max_tokens": 2, "temperature": 0,
                   "messages": [{"role": "user", "content": "Hi"}]}),
        ),
        (
            "/openai/v1/responses",
            json!({"model": model, "max_output_tokens": 2, "temperature": 0, "input": "Hi"}),
        ),
        (
            "/anthropic/v1/messages",
            json!({"model": model, "max_tokens": 2, "temperature": 0,
                   "messages": [{"role": "user", "content": "Hi"}]}),
        ),
    ];
    let mut answers = Vec::new();
    for (path, body) in calls {
        let response = app.call_json(Method::POST, path, secret, &body).await;
        let status = response.status().as_u16();
        answers.push((path, status, response.json().await.unwrap_or(Value::Null)));
    }
    answers
}

/// Model ids of a model list (`data[].id`).
fn ids(list: &Value) -> Vec<String> {
    (list["data"].as_array().unwrap().iter())
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn limits_are_enforced_on_every_completion(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let catalog_file = dir.path().join("catalog.toml");
    let file = tessera_llm_local::testing::model_path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let model = |id: &str| {
        format!(
            "[[models]]\nid = \"{id}\"\ndisplay_name = \"{id}\"\nprovider = \"local\"\nmodel_name = \"{file}\"\ncontext_window = 2048\ncapabilities = {{ streaming = true }}\ncredit_multiplier = 3\n"
        )
    };
    std::fs::write(
        &catalog_file,
        format!(
            "[providers.local]\nkind = \"local\"\n{}{}",
            model(LOCAL),
            model("test/other")
        ),
    )
    .unwrap();
    let models = crate::chats::model_dir();
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.local_dir = Some(models);
        settings.models.catalog_file = Some(catalog_file);
        settings.knowledge.embedding_model_dir = Some(crate::processing::models_root());
        settings.rate_limit.enabled = false;
        // Read the spend afresh on every request.
        settings.quotas.cache_secs = 0;
    })
    .await;
    let (_, token) = admin(&app).await;
    let scopes = ["chats:invoke", "models:read"];
    let (limited, limited_secret) = key(&app, &token, &scopes).await;
    let (_, free_secret) = key(&app, &token, &scopes).await;
    ok(
        put_limits(
            &app,
            &token,
            &format!("/v1/api-keys/{limited}/limits"),
            &json!({"models": [LOCAL], "budget": {"credits": 5, "period": "day"}}),
        )
        .await,
        200,
    )
    .await;

    // The model lists it is shown name only what it may use.
    let openai = ok(
        app.call(Method::GET, "/openai/v1/models", &limited_secret)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&openai), [LOCAL], "{openai}");
    let anthropic = ok(
        app.call(Method::GET, "/anthropic/v1/models", &limited_secret)
            .await,
        200,
    )
    .await;
    assert_eq!(ids(&anthropic), [LOCAL], "{anthropic}");
    let response = app
        .call(Method::GET, "/openai/v1/models/test/other", &limited_secret)
        .await;
    assert_eq!(response.status(), 404);
    let everything = ok(
        app.call(Method::GET, "/openai/v1/models", &free_secret)
            .await,
        200,
    )
    .await;
    assert!(
        ids(&everything).contains(&"test/other".to_owned()),
        "{everything}"
    );

    // A model off its list is refused in every dialect before anything is generated.
    for (path, status, body) in ask_everywhere(&app, &limited_secret, "test/other").await {
        assert_eq!(status, 403, "{path}: {body}");
        assert!(
            body.to_string().contains("may not use model test/other"),
            "{path}: {body}"
        );
    }
    // Embeddings are admitted as completions are: off its list, refused.
    let embed = |secret: String| {
        let app = &app;
        async move {
            app.call_json(
                Method::POST,
                "/openai/v1/embeddings",
                &secret,
                &json!({"model": "all-MiniLM-L6-v2", "input": "Hi"}),
            )
            .await
        }
    };
    let refused = openai_error(embed(limited_secret.clone()).await, 403).await;
    assert_eq!(refused["code"], "model_not_allowed", "{refused}");
    let billed = || {
        text_rows(
            &app.state.database,
            "SELECT principal AS value FROM usage_records",
        )
    };
    assert!(billed().await.is_empty());

    // A model on its list answers until its budget is spent (3 credits a token).
    let first = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &limited_secret,
            &json!({"modelId": LOCAL, "maxTokens": 2, "temperature": 0,
                    "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .await,
        201,
    )
    .await;
    let spent = first["usage"]["totalTokens"].as_u64().unwrap() * 3;
    assert!(spent >= 5, "{first}");
    let answers = ask_everywhere(&app, &limited_secret, LOCAL).await;
    let statuses: Vec<_> = answers
        .iter()
        .map(|(path, status, _)| (*path, *status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("/v1/chats", 402),
            ("/openai/v1/chat/completions", 429),
            ("/openai/v1/responses", 429),
            ("/anthropic/v1/messages", 402)
        ],
        "{answers:?}"
    );
    let refused = &answers[0].2;
    assert_eq!(refused["code"], "credential_budget_exhausted", "{refused}");
    assert_eq!(
        (
            &refused["credential"],
            &refused["credits"],
            &refused["period"],
            &refused["usedCredits"]
        ),
        (&json!(limited), &json!(5), &json!("day"), &json!(spent)),
        "{refused}"
    );
    assert!(
        refused["resetsAt"]
            .as_str()
            .unwrap()
            .ends_with("T00:00:00+00:00"),
        "{refused}"
    );
    assert_eq!(
        answers[1].2["error"]["code"], "insufficient_quota",
        "{answers:?}"
    );
    // Its limits say what it has spent.
    let limits = ok(
        app.call(
            Method::GET,
            &format!("/v1/api-keys/{limited}/limits"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(limits["budget"]["usedCredits"], json!(spent), "{limits}");

    // Embeddings are billed: the spent budget refuses them too.
    let refused = openai_error(embed(limited_secret.clone()).await, 429).await;
    assert_eq!(refused["code"], "insufficient_quota", "{refused}");
    // Counting a prompt's tokens spends nothing: the spent budget lets it through, the list
    // does not.
    let count = |model: &'static str| {
        let (app, secret) = (&app, limited_secret.clone());
        async move {
            let body = json!({"model": model, "messages": [{"role": "user", "content": "Hi"}]});
            (app.call_json(
                Method::POST,
                "/anthropic/v1/messages/count_tokens",
                &secret,
                &body,
            ))
            .await
        }
    };
    let counted = ok(count(LOCAL).await, 200).await;
    assert!(counted["input_tokens"].as_u64().unwrap() > 0, "{counted}");
    assert_eq!(count("test/other").await.status(), 403);

    // Another key of the same organization is unaffected, on any model.
    for (path, status, body) in ask_everywhere(&app, &free_secret, "test/other").await {
        assert_eq!(status / 100, 2, "{path}: {body}");
    }
    ok(embed(free_secret.clone()).await, 200).await;
    // Nothing was billed for the refusals and the count; usage groups by key.
    assert_eq!(billed().await.len(), 6);
    let report = ok(
        app.call(Method::GET, "/v1/usage?groupBy=user", &token)
            .await,
        200,
    )
    .await;
    let limited_group = (report["items"].as_array().unwrap().iter())
        .find(|group| group["userId"] == json!(limited))
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(limited_group["requests"], 1, "{report}");
}

tessera_store::on_both_databases!(
    limits_are_set_read_and_lifted,
    limits_are_enforced_on_every_completion,
);
