//! Guardrail policies through the real HTTP stack (decision 0061): the organization's and
//! its models' policies (scope, validation located in the body, tenant scoping, unknown
//! models, audit), and end to end on the embedded model: a policy that blocks emails refuses
//! a `/v1` completion with a located 422 and an OpenAI dialect completion with its 400, and
//! one that redacts them shows the outcome on the answer. A policy's hook is a real HTTP
//! service on loopback: its verdicts refuse or pass completions, and a service that cannot
//! be reached refuses them when the policy fails closed and lets them pass when it fails
//! open. An answer an output rule refuses is withheld in every dialect, streamed or not,
//! each saying so in its own terms.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;
use tokio::{io::AsyncWriteExt, net::TcpListener, sync::mpsc};

use crate::{
    chats::{LOCAL, local_app, model_dir},
    openai::openai_error,
    support::{TestApp, ok, problem},
    webhooks::read_request,
};

const ADMIN: &str = "org:admin chats:invoke chats:read models:read models:write";

fn emails(action: &str) -> Value {
    json!({"pii": [{"id": "emails", "kind": "email", "action": action}]})
}

async fn put(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::Response {
    app.call_json(Method::PUT, path, token, body).await
}

async fn policies_are_organization_resources(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let admin = app.caller_token(ADMIN).await;

    // Absent at first; written, read back, replaced.
    problem(
        app.call(Method::GET, "/v1/guardrails", &admin).await,
        404,
        "not_found",
    )
    .await;
    let stored = ok(
        put(&app, &admin, "/v1/guardrails", &emails("block")).await,
        200,
    )
    .await;
    assert_eq!(stored["scope"], json!("organization"));
    assert!(stored.get("modelId").is_none(), "{stored}");
    assert_eq!(stored["policy"]["pii"][0]["kind"], json!("email"));
    assert!(stored["updatedBy"].is_string() && stored["updatedAt"].is_string());
    let read = ok(app.call(Method::GET, "/v1/guardrails", &admin).await, 200).await;
    assert_eq!(read["policy"], stored["policy"]);
    let replaced =
        json!({"deny": [{"id": "projects", "words": ["Project Nandu"]}], "maxInputChars": 5000});
    let stored = ok(put(&app, &admin, "/v1/guardrails", &replaced).await, 200).await;
    assert_eq!(stored["policy"]["maxInputChars"], json!(5000));
    assert!(stored["policy"].get("pii").is_none(), "{stored}");

    // A catalog model's policy and a user model's; the list has both, not the organization's.
    let base = format!("/v1/guardrails/models/{LOCAL}");
    let stored = ok(put(&app, &admin, &base, &emails("redact")).await, 200).await;
    assert_eq!(stored["scope"], json!("model"));
    assert_eq!(stored["modelId"], json!(LOCAL));
    let model = ok(
        app.call_json(
            Method::POST,
            "/v1/models",
            &admin,
            &json!({"parentModelId": LOCAL, "displayName": "Guarded"}),
        )
        .await,
        201,
    )
    .await;
    let own = format!("/v1/guardrails/models/{}", model["id"].as_str().unwrap());
    ok(put(&app, &admin, &own, &emails("pseudonymise")).await, 200).await;
    let listed = ok(
        app.call(Method::GET, "/v1/guardrails/models", &admin).await,
        200,
    )
    .await;
    let models: Vec<&str> = (listed["items"].as_array().unwrap().iter())
        .map(|policy| policy["modelId"].as_str().unwrap())
        .collect();
    assert_eq!(models.len(), 2, "{listed}");
    assert!(models.contains(&LOCAL), "{listed}");
    ok(app.call(Method::GET, &base, &admin).await, 200).await;

    // Unknown models are 404, whether catalog-like or user-model-like.
    for unknown in [
        "local/none",
        "mdl_0190f5c1a3e27c3d9b1e4a0c5d6e7f80",
        "nothing",
    ] {
        let path = format!("/v1/guardrails/models/{unknown}");
        problem(
            put(&app, &admin, &path, &emails("block")).await,
            404,
            "not_found",
        )
        .await;
        problem(app.call(Method::GET, &path, &admin).await, 404, "not_found").await;
    }

    // Validation: located in the body, with its type.
    let bad = problem(
        put(
            &app,
            &admin,
            "/v1/guardrails",
            &json!({"deny": [{"id": "x", "patterns": ["ok", "(unclosed"]}]}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        bad["detail"][0]["loc"],
        json!(["body", "deny", 0, "patterns", 1]),
        "{bad}"
    );
    assert_eq!(bad["detail"][0]["type"], json!("pattern_invalid"), "{bad}");
    assert!(bad["detail"][0]["msg"].is_string());
    let unknown_field = problem(
        put(
            &app,
            &admin,
            "/v1/guardrails",
            &json!({"pii": [], "blockEverything": true}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        unknown_field["detail"][0]["loc"][0],
        json!("body"),
        "{unknown_field}"
    );
    let unknown_kind = problem(
        put(
            &app,
            &admin,
            "/v1/guardrails",
            &json!({"pii": [{"id": "a", "kind": "shoe_size", "action": "block"}]}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        unknown_kind["detail"][0]["loc"],
        json!(["body", "pii", 0, "kind"]),
        "{unknown_kind}"
    );
    // A hook on this service's own network, unless `guardrails.allow_private_targets`.
    let private_hook = problem(
        put(
            &app,
            &admin,
            "/v1/guardrails",
            &json!({"hook": {"url": "http://127.0.0.1:9/check", "failMode": "open"}}),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        private_hook["detail"][0]["loc"],
        json!(["body", "hook", "url"]),
        "{private_hook}"
    );
    // The refused writes changed nothing.
    let read = ok(app.call(Method::GET, "/v1/guardrails", &admin).await, 200).await;
    assert_eq!(read["policy"]["maxInputChars"], json!(5000));

    // Without org:admin: 403 on every operation.
    let user = app
        .caller_token("chats:invoke chats:read models:read models:write")
        .await;
    for (method, path) in [
        (Method::GET, "/v1/guardrails"),
        (Method::PUT, "/v1/guardrails"),
        (Method::DELETE, "/v1/guardrails"),
        (Method::GET, "/v1/guardrails/models"),
        (Method::GET, base.as_str()),
        (Method::PUT, base.as_str()),
        (Method::DELETE, base.as_str()),
    ] {
        let response = app
            .call_json(method.clone(), path, &user, &emails("block"))
            .await;
        assert_eq!(response.status().as_u16(), 403, "{method} {path}");
    }

    // Another organization sees none of it.
    let other = app.caller_token(ADMIN).await;
    problem(
        app.call(Method::GET, "/v1/guardrails", &other).await,
        404,
        "not_found",
    )
    .await;
    problem(app.call(Method::GET, &base, &other).await, 404, "not_found").await;
    problem(app.call(Method::GET, &own, &other).await, 404, "not_found").await;
    let listed = ok(
        app.call(Method::GET, "/v1/guardrails/models", &other).await,
        200,
    )
    .await;
    assert_eq!(listed["items"], json!([]));
    problem(
        app.call(Method::DELETE, "/v1/guardrails", &other).await,
        404,
        "not_found",
    )
    .await;

    // Deleted: 204, then 404; the model's policy stays.
    ok(
        app.call(Method::DELETE, "/v1/guardrails", &admin).await,
        204,
    )
    .await;
    problem(
        app.call(Method::DELETE, "/v1/guardrails", &admin).await,
        404,
        "not_found",
    )
    .await;
    ok(app.call(Method::GET, &base, &admin).await, 200).await;
    ok(app.call(Method::DELETE, &base, &admin).await, 204).await;
    problem(app.call(Method::GET, &base, &admin).await, 404, "not_found").await;

    // Every change is in the audit log.
    let audit = ok(
        app.call(
            Method::GET,
            "/v1/audit-events?resourceType=guardrail_policy&limit=100",
            &admin,
        )
        .await,
        200,
    )
    .await;
    let actions: Vec<&str> = (audit["items"].as_array().unwrap().iter())
        .filter(|event| event["resourceType"] == json!("guardrail_policy"))
        .map(|event| event["action"].as_str().unwrap())
        .collect();
    let updates = actions
        .iter()
        .filter(|a| **a == "guardrail_policy.update")
        .count();
    let deletes = actions
        .iter()
        .filter(|a| **a == "guardrail_policy.delete")
        .count();
    assert_eq!((updates, deletes), (4, 2), "{audit}");
}

fn ask(text: &str) -> Value {
    json!({
        "modelId": LOCAL,
        "messages": [{"role": "user", "content": text}],
        "maxTokens": 8,
        "temperature": 0
    })
}

async fn policies_apply_to_completions(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let admin = app.caller_token(ADMIN).await;
    let question = "Please reply to jane.doe@example.org today.";

    // Before any policy, the email passes.
    ok(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask(question))
            .await,
        201,
    )
    .await;

    // Blocking emails: `/v1` refuses where the email is, the OpenAI dialect with its 400.
    ok(
        put(&app, &admin, "/v1/guardrails", &emails("block")).await,
        200,
    )
    .await;
    let refused = problem(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask(question))
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["body", "messages", 0, "content"]),
        "{refused}"
    );
    assert_eq!(
        refused["detail"][0]["type"],
        json!("guardrail_blocked"),
        "{refused}"
    );
    let message = refused["detail"][0]["msg"].as_str().unwrap();
    assert!(
        !message.contains("jane.doe"),
        "the refusal never shows the value: {message}"
    );
    let error = openai_error(
        app.call_json(
            Method::POST,
            "/openai/v1/chat/completions",
            &admin,
            &json!({"model": LOCAL, "max_tokens": 8, "messages": [{"role": "user", "content": question}]}),
        )
        .await,
        400,
    )
    .await;
    assert_eq!(error["type"], json!("invalid_request_error"), "{error}");
    // Another organization is not affected.
    let other = app.caller_token(ADMIN).await;
    ok(
        app.call_json(Method::POST, "/v1/chats", &other, &ask(question))
            .await,
        201,
    )
    .await;

    // A model's policy refines the organization's: redacting the same rule id.
    ok(
        put(
            &app,
            &admin,
            &format!("/v1/guardrails/models/{LOCAL}"),
            &emails("redact"),
        )
        .await,
        200,
    )
    .await;
    let answer = ok(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask(question))
            .await,
        201,
    )
    .await;
    let outcome = &answer["guardrails"][0];
    assert_eq!(outcome["rule"], json!("emails"), "{answer}");
    assert_eq!(outcome["kind"], json!("email"));
    assert_eq!(outcome["direction"], json!("input"));
    assert_eq!(outcome["effect"], json!("redacted"));
    assert_eq!(outcome["count"], json!(1));
    // The stored question holds the mask, never the value.
    let chat = ok(
        app.call(
            Method::GET,
            &format!("/v1/chats/{}", answer["id"].as_str().unwrap()),
            &admin,
        )
        .await,
        200,
    )
    .await;
    let stored = chat.to_string();
    assert!(!stored.contains("jane.doe@example.org"), "{stored}");
    assert!(stored.contains("[REDACTED:EMAIL]"), "{stored}");
}

/// Each decision is counted in `tessera_guardrail_decisions_total` by kind, direction and
/// effect (never by organization or rule: both are unbounded).
#[tokio::test]
async fn decisions_are_counted_in_the_metrics() {
    let app = TestApp::spawn_with(Backend::Sqlite, |settings| {
        settings.metrics.listen = "127.0.0.1:0".into();
        settings.models.local_dir = Some(model_dir());
        settings.rate_limit.enabled = false;
    })
    .await;
    let admin = app.caller_token(ADMIN).await;
    ok(
        put(&app, &admin, "/v1/guardrails", &emails("block")).await,
        200,
    )
    .await;
    let question = "Mail jane.doe@example.org and john@example.com.";
    problem(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask(question))
            .await,
        422,
        "validation_failed",
    )
    .await;
    let address = app.metrics.expect("metrics are on");
    let text = reqwest::get(format!("http://{address}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = text
        .lines()
        .find(|line| line.starts_with("tessera_guardrail_decisions_total{"))
        .unwrap_or_else(|| panic!("no guardrail decision counted:\n{text}"));
    for label in [
        r#"kind="email""#,
        r#"direction="input""#,
        r#"effect="blocked""#,
    ] {
        assert!(line.contains(label), "{line}");
    }
    assert!(
        !line.contains("organization") && !line.contains("emails"),
        "{line}"
    );
}

/// A guardrail service on loopback that blocks any text containing "forbidden" (reason
/// "off topic") and allows the rest, and reports each question's body.
async fn guardrail_service() -> (String, mpsc::UnboundedReceiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/check", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                while let Some(request) = read_request(&mut socket).await {
                    let question: Value = serde_json::from_str(&request.body).unwrap();
                    let blocked =
                        question["texts"].as_array().unwrap().iter().any(|text| {
                            text.as_str().unwrap().to_lowercase().contains("forbidden")
                        });
                    let verdict = if blocked {
                        json!({"action": "block", "reason": "off topic"})
                    } else {
                        json!({"action": "allow"})
                    };
                    // Reported before the verdict is written, so whatever asked is
                    // answered only after the test can see the question.
                    let _ = tx.send(question);
                    let body = verdict.to_string();
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if socket.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, rx)
}

/// A loopback URL nothing listens on.
async fn unreachable_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{address}/check")
}

fn hook(url: &str, fail_mode: &str) -> Value {
    json!({"hook": {"url": url, "timeoutMs": 5000, "failMode": fail_mode, "appliesTo": "both"}})
}

async fn hooks_are_asked_over_http(backend: Backend) {
    let (url, mut questions) = guardrail_service().await;
    let app = TestApp::spawn_with(backend, |settings| {
        settings.models.local_dir = Some(model_dir());
        settings.rate_limit.enabled = false;
        settings.guardrails.allow_private_targets = true;
    })
    .await;
    let admin = app.caller_token(ADMIN).await;
    ok(
        put(&app, &admin, "/v1/guardrails", &hook(&url, "closed")).await,
        200,
    )
    .await;

    // The service's block refuses the turn with its reason; no model is called.
    let refused = problem(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &admin,
            &ask("Tell me a forbidden story."),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        refused["detail"][0]["loc"],
        json!(["body", "messages"]),
        "{refused}"
    );
    assert_eq!(refused["detail"][0]["type"], json!("guardrail_blocked"));
    assert!(
        refused["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("off topic"),
        "{refused}"
    );
    let asked = questions.recv().await.unwrap();
    assert_eq!(
        asked,
        json!({"direction": "input", "texts": ["Tell me a forbidden story."]})
    );

    // Allowed: the service is asked about the question, then about the answer.
    let answer = ok(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask("Say hello."))
            .await,
        201,
    )
    .await;
    let input = questions.recv().await.unwrap();
    assert_eq!(
        input,
        json!({"direction": "input", "texts": ["Say hello."]})
    );
    let output = questions.recv().await.unwrap();
    assert_eq!(output["direction"], json!("output"), "{output}");
    assert_eq!(
        output["texts"].as_array().map(Vec::len),
        Some(1),
        "{output}"
    );
    let effects: Vec<(&str, &str)> = (answer["guardrails"].as_array().unwrap().iter())
        .map(|outcome| {
            assert_eq!(outcome["rule"], json!("hook"), "{answer}");
            (
                outcome["direction"].as_str().unwrap(),
                outcome["effect"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        effects,
        [("input", "passed"), ("output", "passed")],
        "{answer}"
    );

    // Counting a prompt's tokens does not ask the service (nothing leaves for a count).
    let counted = ok(
        app.call_json(
            Method::POST,
            "/anthropic/v1/messages/count_tokens",
            &admin,
            &json!({"model": LOCAL, "messages": [{"role": "user", "content": "A forbidden count."}]}),
        )
        .await,
        200,
    )
    .await;
    assert!(counted["input_tokens"].as_u64().unwrap() > 0, "{counted}");
    assert!(questions.try_recv().is_err(), "a count asked the hook");

    // A service that cannot be reached: refused when the policy fails closed...
    let down = unreachable_url().await;
    ok(
        put(&app, &admin, "/v1/guardrails", &hook(&down, "closed")).await,
        200,
    )
    .await;
    let refused = problem(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask("Say hello."))
            .await,
        422,
        "validation_failed",
    )
    .await;
    assert!(
        refused["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("no verdict"),
        "{refused}"
    );
    // ...and answered, the failure recorded, when it fails open.
    ok(
        put(&app, &admin, "/v1/guardrails", &hook(&down, "open")).await,
        200,
    )
    .await;
    let answer = ok(
        app.call_json(Method::POST, "/v1/chats", &admin, &ask("Say hello."))
            .await,
        201,
    )
    .await;
    let outcome = &answer["guardrails"][0];
    assert_eq!(outcome["effect"], json!("passed"), "{answer}");
    assert_eq!(outcome["hookFailure"], json!("unavailable"), "{answer}");
}

/// The embedded model's greedy answer to this names Paris.
const CAPITAL: &str = "What is the capital of France?";

async fn ask_capital(app: &TestApp, token: &str) -> Value {
    let body = json!({
        "modelId": LOCAL,
        "messages": [{"role": "user", "content": CAPITAL}],
        "maxTokens": 16,
        "temperature": 0
    });
    ok(
        app.call_json(Method::POST, "/v1/chats", token, &body).await,
        201,
    )
    .await
}

#[tokio::test]
async fn answers_refused_by_an_output_rule_are_withheld_in_every_dialect() {
    let (app, _dir) = local_app(Backend::Sqlite, None).await;
    let admin = app.caller_token(ADMIN).await;
    // The precondition: without a policy the answer names the city.
    let free = ask_capital(&app, &admin).await;
    let said = free["message"]["content"].as_str().unwrap();
    assert!(said.contains("Paris"), "{free}");

    let cities = json!({"deny": [{"id": "cities", "words": ["Paris"], "appliesTo": "output"}]});
    ok(put(&app, &admin, "/v1/guardrails", &cities).await, 200).await;

    let withheld = ask_capital(&app, &admin).await;
    assert_eq!(
        withheld["finishReason"],
        json!("content_filter"),
        "{withheld}"
    );
    assert!(!withheld.to_string().contains("Paris"), "{withheld}");
    let outcome = &withheld["guardrails"][0];
    assert_eq!(
        (&outcome["rule"], &outcome["direction"], &outcome["effect"]),
        (&json!("cities"), &json!("output"), &json!("blocked")),
        "{withheld}"
    );

    let openai = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/chat/completions",
            &admin,
            &json!({"model": LOCAL, "max_tokens": 16, "temperature": 0,
                    "messages": [{"role": "user", "content": CAPITAL}]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        openai["choices"][0]["finish_reason"],
        json!("content_filter"),
        "{openai}"
    );
    assert!(!openai.to_string().contains("Paris"), "{openai}");

    let response = ok(
        app.call_json(
            Method::POST,
            "/openai/v1/responses",
            &admin,
            &json!({"model": LOCAL, "max_output_tokens": 16, "temperature": 0, "input": CAPITAL}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(response["status"], json!("incomplete"), "{response}");
    assert_eq!(
        response["incomplete_details"]["reason"],
        json!("content_filter"),
        "{response}"
    );
    assert!(!response.to_string().contains("Paris"), "{response}");

    let message = ok(
        app.call_json(
            Method::POST,
            "/anthropic/v1/messages",
            &admin,
            &json!({"model": LOCAL, "max_tokens": 16, "temperature": 0,
                    "messages": [{"role": "user", "content": CAPITAL}]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(message["stop_reason"], json!("refusal"), "{message}");
    assert!(!message.to_string().contains("Paris"), "{message}");

    // Streamed, the same in every dialect: nothing of the answer reaches the client before
    // the rule has read it, and the stream ends the way a refused answer ends there.
    let user = json!([{"role": "user", "content": CAPITAL}]);
    let streams = [
        (
            "/v1/chats",
            json!({"modelId": LOCAL, "maxTokens": 16, "temperature": 0, "stream": true,
                   "messages": user}),
            "\"content_filter\"",
        ),
        (
            "/openai/v1/chat/completions",
            json!({"model": LOCAL, "max_tokens": 16, "temperature": 0, "stream": true,
                   "messages": user}),
            "\"finish_reason\":\"content_filter\"",
        ),
        (
            "/openai/v1/responses",
            json!({"model": LOCAL, "max_output_tokens": 16, "temperature": 0, "stream": true,
                   "input": CAPITAL}),
            "\"reason\":\"content_filter\"",
        ),
        (
            "/anthropic/v1/messages",
            json!({"model": LOCAL, "max_tokens": 16, "temperature": 0, "stream": true,
                   "messages": user}),
            "\"stop_reason\":\"refusal\"",
        ),
    ];
    for (path, body, ending) in streams {
        let response = app.call_json(Method::POST, path, &admin, &body).await;
        assert_eq!(response.status(), 200, "{path}");
        let events = response.text().await.unwrap();
        assert!(!events.contains("Paris"), "{path}: {events}");
        assert!(
            events.contains(ending),
            "{path} ends without {ending}: {events}"
        );
    }
}

tessera_store::on_both_databases!(
    policies_are_organization_resources,
    policies_apply_to_completions,
    hooks_are_asked_over_http,
);
