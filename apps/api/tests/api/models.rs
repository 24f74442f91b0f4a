//! `/v1/models` and the catalog over HTTPS on both databases: lifecycle states, user models
//! built on base models, validation and tenant isolation.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::support::{TestApp, ok, problem};

const LOCAL: &str = "local/smollm2-135m-instruct";

/// A catalog with one model in each lifecycle state, relative to now.
fn catalog_file(dir: &std::path::Path) -> std::path::PathBuf {
    let future = (chrono::Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let past = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    let text = format!(
        r#"
[providers.gateway]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "HOME"
[providers.keyless]
kind = "openai"
base_url = "https://llm.example.com/v1"
api_key_env = "TESSERA_TEST_KEY_THAT_IS_NEVER_SET"

[[models]]
id = "test/active"
display_name = "Active"
provider = "gateway"
model_name = "active"
context_window = 4096
capabilities = {{ streaming = true, tools = true }}
credit_multiplier = 2
is_recommended = true

[[models]]
id = "test/deprecated"
display_name = "Deprecated"
provider = "gateway"
model_name = "old"
context_window = 2048
end_of_life_at = "{future}"
replacement_model_id = "test/active"

[[models]]
id = "test/retired"
display_name = "Retired"
provider = "gateway"
model_name = "older"
context_window = 1024
end_of_life_at = "{past}"
deprecation_message = "Retired; move to test/active."

[[models]]
id = "test/keyless"
display_name = "Needs a key"
provider = "keyless"
model_name = "gpt-x"
context_window = 8192
tier = "premium"
"#
    );
    let path = dir.join("catalog.toml");
    std::fs::write(&path, text).unwrap();
    path
}

async fn the_catalog_reports_lifecycle_states(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = catalog_file(dir.path());
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.catalog_file = Some(path);
    })
    .await;
    let token = app.caller_token("models:read").await;
    let catalog = ok(
        app.call(Method::GET, "/v1/models/catalog", &token).await,
        200,
    )
    .await;
    let items = catalog["items"].as_array().unwrap();
    let by_id = |id: &str| items.iter().find(|m| m["id"] == id).unwrap().clone();
    let active = by_id("test/active");
    assert_eq!(
        (
            &active["lifecycleState"],
            &active["isSystemModel"],
            &active["provider"],
            &active["creditMultiplier"],
            &active["supportsTools"],
            &active["deprecationMessage"],
        ),
        (
            &json!("active"),
            &json!(true),
            &json!("gateway"),
            &json!(2),
            &json!(true),
            &Value::Null
        )
    );
    let deprecated = by_id("test/deprecated");
    assert_eq!(deprecated["lifecycleState"], "deprecated");
    assert!(
        deprecated["deprecationMessage"]
            .as_str()
            .unwrap()
            .contains("test/active")
    );
    let retired = by_id("test/retired");
    assert_eq!(
        (&retired["lifecycleState"], &retired["deprecationMessage"]),
        (
            &json!("end_of_life"),
            &json!("Retired; move to test/active.")
        )
    );
    let keyless = by_id("test/keyless");
    assert_eq!(
        (
            &keyless["lifecycleState"],
            &keyless["enabled"],
            &keyless["modelTier"]
        ),
        (&json!("disabled"), &json!(false), &json!("premium"))
    );

    // A user model shows its parent's lifecycle.
    let writer = app.caller_token("models:admin").await;
    let created = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &writer,
            &json!({"parentModelId": "test/deprecated", "displayName": "Legacy bot"}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(created["lifecycleState"], "deprecated");
    assert_eq!(created["replacementModelId"], "test/active");
}

async fn local_catalog_entry(app: &TestApp, token: &str) -> Value {
    let catalog = ok(
        app.call(Method::GET, "/v1/models/catalog", token).await,
        200,
    )
    .await;
    catalog["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == LOCAL)
        .unwrap()
        .clone()
}

/// Without its model file the embedded model is listed, disabled; with it, a model built on
/// it answers through the provider port with the real engine.
async fn the_embedded_model_answers_when_its_file_is_there(backend: Backend) {
    let without = TestApp::spawn(backend).await;
    let token = without.caller_token("models:read").await;
    let local = local_catalog_entry(&without, &token).await;
    assert_eq!(
        (
            &local["enabled"],
            &local["isRecommended"],
            &local["lifecycleState"]
        ),
        (&json!(false), &json!(true), &json!("disabled"))
    );
    without.stop().await;

    let model_dir = tessera_llm_local::testing::model_path()
        .parent()
        .unwrap()
        .to_path_buf();
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.local_dir = Some(model_dir);
    })
    .await;
    let token = app.caller_token("models:admin").await;
    let local = local_catalog_entry(&app, &token).await;
    assert_eq!(
        (&local["enabled"], &local["lifecycleState"]),
        (&json!(true), &json!("active"))
    );
    let body = json!({"parentModelId": LOCAL, "displayName": "Geography tutor"});
    let model = ok(
        app.call_json(Method::POST, "/v1/models", &token, &body)
            .await,
        201,
    )
    .await;
    let organization = ok(app.call(Method::GET, "/v1/organization", &token).await, 200).await;
    let resolved = app
        .state
        .models
        .resolve(
            &organization["id"].as_str().unwrap().parse().unwrap(),
            &model["id"].as_str().unwrap().parse().unwrap(),
            tessera_organizations::Plan::Free,
        )
        .await
        .unwrap();
    let request = tessera_models::ChatRequest {
        model: resolved.base.model_name.clone(),
        messages: vec![tessera_models::ChatMessage::new(
            tessera_models::Role::User,
            "What is the capital of France?",
        )],
        max_tokens: Some(24),
        ..Default::default()
    };
    let answer = tessera_models::complete(resolved.chat_model.as_ref(), request)
        .await
        .unwrap();
    assert!(answer.content.contains("Paris"), "{}", answer.content);
    assert!(answer.usage.input_tokens > 0 && answer.usage.output_tokens > 0);
}

async fn user_models_lifecycle_over_http(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = catalog_file(dir.path());
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.catalog_file = Some(path);
    })
    .await;
    let token = app.caller_token("models:admin system-prompts:read").await;
    let profiles = ok(
        app.call(Method::GET, "/v1/system-prompts?system=true", &token)
            .await,
        200,
    )
    .await;
    let profile_id = profiles["items"][0]["id"].as_str().unwrap().to_owned();

    let created = app
        .call_json(
            Method::POST,
            "/v1/models",
            &token,
            &json!({
                "parentModelId": "test/active",
                "displayName": "Support bot",
                "description": "Answers customers",
                "systemPromptId": profile_id,
                "metadata": {"team": "support", "tags": ["a", "b"]}
            }),
        )
        .await;
    assert_eq!(created.status(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let model: Value = created.json().await.unwrap();
    let id = model["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/v1/models/{id}"));
    assert_eq!(
        (
            &model["provider"],
            &model["modelName"],
            &model["isSystemModel"],
            &model["parentModelId"],
            &model["contextWindow"],
            &model["creditMultiplier"],
            &model["systemPromptId"],
            &model["metadata"]["team"],
        ),
        (
            &Value::Null,
            &Value::Null,
            &json!(false),
            &json!("test/active"),
            &json!(4096),
            &Value::Null,
            &json!(profile_id),
            &json!("support"),
        )
    );
    assert_eq!(
        ok(app.call(Method::GET, &location, &token).await, 200).await,
        model
    );

    // Switch the base model (same id), set an override, clear the description.
    let updated = ok(
        app.call_json(
            Method::PATCH,
            &location,
            &token,
            &json!({"parentModelId": "test/deprecated", "systemPrompt": "You are terse.", "description": null}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &updated["id"],
            &updated["parentModelId"],
            &updated["contextWindow"],
            &updated["systemPrompt"],
            &updated["description"],
            &updated["systemPromptId"]
        ),
        (
            &json!(id),
            &json!("test/deprecated"),
            &json!(2048),
            &json!("You are terse."),
            &Value::Null,
            &json!(profile_id)
        )
    );
    let cleared = ok(
        app.call_json(
            Method::PATCH,
            &location,
            &token,
            &json!({"systemPromptId": null, "enabled": false}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &cleared["systemPromptId"],
            &cleared["systemPrompt"],
            &cleared["lifecycleState"]
        ),
        (&Value::Null, &json!("You are terse."), &json!("disabled"))
    );

    for index in 0..2 {
        ok(
            app.call_json(
                Method::POST,
                "/v1/models",
                &token,
                &json!({"parentModelId": "test/active", "displayName": format!("Bot {index}")}),
            )
            .await,
            201,
        )
        .await;
    }
    let first = ok(
        app.call(Method::GET, "/v1/models?limit=2", &token).await,
        200,
    )
    .await;
    assert_eq!(
        (&first["totalCount"], &first["hasMore"]),
        (&json!(3), &json!(true))
    );
    assert_eq!(first["items"][0]["id"], id.as_str());
    let cursor = first["nextCursor"].as_str().unwrap();
    let rest = ok(
        app.call(
            Method::GET,
            &format!("/v1/models?limit=2&cursor={cursor}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (rest["items"].as_array().unwrap().len(), &rest["hasMore"]),
        (1, &json!(false))
    );

    assert_eq!(
        app.call(Method::DELETE, &location, &token).await.status(),
        204
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
}

async fn invalid_model_requests_are_422(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = app.caller_token("models:admin").await;
    let locs = |body: &Value| -> Vec<Value> {
        body["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["loc"].clone())
            .collect()
    };
    let unknown_prompt = "spr_0190f5c1a3e27c3d9b1e4a0c5d6e7f80";
    let cases = [
        (
            json!({"parentModelId": "nope/none", "displayName": "x"}),
            json!(["body", "parentModelId"]),
        ),
        (
            json!({"parentModelId": LOCAL, "displayName": "  "}),
            json!(["body", "displayName"]),
        ),
        (
            json!({"parentModelId": LOCAL, "displayName": "x", "systemPromptId": unknown_prompt}),
            json!(["body", "systemPromptId"]),
        ),
        (
            json!({"parentModelId": LOCAL, "displayName": "x", "systemPromptId": "bogus"}),
            json!(["body", "systemPromptId"]),
        ),
        (
            json!({"parentModelId": LOCAL, "displayName": "x", "systemPrompt": " "}),
            json!(["body", "systemPrompt"]),
        ),
        (
            json!({"parentModelId": LOCAL, "displayName": "x", "metadata": [1]}),
            json!(["body", "metadata"]),
        ),
        (
            json!({"parentModelId": LOCAL, "displayName": "x", "provider": "openai"}),
            json!(["body", "provider"]),
        ),
        (
            json!({"displayName": "x"}),
            json!(["body", "parentModelId"]),
        ),
    ];
    for (body, loc) in cases {
        let response = app
            .call_json(Method::POST, "/v1/models", &token, &body)
            .await;
        let problem = problem(response, 422, "validation_failed").await;
        assert_eq!(locs(&problem), [loc], "{body}");
    }
    let listed = ok(app.call(Method::GET, "/v1/models", &token).await, 200).await;
    assert_eq!(listed["totalCount"], 0);
    problem(
        app.call(Method::GET, "/v1/models?cursor=forged", &token)
            .await,
        422,
        "validation_failed",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/models/not-an-id", &token).await,
        404,
        "not_found",
    )
    .await;
}

async fn models_are_tenant_isolated(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let a = app.caller_token("models:admin system-prompts:admin").await;
    let b = app.caller_token("models:admin system-prompts:admin").await;
    let prompt = ok(
        app.call_json(
            Method::POST,
            "/v1/system-prompts",
            &a,
            &json!({"name": "A's prompt"}),
        )
        .await,
        201,
    )
    .await;
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &a,
            &json!({"parentModelId": LOCAL, "displayName": "A's bot", "systemPromptId": prompt["id"]}),
        )
        .await,
        201,
    )
    .await;
    let path = format!("/v1/models/{}", model["id"].as_str().unwrap());
    problem(app.call(Method::GET, &path, &b).await, 404, "not_found").await;
    problem(
        app.call_json(Method::PATCH, &path, &b, &json!({"displayName": "B's"}))
            .await,
        404,
        "not_found",
    )
    .await;
    problem(app.call(Method::DELETE, &path, &b).await, 404, "not_found").await;
    let listed = ok(app.call(Method::GET, "/v1/models", &b).await, 200).await;
    assert_eq!(
        (&listed["items"], &listed["totalCount"]),
        (&json!([]), &json!(0))
    );
    // B cannot point its model at A's system prompt.
    let borrowed = app
        .call_json(
            Method::POST,
            "/v1/models",
            &b,
            &json!({"parentModelId": LOCAL, "displayName": "B's bot", "systemPromptId": prompt["id"]}),
        )
        .await;
    let refused = problem(borrowed, 422, "validation_failed").await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["body", "systemPromptId"])
    );
    let unchanged = ok(app.call(Method::GET, &path, &a).await, 200).await;
    assert_eq!(unchanged["displayName"], "A's bot");

    // Deleting the system prompt detaches it from the model.
    let prompt_path = format!("/v1/system-prompts/{}", prompt["id"].as_str().unwrap());
    assert_eq!(
        app.call(Method::DELETE, &prompt_path, &a).await.status(),
        204
    );
    let detached = ok(app.call(Method::GET, &path, &a).await, 200).await;
    assert_eq!(detached["systemPromptId"], Value::Null);
}

/// Start-up builds a provider for every enabled base model of an OpenAI-compatible
/// provider; base models no provider can run are disabled.
async fn user_models_resolve_to_their_provider(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    // `HOME` is set wherever tests run: it stands in for a provider key.
    std::fs::write(
        &path,
        r#"
[providers.local]
kind = "local"
[providers.gateway]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "HOME"

[[models]]
id = "gateway/chat"
display_name = "Gateway chat"
provider = "gateway"
model_name = "chat-1"
context_window = 8192
capabilities = { streaming = true, tools = true, json_schema = true }

[[models]]
id = "local/tiny"
display_name = "Tiny"
provider = "local"
model_name = "tiny.gguf"
context_window = 2048
"#,
    )
    .unwrap();
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.catalog_file = Some(path);
    })
    .await;
    let token = app.caller_token("models:admin").await;
    let mut ids: Vec<tessera_models::ModelId> = Vec::new();
    for parent in ["gateway/chat", "local/tiny"] {
        let body = json!({"parentModelId": parent, "displayName": parent});
        let model = ok(
            app.call_json(Method::POST, "/v1/models", &token, &body)
                .await,
            201,
        )
        .await;
        ids.push(model["id"].as_str().unwrap().parse().unwrap());
    }
    let organization = ok(app.call(Method::GET, "/v1/organization", &token).await, 200).await;
    let org_id = organization["id"].as_str().unwrap().parse().unwrap();
    let resolved = app
        .state
        .models
        .resolve(&org_id, &ids[0], tessera_organizations::Plan::Pro)
        .await
        .unwrap();
    assert_eq!(resolved.base.model_name, "chat-1");
    let capabilities = resolved.chat_model.capabilities();
    assert!(capabilities.tools && capabilities.json_schema && !capabilities.vision);
    let local = app
        .state
        .models
        .resolve(&org_id, &ids[1], tessera_organizations::Plan::Pro)
        .await
        .err()
        .unwrap();
    // No model file (`models.local_dir` unset): the base model is disabled at start-up.
    assert_eq!(
        local,
        tessera_models::ModelError::Disabled("local/tiny".into())
    );
}

tessera_store::on_both_databases!(
    user_models_resolve_to_their_provider,
    the_catalog_reports_lifecycle_states,
    the_embedded_model_answers_when_its_file_is_there,
    user_models_lifecycle_over_http,
    invalid_model_requests_are_422,
    models_are_tenant_isolated,
);
