//! Particles and system prompts over HTTPS on both databases: versioning, pinning,
//! composition order, `at=` composition, delete refusal, warnings, system profiles,
//! validation and tenant isolation.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::support::{TestApp, ok, problem};

const SCOPES: &str = "particles:admin system-prompts:admin";

async fn caller(app: &TestApp) -> String {
    let (_, client_id, secret) = app.organization_with_client(SCOPES).await;
    app.token(&client_id, &secret).await
}

async fn particle(app: &TestApp, token: &str, category: &str, content: &str) -> Value {
    let body =
        json!({"name": format!("{category} particle"), "category": category, "content": content});
    ok(
        app.call_json(Method::POST, "/v1/particles", token, &body)
            .await,
        201,
    )
    .await
}

fn id(value: &Value) -> String {
    value["id"].as_str().unwrap().to_owned()
}

/// Words long enough to land inside a category's recommended size.
fn words(count: usize) -> String {
    vec!["careful"; count].join(" ")
}

async fn particles_lifecycle_over_http(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = caller(&app).await;

    let created = app
        .call_json(
            Method::POST,
            "/v1/particles",
            &token,
            &json!({"name": "Terse", "category": "tone", "content": "Be terse.", "description": "Short answers"}),
        )
        .await;
    assert_eq!(created.status(), 201);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let tone: Value = created.json().await.unwrap();
    let tone_id = id(&tone);
    assert_eq!(location, format!("/v1/particles/{tone_id}"));
    assert_eq!(
        (&tone["version"], &tone["tokenCount"], &tone["isSystem"]),
        (&json!(1), &json!(3), &json!(false))
    );
    // Three tokens is below the 25-50 recommended for tone: saved, with a warning.
    assert_eq!(tone["warnings"][0]["code"], "particle_size");
    let sized = particle(&app, &token, "role", &words(60)).await;
    assert_eq!(sized["warnings"], json!([]));

    let fetched = ok(app.call(Method::GET, &location, &token).await, 200).await;
    assert_eq!(fetched, tone);

    // Identical content creates no version; a change creates version 2.
    let same = ok(
        app.call_json(
            Method::PUT,
            &location,
            &token,
            &json!({"content": "Be terse."}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(same["version"], 1);
    let changed = ok(
        app.call_json(
            Method::PUT,
            &location,
            &token,
            &json!({"content": "Be terse and kind."}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&changed["version"], &changed["content"]),
        (&json!(2), &json!("Be terse and kind."))
    );
    let renamed = ok(
        app.call_json(
            Method::PATCH,
            &location,
            &token,
            &json!({"name": "Terse & kind"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&renamed["name"], &renamed["version"]),
        (&json!("Terse & kind"), &json!(2))
    );

    let versions = ok(
        app.call(Method::GET, &format!("{location}/versions?limit=1"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &versions["items"][0]["version"],
            &versions["totalCount"],
            &versions["hasMore"]
        ),
        (&json!(1), &json!(2), &json!(true))
    );
    let cursor = versions["nextCursor"].as_str().unwrap();
    let rest = ok(
        app.call(
            Method::GET,
            &format!("{location}/versions?limit=1&cursor={cursor}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(rest["items"][0]["content"], "Be terse and kind.");
    let first = ok(
        app.call(Method::GET, &format!("{location}/versions/1"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(first["content"], "Be terse.");
    problem(
        app.call(Method::GET, &format!("{location}/versions/3"), &token)
            .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(Method::GET, &format!("{location}/versions/x"), &token)
            .await,
        404,
        "not_found",
    )
    .await;

    let tones = ok(
        app.call(Method::GET, "/v1/particles?category=tone", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(tones["totalCount"], 1);
    assert_eq!(tones["items"][0]["id"], tone_id.as_str());
    let all = ok(app.call(Method::GET, "/v1/particles", &token).await, 200).await;
    assert_eq!(all["totalCount"], 2);

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

async fn system_prompts_compose_pin_and_reorder(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = caller(&app).await;
    let format = particle(&app, &token, "format", "Answer in Markdown.").await;
    let role = particle(&app, &token, "role", "You are a support agent.").await;
    let first_rule = particle(&app, &token, "guardrails", "Never share secrets.").await;
    let second_rule = particle(&app, &token, "guardrails", "Stay polite.").await;

    let created = app
        .call_json(
            Method::POST,
            "/v1/system-prompts",
            &token,
            &json!({
                "name": "Support",
                "description": "Front-line support",
                "particles": [
                    {"particleId": id(&format), "order": 0},
                    {"particleId": id(&second_rule), "order": 2},
                    {"particleId": id(&role), "order": 0, "particleVersionId": role["versionId"]},
                    {"particleId": id(&first_rule), "order": 1},
                ]
            }),
        )
        .await;
    assert_eq!(created.status(), 201);
    let prompt: Value = created.json().await.unwrap();
    let prompt_id = id(&prompt);
    assert_eq!(
        (
            &prompt["particleCount"],
            &prompt["enabled"],
            &prompt["isSystem"]
        ),
        (&json!(4), &json!(true), &json!(false))
    );
    let categories: Vec<&str> = prompt["particles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["particleCategory"].as_str().unwrap())
        .collect();
    assert_eq!(categories, ["role", "guardrails", "guardrails", "format"]);
    assert_eq!(prompt["particles"][0]["pinnedVersion"], 1);
    assert_eq!(prompt["particles"][1]["pinnedVersion"], Value::Null);
    // Far below 175 tokens: a composition warning.
    assert_eq!(prompt["warnings"][0]["code"], "composition_size");

    let compose_path = format!("/v1/system-prompts/{prompt_id}/compose");
    let composed = ok(app.call(Method::GET, &compose_path, &token).await, 200).await;
    let expected =
        "You are a support agent.\n\nNever share secrets.\n\nStay polite.\n\nAnswer in Markdown.";
    assert_eq!(composed["composedPrompt"], expected);
    assert_eq!(composed["encoding"], "o200k_base");
    let order: Vec<&str> = composed["particles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [id(&role), id(&first_rule), id(&second_rule), id(&format)]
    );
    // Deterministic: the same inputs give the same bytes.
    let again = ok(app.call(Method::GET, &compose_path, &token).await, 200).await;
    assert_eq!(again, composed);
    let before_changes = composed_moment(&app, &token, &prompt_id).await;

    // After a PUT, the pinned role stays on version 1; the unpinned format follows.
    for changed in [&role, &format] {
        let path = format!("/v1/particles/{}", id(changed));
        ok(
            app.call_json(Method::PUT, &path, &token, &json!({"content": "Changed."}))
                .await,
            200,
        )
        .await;
    }
    let after_put = ok(app.call(Method::GET, &compose_path, &token).await, 200).await;
    assert_eq!(
        after_put["composedPrompt"],
        "You are a support agent.\n\nNever share secrets.\n\nStay polite.\n\nChanged."
    );
    let versions: Vec<u64> = after_put["particles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, [1, 1, 1, 2]);

    // Reorder the guardrails and unpin the role.
    let expanded = ok(
        app.call(
            Method::GET,
            &format!("/v1/system-prompts/{prompt_id}?expand[]=particles"),
            &token,
        )
        .await,
        200,
    )
    .await;
    let placement = |index: usize| {
        expanded["particles"][index]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let moved = ok(
        app.call_json(
            Method::PATCH,
            &format!("/v1/system-prompts/{prompt_id}/particles/{}", placement(1)),
            &token,
            &json!({"order": 5}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(moved["order"], 5);
    let unpinned = ok(
        app.call_json(
            Method::PATCH,
            &format!("/v1/system-prompts/{prompt_id}/particles/{}", placement(0)),
            &token,
            &json!({"particleVersionId": null}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (&unpinned["pinnedVersion"], &unpinned["version"]),
        (&Value::Null, &json!(2))
    );
    let reordered = ok(app.call(Method::GET, &compose_path, &token).await, 200).await;
    assert_eq!(
        reordered["composedPrompt"],
        "Changed.\n\nStay polite.\n\nNever share secrets.\n\nChanged."
    );

    // Composing as of the earlier moment gives back the earlier text exactly.
    let past = ok(
        app.call(
            Method::GET,
            &format!("{compose_path}?at={}", before_changes.replace('+', "%2B")),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(past["composedPrompt"], expected);
    assert_eq!(past["totalTokens"], composed["totalTokens"]);

    // A placed particle cannot be deleted until its placement is removed.
    let rule_path = format!("/v1/particles/{}", id(&first_rule));
    let refused = problem(
        app.call(Method::DELETE, &rule_path, &token).await,
        409,
        "particle_in_use",
    )
    .await;
    assert!(refused["detail"].as_str().unwrap().contains(&prompt_id));
    let removed = app
        .call(
            Method::DELETE,
            &format!("/v1/system-prompts/{prompt_id}/particles/{}", placement(1)),
            &token,
        )
        .await;
    assert_eq!(removed.status(), 204);
    assert_eq!(
        app.call(Method::DELETE, &rule_path, &token).await.status(),
        204
    );
    let fewer = ok(
        app.call(
            Method::GET,
            &format!("/v1/system-prompts/{prompt_id}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(fewer["particleCount"], 3);
    assert!(
        fewer.get("particles").is_none(),
        "placements only when expanded"
    );
    // The past is still exact after the delete.
    let still_past = ok(
        app.call(
            Method::GET,
            &format!("{compose_path}?at={}", before_changes.replace('+', "%2B")),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(still_past["composedPrompt"], expected);

    // Add a placement with a pin, rename, disable, list, delete.
    let added = app
        .call_json(
            Method::POST,
            &format!("/v1/system-prompts/{prompt_id}/particles"),
            &token,
            &json!({"particleId": id(&format), "order": 1, "particleVersionId": format["versionId"]}),
        )
        .await;
    assert_eq!(added.status(), 201);
    let added: Value = added.json().await.unwrap();
    assert_eq!(
        (&added["pinnedVersion"], &added["particleName"]),
        (&json!(1), &json!("format particle"))
    );
    let updated = ok(
        app.call_json(
            Method::PATCH,
            &format!("/v1/system-prompts/{prompt_id}"),
            &token,
            &json!({"name": "Support v2", "enabled": false}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (
            &updated["name"],
            &updated["enabled"],
            &updated["particleCount"]
        ),
        (&json!("Support v2"), &json!(false), &json!(4))
    );
    let listed = ok(
        app.call(Method::GET, "/v1/system-prompts?expand[]=particles", &token)
            .await,
        200,
    )
    .await;
    assert_eq!(listed["totalCount"], 1);
    assert_eq!(listed["items"][0]["particles"].as_array().unwrap().len(), 4);
    let path = format!("/v1/system-prompts/{prompt_id}");
    assert_eq!(app.call(Method::DELETE, &path, &token).await.status(), 204);
    problem(app.call(Method::GET, &path, &token).await, 404, "not_found").await;
}

/// A moment after everything so far, as the API prints timestamps.
async fn composed_moment(app: &TestApp, token: &str, prompt_id: &str) -> String {
    let prompt = ok(
        app.call(
            Method::GET,
            &format!("/v1/system-prompts/{prompt_id}"),
            token,
        )
        .await,
        200,
    )
    .await;
    let updated: chrono::DateTime<chrono::Utc> =
        prompt["updatedAt"].as_str().unwrap().parse().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    (updated + chrono::Duration::milliseconds(1)).to_rfc3339()
}

async fn system_profiles_are_readable_and_read_only(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = caller(&app).await;
    let profiles = ok(
        app.call(
            Method::GET,
            "/v1/system-prompts?system=true&expand[]=particles",
            &token,
        )
        .await,
        200,
    )
    .await;
    let items = profiles["items"].as_array().unwrap();
    assert!(items.len() >= 3);
    let general = items
        .iter()
        .find(|p| p["slug"] == "general-assistant")
        .unwrap();
    assert_eq!(
        (&general["isSystem"], &general["organizationId"]),
        (&json!(true), &Value::Null)
    );
    assert_eq!(general["particleCount"], 5);
    assert_eq!(general["warnings"], json!([]));
    let profile_id = id(general);

    let composed = ok(
        app.call(
            Method::GET,
            &format!("/v1/system-prompts/{profile_id}/compose"),
            &token,
        )
        .await,
        200,
    )
    .await;
    let total = composed["totalTokens"].as_u64().unwrap();
    assert!((175..=425).contains(&total), "{total}");
    assert!(
        composed["composedPrompt"]
            .as_str()
            .unwrap()
            .starts_with("You are a knowledgeable")
    );

    let path = format!("/v1/system-prompts/{profile_id}");
    problem(
        app.call_json(Method::PATCH, &path, &token, &json!({"name": "Mine"}))
            .await,
        403,
        "system_managed",
    )
    .await;
    problem(
        app.call(Method::DELETE, &path, &token).await,
        403,
        "system_managed",
    )
    .await;
    let system_particle = general["particles"][0]["particleId"].as_str().unwrap();
    let particle_path = format!("/v1/particles/{system_particle}");
    let fetched = ok(app.call(Method::GET, &particle_path, &token).await, 200).await;
    assert_eq!(fetched["isSystem"], true);
    problem(
        app.call_json(
            Method::PUT,
            &particle_path,
            &token,
            &json!({"content": "Hijack"}),
        )
        .await,
        403,
        "system_managed",
    )
    .await;
    problem(
        app.call(Method::DELETE, &particle_path, &token).await,
        403,
        "system_managed",
    )
    .await;
    let system_particles = ok(
        app.call(
            Method::GET,
            "/v1/particles?system=true&category=role",
            &token,
        )
        .await,
        200,
    )
    .await;
    assert!(system_particles["totalCount"].as_u64().unwrap() >= 3);
    // The organization's own lists do not include system records.
    let own = ok(
        app.call(Method::GET, "/v1/system-prompts", &token).await,
        200,
    )
    .await;
    assert_eq!(own["totalCount"], 0);
}

async fn invalid_prompt_requests_are_422(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = caller(&app).await;
    let locs = |body: &Value| -> Vec<Value> {
        body["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["loc"].clone())
            .collect()
    };
    let cases = [
        (
            json!({"name": "x", "category": "mood", "content": "c"}),
            json!(["body", "category"]),
        ),
        (
            json!({"name": "", "category": "role", "content": "c"}),
            json!(["body", "name"]),
        ),
        (
            json!({"name": "   ", "category": "role", "content": "c"}),
            json!(["body", "name"]),
        ),
        (
            json!({"name": "x", "category": "role", "content": " \n "}),
            json!(["body", "content"]),
        ),
        (
            json!({"name": "x", "category": "role", "content": "c".repeat(32769)}),
            json!(["body", "content"]),
        ),
        (
            json!({"name": "x", "category": "role", "content": "c", "description": "d".repeat(1001)}),
            json!(["body", "description"]),
        ),
        (
            json!({"name": "x", "category": "role", "content": "c", "extra": 1}),
            json!(["body", "extra"]),
        ),
    ];
    for (body, loc) in cases {
        let response = app
            .call_json(Method::POST, "/v1/particles", &token, &body)
            .await;
        let problem = problem(response, 422, "validation_failed").await;
        assert_eq!(locs(&problem), [loc], "{body}");
    }

    let known = particle(&app, &token, "role", "Role.").await;
    let unknown = "par_0190f5c1a3e27c3d9b1e4a0c5d6e7f80";
    let prompt_cases = [
        (
            json!({"name": "p", "particles": [{"particleId": id(&known), "order": 0}, {"particleId": unknown, "order": 1}]}),
            json!(["body", "particles", 1, "particleId"]),
        ),
        (
            json!({"name": "p", "particles": [{"particleId": id(&known), "order": -1}]}),
            json!(["body", "particles", 0, "order"]),
        ),
        (
            json!({"name": "p", "particles": [{"particleId": "nope", "order": 0}]}),
            json!(["body", "particles", 0, "particleId"]),
        ),
        (
            json!({"name": "p", "particles": [{"particleId": id(&known), "order": 0, "particleVersionId": "pav_0190f5c1a3e27c3d9b1e4a0c5d6e7f80"}]}),
            json!(["body", "particles", 0, "particleVersionId"]),
        ),
        (json!({"name": "n".repeat(256)}), json!(["body", "name"])),
    ];
    for (body, loc) in prompt_cases {
        let response = app
            .call_json(Method::POST, "/v1/system-prompts", &token, &body)
            .await;
        let problem = problem(response, 422, "validation_failed").await;
        assert_eq!(locs(&problem), [loc], "{body}");
    }
    let listed = ok(
        app.call(Method::GET, "/v1/system-prompts", &token).await,
        200,
    )
    .await;
    assert_eq!(
        listed["totalCount"], 0,
        "nothing was stored by refused requests"
    );

    let prompt = ok(
        app.call_json(
            Method::POST,
            "/v1/system-prompts",
            &token,
            &json!({"name": "p"}),
        )
        .await,
        201,
    )
    .await;
    let prompt_id = id(&prompt);
    let query_cases = [
        (
            format!("/v1/system-prompts/{prompt_id}?expand[]=everything"),
            json!(["query", "expand[]"]),
        ),
        (
            format!("/v1/system-prompts/{prompt_id}/compose?at=yesterday"),
            json!(["query", "at"]),
        ),
        (
            format!("/v1/system-prompts/{prompt_id}/compose?at=2999-01-01T00:00:00Z"),
            json!(["query", "at"]),
        ),
        (
            "/v1/particles?category=mood".to_owned(),
            json!(["query", "category"]),
        ),
        (
            "/v1/particles?limit=0".to_owned(),
            json!(["query", "limit"]),
        ),
        (
            "/v1/particles?cursor=forged".to_owned(),
            json!(["query", "cursor"]),
        ),
    ];
    for (path, loc) in query_cases {
        let problem = problem(
            app.call(Method::GET, &path, &token).await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(locs(&problem), [loc], "{path}");
    }
    let bad_pin = app
        .call_json(
            Method::PATCH,
            &format!(
                "/v1/system-prompts/{prompt_id}/particles/spa_0190f5c1a3e27c3d9b1e4a0c5d6e7f80"
            ),
            &token,
            &json!({"order": 1}),
        )
        .await;
    problem(bad_pin, 404, "not_found").await;
    let malformed = app
        .client
        .post(app.url("/v1/particles"))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    problem(malformed, 422, "validation_failed").await;
}

async fn prompts_are_tenant_isolated(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let a = caller(&app).await;
    let b = caller(&app).await;
    let theirs = particle(&app, &a, "role", "A's role.").await;
    let prompt = ok(
        app.call_json(
            Method::POST,
            "/v1/system-prompts",
            &a,
            &json!({"name": "A's prompt", "particles": [{"particleId": id(&theirs), "order": 0}]}),
        )
        .await,
        201,
    )
    .await;
    let placement = prompt["particles"][0]["id"].as_str().unwrap().to_owned();
    let particle_path = format!("/v1/particles/{}", id(&theirs));
    let prompt_path = format!("/v1/system-prompts/{}", id(&prompt));
    let attempts = [
        (Method::GET, particle_path.clone(), None),
        (
            Method::PUT,
            particle_path.clone(),
            Some(json!({"content": "B was here."})),
        ),
        (
            Method::PATCH,
            particle_path.clone(),
            Some(json!({"name": "B's"})),
        ),
        (Method::DELETE, particle_path.clone(), None),
        (Method::GET, format!("{particle_path}/versions"), None),
        (Method::GET, format!("{particle_path}/versions/1"), None),
        (Method::GET, prompt_path.clone(), None),
        (
            Method::PATCH,
            prompt_path.clone(),
            Some(json!({"name": "B's"})),
        ),
        (Method::DELETE, prompt_path.clone(), None),
        (Method::GET, format!("{prompt_path}/compose"), None),
        (
            Method::POST,
            format!("{prompt_path}/particles"),
            Some(json!({"particleId": id(&theirs), "order": 0})),
        ),
        (
            Method::PATCH,
            format!("{prompt_path}/particles/{placement}"),
            Some(json!({"order": 3})),
        ),
        (
            Method::DELETE,
            format!("{prompt_path}/particles/{placement}"),
            None,
        ),
    ];
    for (method, path, body) in attempts {
        let response = match &body {
            Some(body) => app.call_json(method.clone(), &path, &b, body).await,
            None => app.call(method.clone(), &path, &b).await,
        };
        problem(response, 404, "not_found").await;
    }
    for list in ["/v1/particles", "/v1/system-prompts"] {
        let page = ok(app.call(Method::GET, list, &b).await, 200).await;
        assert_eq!(
            (&page["items"], &page["totalCount"]),
            (&json!([]), &json!(0)),
            "{list}"
        );
    }
    // A cursor is bound to the organization whose list it pages: A's `nextCursor` under B's
    // token is a validation error, not a page of B's list.
    particle(&app, &a, "role", "A's second role.").await;
    let first = ok(
        app.call(Method::GET, "/v1/particles?limit=1", &a).await,
        200,
    )
    .await;
    let cursor = first["nextCursor"].as_str().unwrap();
    let path = format!("/v1/particles?limit=1&cursor={cursor}");
    ok(app.call(Method::GET, &path, &a).await, 200).await;
    let refused = problem(
        app.call(Method::GET, &path, &b).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(refused["detail"][0]["loc"], json!(["query", "cursor"]));
    // B cannot build on A's particle either.
    let borrowed = app
        .call_json(
            Method::POST,
            "/v1/system-prompts",
            &b,
            &json!({"name": "B's prompt", "particles": [{"particleId": id(&theirs), "order": 0}]}),
        )
        .await;
    problem(borrowed, 422, "validation_failed").await;
    // A's records are untouched.
    let unchanged = ok(app.call(Method::GET, &particle_path, &a).await, 200).await;
    assert_eq!(
        (&unchanged["version"], &unchanged["name"]),
        (&json!(1), &json!("role particle"))
    );
    let still = ok(app.call(Method::GET, &prompt_path, &a).await, 200).await;
    assert_eq!(still["particleCount"], 1);
}

tessera_store::on_both_databases!(
    particles_lifecycle_over_http,
    system_prompts_compose_pin_and_reorder,
    system_profiles_are_readable_and_read_only,
    invalid_prompt_requests_are_422,
    prompts_are_tenant_isolated,
);
