//! Usage through the real HTTP stack: 30 completions of the embedded model across 3 models
//! and 2 principals, and reports whose totals and groups equal the sum of the completions'
//! own `usage` fields for every grouping, on SQLite and PostgreSQL; the scope rule for
//! per-user figures, tenant isolation, validation, and no double billing on replays.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::local_app,
    support::{TestApp, ok, problem},
};

const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Two base models on the embedded engine with different credit multipliers.
fn catalog() -> String {
    let model = |id: &str, multiplier: u32| {
        format!(
            "[[models]]\nid = \"{id}\"\ndisplay_name = \"{id}\"\nprovider = \"local\"\nmodel_name = \"{FILE}\"\ncontext_window = 2048\ncapabilities = {{ streaming = true }}\ncredit_multiplier = {multiplier}\n"
        )
    };
    format!(
        "[providers.local]\nkind = \"local\"\n{}{}",
        model("test/one", 1),
        model("test/three", 3)
    )
}

/// A second client of the organization; its token.
async fn second_principal(app: &TestApp, organization: &str, scopes: &str) -> (String, String) {
    use tessera_identity::{ClientName, NewClient};
    let new = NewClient {
        organization_id: organization.parse().unwrap(),
        name: ClientName::parse("second client").unwrap(),
        scopes: tessera_kernel::ScopeSet::parse_list(scopes).unwrap(),
    };
    let (client, secret) = app
        .state
        .identity
        .create_client(new, &tessera_kernel::Actor::System)
        .await
        .unwrap();
    let id = client.id.to_string();
    (id.clone(), app.token(&id, secret.expose()).await)
}

/// Sums of one group, as a report shows them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Sums {
    input: u64,
    output: u64,
    cached: u64,
    total: u64,
    credits: u64,
    requests: u64,
}

impl Sums {
    fn add(&mut self, other: Sums) {
        self.input += other.input;
        self.output += other.output;
        self.cached += other.cached;
        self.total += other.total;
        self.credits += other.credits;
        self.requests += other.requests;
    }

    fn of(value: &Value) -> Self {
        let n = |field: &str| {
            value[field]
                .as_u64()
                .unwrap_or_else(|| panic!("{field} in {value}"))
        };
        Sums {
            input: n("inputTokens"),
            output: n("outputTokens"),
            cached: n("cachedInputTokens"),
            total: n("totalTokens"),
            credits: n("credits"),
            requests: n("requests"),
        }
    }
}

/// Every group of a report, walking its pages with a small limit.
async fn all_groups(app: &TestApp, token: &str, query: &str) -> (Sums, Vec<Value>) {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut totals = None;
    loop {
        let mut path = format!("/v1/usage?limit=2&{query}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={}", urlencoding(cursor)));
        }
        let page = ok(app.call(Method::GET, &path, token).await, 200).await;
        let page_totals = Sums::of(&page["totals"]);
        assert_eq!(*totals.get_or_insert(page_totals), page_totals);
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => {
                if !query.contains("groupBy") {
                    assert_eq!(page["totalCount"], json!(0));
                } else {
                    assert_eq!(page["totalCount"], json!(items.len()), "{page}");
                }
                break;
            }
        }
    }
    (totals.unwrap(), items)
}

fn urlencoding(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn usage_totals_equal_the_completions_own_usage(backend: Backend) {
    let (app, _dir) = local_app(backend, Some(catalog())).await;
    let scopes = "chats:invoke models:write usage:admin";
    let (organization, first_id, first_secret) = app.organization_with_client(scopes).await;
    let first = app.token(&first_id, &first_secret).await;
    let (second_id, second) = second_principal(&app, &organization, scopes).await;
    let custom = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &first,
            &json!({"parentModelId": "test/three", "displayName": "Tripled"}),
        )
        .await,
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let models = [
        ("test/one".to_owned(), 1),
        ("test/three".to_owned(), 3),
        (custom.clone(), 3),
    ];
    let users = [
        (first_id.clone(), first.clone()),
        (second_id.clone(), second.clone()),
    ];

    let mut expected = Sums::default();
    let mut by_model: BTreeMap<String, Sums> = BTreeMap::new();
    let mut by_user: BTreeMap<String, Sums> = BTreeMap::new();
    let mut by_both: BTreeMap<(String, String), Sums> = BTreeMap::new();
    let mut first_chat = None;
    for i in 0..30 {
        let (model, multiplier) = &models[i % 3];
        let (user, token) = &users[i % 2];
        let answer = ok(
            app.call_json(
                Method::POST,
                "/v1/chats",
                token,
                &json!({
                    "modelId": model,
                    "messages": [{"role": "user", "content": format!("Count to {i}.")}],
                    "maxTokens": 2 + (i % 3),
                    "temperature": 0
                }),
            )
            .await,
            201,
        )
        .await;
        let usage = &answer["usage"];
        let input = usage["inputTokens"].as_u64().unwrap();
        let output = usage["outputTokens"].as_u64().unwrap();
        assert_eq!(usage["totalTokens"].as_u64().unwrap(), input + output);
        assert!(input > 0 && output > 0, "{answer}");
        let cached = usage["cachedInputTokens"].as_u64().unwrap();
        assert!(cached <= input, "{answer}");
        let sums = Sums {
            input,
            output,
            cached,
            total: input + output,
            credits: (input + output) * multiplier,
            requests: 1,
        };
        expected.add(sums);
        by_model.entry(model.clone()).or_default().add(sums);
        by_user.entry(user.clone()).or_default().add(sums);
        by_both
            .entry((model.clone(), user.clone()))
            .or_default()
            .add(sums);
        first_chat.get_or_insert((answer["id"].as_str().unwrap().to_owned(), sums));
    }

    for grouping in [
        "",
        "groupBy=day",
        "groupBy=hour",
        "groupBy=month",
        "groupBy=model",
        "groupBy=user",
        "groupBy=day&groupBy=model",
        "groupBy=model,user",
        "groupBy=day&groupBy=model&groupBy=user&timeZone=Asia/Kolkata",
    ] {
        let (totals, items) = all_groups(&app, &first, grouping).await;
        assert_eq!(totals, expected, "totals with {grouping}");
        let mut summed = Sums::default();
        for item in &items {
            summed.add(Sums::of(item));
        }
        if !grouping.is_empty() {
            assert_eq!(summed, expected, "groups with {grouping}");
        }
        let keyed = |item: &Value, field: &str| item[field].as_str().map(str::to_owned);
        if grouping.contains("model") && grouping.contains("user") {
            let got: BTreeMap<(String, String), Sums> = items
                .iter()
                .map(|i| {
                    (
                        (keyed(i, "modelId").unwrap(), keyed(i, "userId").unwrap()),
                        Sums::of(i),
                    )
                })
                .collect();
            assert_eq!(got, by_both, "{grouping}");
        } else if grouping.contains("model") {
            let got: BTreeMap<String, Sums> = items
                .iter()
                .map(|i| (keyed(i, "modelId").unwrap(), Sums::of(i)))
                .collect();
            assert_eq!(got, by_model, "{grouping}");
        } else if grouping.contains("user") {
            let got: BTreeMap<String, Sums> = items
                .iter()
                .map(|i| (keyed(i, "userId").unwrap(), Sums::of(i)))
                .collect();
            assert_eq!(got, by_user, "{grouping}");
        }
        if grouping.contains("day") || grouping.contains("hour") || grouping.contains("month") {
            assert!(
                items.iter().all(|i| i["periodStart"].is_string()),
                "{items:?}"
            );
        }
    }

    // Filters: one model, one principal, one chat.
    let (one_model, _) = all_groups(&app, &first, &format!("modelId={custom}")).await;
    assert_eq!(one_model, by_model[&custom]);
    let (one_user, _) = all_groups(&app, &first, &format!("userId={second_id}")).await;
    assert_eq!(one_user, by_user[&second_id]);
    let (chat, sums) = first_chat.unwrap();
    let (one_chat, _) = all_groups(&app, &first, &format!("chatId={chat}")).await;
    assert_eq!(one_chat, sums);

    // A replayed completion (same Idempotency-Key) is not billed again.
    let body = json!({
        "modelId": "test/one",
        "messages": [{"role": "user", "content": "Once."}],
        "maxTokens": 2,
        "temperature": 0
    });
    for _ in 0..2 {
        let response = app
            .client
            .post(app.url("/v1/chats"))
            .bearer_auth(&first)
            .header("Idempotency-Key", "bill-once")
            .json(&body)
            .send()
            .await
            .unwrap();
        ok(response, 201).await;
    }
    let (after, _) = all_groups(&app, &first, "").await;
    assert_eq!(after.requests, expected.requests + 1);

    // Another organization sees none of it.
    let stranger = app.caller_token("usage:read").await;
    let (theirs, _) = all_groups(&app, &stranger, "groupBy=model").await;
    assert_eq!(theirs, Sums::default());
}

async fn per_user_figures_need_usage_admin(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let reader = app.caller_token("usage:read").await;
    let totals = ok(
        app.call(Method::GET, "/v1/usage?groupBy=day,model", &reader)
            .await,
        200,
    )
    .await;
    assert_eq!(totals["timeZone"], json!("UTC"));
    assert_eq!(totals["groupBy"], json!(["day", "model"]));
    assert_eq!(totals["totals"]["requests"], json!(0));
    problem(
        app.call(Method::GET, "/v1/usage?groupBy=user", &reader)
            .await,
        403,
        "insufficient_scope",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/usage?userId=someone-else", &reader)
            .await,
        403,
        "insufficient_scope",
    )
    .await;
    let admin = app.caller_token("usage:admin").await;
    ok(
        app.call(Method::GET, "/v1/usage?groupBy=user", &admin)
            .await,
        200,
    )
    .await;
    let chats_only = app.caller_token("chats:invoke").await;
    problem(
        app.call(Method::GET, "/v1/usage", &chats_only).await,
        403,
        "insufficient_scope",
    )
    .await;
}

async fn bad_usage_queries_are_422(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = app.caller_token("usage:admin").await;
    for (query, field, kind) in [
        ("groupBy=week", "groupBy", "enum"),
        ("groupBy=day,month", "groupBy", "value_error"),
        ("timeZone=Mars/Olympus", "timeZone", "value_error"),
        ("from=yesterday", "from", "datetime_parsing"),
        ("from=2026-11-02&to=2026-11-01", "from", "value_error"),
        ("limit=0", "limit", "range"),
        ("cursor=bogus", "cursor", "cursor_invalid"),
    ] {
        let body = problem(
            app.call(Method::GET, &format!("/v1/usage?{query}"), &token)
                .await,
            422,
            "validation_failed",
        )
        .await;
        assert_eq!(
            body["detail"][0]["loc"],
            json!(["query", field]),
            "{query}: {body}"
        );
        assert_eq!(body["detail"][0]["type"], json!(kind), "{query}: {body}");
    }
    let day = ok(
        app.call(
            Method::GET,
            "/v1/usage?from=2026-03-29&to=2026-03-30&timeZone=Europe/Berlin",
            &token,
        )
        .await,
        200,
    )
    .await;
    // The day the clocks go forward in Berlin is 23 hours long.
    assert_eq!(day["from"], json!("2026-03-29T00:00:00+01:00"));
    assert_eq!(day["to"], json!("2026-03-30T00:00:00+02:00"));
}

async fn a_spent_monthly_budget_stops_completions(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let catalog_file = dir.path().join("catalog.toml");
    std::fs::write(&catalog_file, catalog()).unwrap();
    let models = crate::chats::model_dir();
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.local_dir = Some(models);
        settings.models.catalog_file = Some(catalog_file);
        settings.rate_limit.enabled = false;
        // Test organizations are on the pro plan; read the spend afresh on every request.
        settings.quotas.pro_monthly_credits = Some(5);
        settings.quotas.cache_secs = 0;
    })
    .await;
    let token = app.caller_token("chats:invoke usage:read").await;
    let ask = json!({
        "modelId": "test/three",
        "messages": [{"role": "user", "content": "Hi"}],
        "maxTokens": 2
    });
    // Under budget: the completion runs (and spends at least 3 × its tokens).
    let first = ok(
        app.call_json(Method::POST, "/v1/chats", &token, &ask).await,
        201,
    )
    .await;
    let spent = first["usage"]["totalTokens"].as_u64().unwrap() * 3;
    assert!(spent >= 5, "{first}");
    let refused = problem(
        app.call_json(Method::POST, "/v1/chats", &token, &ask).await,
        402,
        "credit_budget_exhausted",
    )
    .await;
    assert_eq!(refused["monthlyCredits"], json!(5));
    assert_eq!(refused["usedCredits"], json!(spent));
    assert!(
        refused["resetsAt"]
            .as_str()
            .unwrap()
            .ends_with("T00:00:00+00:00"),
        "{refused}"
    );
    // The OpenAI dialect refuses the same way, in OpenAI's terms.
    let response = app
        .call_json(
            Method::POST,
            "/openai/v1/chat/completions",
            &token,
            &json!({"model": "test/three", "messages": [{"role": "user", "content": "Hi"}],
                    "max_tokens": 2}),
        )
        .await;
    assert_eq!(response.status(), 429);
    let refused: Value = response.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "insufficient_quota", "{refused}");
    // Nothing was billed for the refusals; another organization still has its budget.
    let (totals, _) = all_groups(&app, &token, "").await;
    assert_eq!(totals.requests, 1);
    let other = app.caller_token("chats:invoke").await;
    ok(
        app.call_json(Method::POST, "/v1/chats", &other, &ask).await,
        201,
    )
    .await;
}

tessera_store::on_both_databases!(
    usage_totals_equal_the_completions_own_usage,
    per_user_figures_need_usage_admin,
    bad_usage_queries_are_422,
    a_spent_monthly_budget_stops_completions,
);
