//! Failures an adversarial probe found: a NUL character in any text, or a response schema no
//! value can match, is a 422 with its location on both databases, before any provider call or
//! write; a database connection cut
//! mid-request is a 503 problem with `Retry-After`, never a 500, and nothing answered 2xx is
//! lost.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::{LOCAL, local_app},
    support::{TestApp, problem},
};

const SCOPES: &str = "particles:admin system-prompts:admin datasets:write datasets:read \
                      chats:admin chats:invoke models:read usage:admin";

async fn refused_at(app: &TestApp, token: &str, path: &str, body: &Value) -> Value {
    let body = problem(
        app.call_json(Method::POST, path, token, body).await,
        422,
        "validation_failed",
    )
    .await;
    assert!(
        body["detail"]
            .as_array()
            .unwrap()
            .iter()
            .all(|entry| entry["type"] == "string_nul"),
        "{path}: {body}"
    );
    body["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["loc"].clone())
        .collect()
}

async fn nul_text_is_422_before_any_work(backend: Backend) {
    let (app, _dir) = local_app(backend, None).await;
    let token = app.caller_token(SCOPES).await;
    let cases = [
        (
            "/v1/particles",
            json!({"name": "a\u{0}", "category": "role", "content": "b\u{0}c"}),
            json!([["body", "name"], ["body", "content"]]),
        ),
        (
            "/v1/datasets",
            json!({"name": "\u{0}"}),
            json!([["body", "name"]]),
        ),
        (
            "/v1/system-prompts",
            json!({"name": "x\u{0}"}),
            json!([["body", "name"]]),
        ),
        (
            "/v1/chats",
            json!({
                "modelId": LOCAL,
                "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "\u{0}"}],
                "maxTokens": 4
            }),
            json!([["body", "messages", 1, "content"]]),
        ),
    ];
    for (path, body, locs) in cases {
        assert_eq!(refused_at(&app, &token, path, &body).await, locs, "{path}");
    }
    // A response schema no value can match is the request's fault, not the provider's.
    let unsatisfiable = problem(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({
                "modelId": LOCAL,
                "messages": [{"role": "user", "content": "hi"}],
                "responseFormat": {"type": "json_schema", "json_schema": {"name": "r", "schema":
                    {"allOf": [{"type": "string"}, {"type": "integer"}]}}}
            }),
        )
        .await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(
        (
            &unsatisfiable["detail"][0]["loc"],
            &unsatisfiable["detail"][0]["type"]
        ),
        (
            &json!(["body", "responseFormat", "json_schema", "schema"]),
            &json!("json_schema_unsatisfiable")
        )
    );
    let query = problem(
        app.call(Method::GET, "/v1/usage?modelId=%00", &token).await,
        422,
        "validation_failed",
    )
    .await;
    assert_eq!(query["detail"][0]["loc"], json!(["query", "modelId"]));
    // Nothing was stored, and the model was never called: no chat, no usage.
    for (path, field) in [
        ("/v1/particles", "totalCount"),
        ("/v1/datasets", "totalCount"),
        ("/v1/system-prompts", "totalCount"),
        ("/v1/chats", "totalCount"),
    ] {
        let page: Value = app
            .call(Method::GET, path, &token)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(page[field], json!(0), "{path}: {page}");
    }
    let usage: Value = app
        .call(Method::GET, "/v1/usage", &token)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(usage["totals"]["inputTokens"], json!(0), "{usage}");
}

/// Writes in a loop while every server connection of the database is terminated twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_survive_terminated_connections_on_postgres() {
    let app = TestApp::spawn_with(Backend::Postgres, |settings| {
        settings.rate_limit.enabled = false;
    })
    .await;
    let token = app.caller_token("particles:admin").await;
    let writers = (0..4).map(|writer| {
        let (client, base, token) = (app.client.clone(), app.base.clone(), token.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            for n in 0..60 {
                let response = client
                    .post(format!("{base}/v1/particles"))
                    .bearer_auth(&token)
                    .json(&json!({"name": format!("w{writer}-{n}"), "category": "role", "content": "Be brief."}))
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                let retry_after = response.headers().contains_key("retry-after");
                let body: Value = response.json().await.unwrap();
                answers.push((status, retry_after, body));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            answers
        })
    });
    let writers: Vec<_> = writers.collect();
    let database = app.database.as_ref().unwrap();
    let mut cut = 0;
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cut += database.terminate_connections().await;
    }
    assert!(cut > 0, "no connection was terminated");
    let mut written = Vec::new();
    for writer in writers {
        for (status, retry_after, body) in writer.await.unwrap() {
            match status {
                201 => written.push(body["id"].as_str().unwrap().to_owned()),
                503 => {
                    assert_eq!(body["code"], "service_unavailable", "{body}");
                    assert!(retry_after, "503 without Retry-After: {body}");
                }
                other => panic!("answered {other}: {body}"),
            }
        }
    }
    assert!(!written.is_empty());
    for id in written {
        let read = app
            .call(Method::GET, &format!("/v1/particles/{id}"), &token)
            .await;
        assert_eq!(
            read.status().as_u16(),
            200,
            "{id} was answered 201 but is not readable"
        );
    }
}

tessera_store::on_both_databases!(nul_text_is_422_before_any_work);
