//! Artifacts through the real HTTP stack: an answer (from a LiteLLM proxy's scripted model,
//! through the OpenAI-compatible adapter) holding a Mermaid diagram, an SVG image, an HTML
//! page and a Rust code block yields four artifacts of the right kinds; the next answer in
//! the chat revises them (version 2); content is served with its media type and, for
//! HTML and SVG, a sandboxing Content-Security-Policy; other principals and organizations
//! see none of it. On SQLite and PostgreSQL.

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::{
    chats::local_app,
    support::{TestApp, ok, problem},
};

async fn scripted_app(
    backend: Backend,
) -> (
    TestApp,
    tempfile::TempDir,
    tessera_llm_openai::testing::LiteLlm,
) {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/litellm.yaml");
    let proxy =
        tessera_llm_openai::testing::LiteLlm::start_without_key(std::path::Path::new(config)).await;
    let catalog = format!(
        "[providers.gateway]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n[[models]]\nid = \"test/artifacts\"\ndisplay_name = \"Artifacts\"\nprovider = \"gateway\"\nmodel_name = \"mock-artifacts\"\ncontext_window = 4096\ncapabilities = {{ streaming = true }}\n",
        proxy.base_url
    );
    let (app, dir) = local_app(backend, Some(catalog)).await;
    (app, dir, proxy)
}

fn kinds(page: &Value) -> Vec<(String, Option<String>, String, u64)> {
    let mut found: Vec<_> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_owned(),
                a["language"].as_str().map(str::to_owned),
                a["title"].as_str().unwrap().to_owned(),
                a["version"].as_u64().unwrap(),
            )
        })
        .collect();
    found.sort();
    found
}

async fn answers_yield_versioned_artifacts(backend: Backend) {
    let (app, _dir, _proxy) = scripted_app(backend).await;
    let (organization, client, secret) = app
        .organization_with_client("chats:invoke chats:read")
        .await;
    let token = app.token(&client, &secret).await;
    let first = ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"modelId": "test/artifacts", "messages": [{"role": "user", "content": "Draw it all."}]}),
        )
        .await,
        201,
    )
    .await;
    let chat = first["id"].as_str().unwrap().to_owned();

    let page = ok(
        app.call(Method::GET, &format!("/v1/artifacts?chatId={chat}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(page["totalCount"], json!(4), "{page}");
    let expected = |version: u64| {
        vec![
            (
                "code".to_owned(),
                Some("rust".to_owned()),
                "Parser".to_owned(),
                version,
            ),
            ("html".to_owned(), None, "Status page".to_owned(), version),
            ("mermaid".to_owned(), None, "Flowchart".to_owned(), version),
            ("svg".to_owned(), None, "Dot".to_owned(), version),
        ]
    };
    assert_eq!(kinds(&page), expected(1));

    // The next answer in the chat revises every one of them.
    ok(
        app.call_json(
            Method::POST,
            "/v1/chats",
            &token,
            &json!({"chatId": chat, "messages": [{"role": "user", "content": "Again."}]}),
        )
        .await,
        200,
    )
    .await;
    let all = ok(
        app.call(
            Method::GET,
            &format!("/v1/artifacts?chatId={chat}&limit=3"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(all["totalCount"], json!(8));
    assert_eq!(all["hasMore"], json!(true));
    let cursor = all["nextCursor"].as_str().unwrap();
    let rest = ok(
        app.call(
            Method::GET,
            &format!("/v1/artifacts?chatId={chat}&limit=10&cursor={cursor}"),
            &token,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 5);
    // Newest first: the first page holds three of the second answer's versions.
    assert!(
        all["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["version"] == json!(2))
    );

    // One artifact, and its content served inert.
    let html = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == json!("html"))
        .unwrap();
    let id = html["id"].as_str().unwrap();
    let record = ok(
        app.call(Method::GET, &format!("/v1/artifacts/{id}"), &token)
            .await,
        200,
    )
    .await;
    assert_eq!(record["chatId"], json!(chat));
    assert_eq!(record["identifier"], json!("status-page"));
    assert!(
        record["content"]
            .as_str()
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
    let content = app
        .call(Method::GET, &format!("/v1/artifacts/{id}/content"), &token)
        .await;
    assert_eq!(content.status(), 200);
    let header = |name: &str| {
        content
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(header("content-type"), "text/html; charset=utf-8");
    assert!(
        header("content-security-policy").starts_with("sandbox;"),
        "{}",
        header("content-security-policy")
    );
    assert!(header("content-security-policy").contains("default-src 'none'"));
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert!(
        content
            .text()
            .await
            .unwrap()
            .contains("<script>alert(1)</script>")
    );
    let svg = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == json!("svg"))
        .unwrap();
    let content = app
        .call(
            Method::GET,
            &format!("/v1/artifacts/{}/content", svg["id"].as_str().unwrap()),
            &token,
        )
        .await;
    assert_eq!(content.headers()["content-type"], "image/svg+xml");
    assert!(content.headers().contains_key("content-security-policy"));

    // The chat's listing without chatId is the caller's artifacts.
    let mine = ok(app.call(Method::GET, "/v1/artifacts", &token).await, 200).await;
    assert_eq!(mine["totalCount"], json!(8));

    // Another principal of the organization (without chats:admin) sees none of them; an
    // admin sees them all; another organization gets 404 for the chat and the artifact.
    let (peer_id, peer_secret) = {
        use tessera_identity::{ClientName, NewClient};
        let (client, secret) = app
            .state
            .identity
            .create_client(
                NewClient {
                    organization_id: organization.parse().unwrap(),
                    name: ClientName::parse("peer").unwrap(),
                    scopes: tessera_kernel::ScopeSet::parse_list("chats:read").unwrap(),
                },
                &tessera_kernel::Actor::System,
            )
            .await
            .unwrap();
        (client.id.to_string(), secret.expose().to_owned())
    };
    let peer = app.token(&peer_id, &peer_secret).await;
    let theirs = ok(app.call(Method::GET, "/v1/artifacts", &peer).await, 200).await;
    assert_eq!(theirs["totalCount"], json!(0));
    problem(
        app.call(Method::GET, &format!("/v1/artifacts/{id}"), &peer)
            .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(Method::GET, &format!("/v1/artifacts?chatId={chat}"), &peer)
            .await,
        404,
        "not_found",
    )
    .await;
    let stranger = app.caller_token("chats:admin").await;
    problem(
        app.call(
            Method::GET,
            &format!("/v1/artifacts/{id}/content"),
            &stranger,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let nothing = ok(app.call(Method::GET, "/v1/artifacts", &stranger).await, 200).await;
    assert_eq!(nothing["totalCount"], json!(0));

    // Scope, malformed ids, bad paging.
    let no_scope = app.caller_token("usage:read").await;
    problem(
        app.call(Method::GET, "/v1/artifacts", &no_scope).await,
        403,
        "insufficient_scope",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/artifacts/not-an-id", &token)
            .await,
        404,
        "not_found",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/artifacts?cursor=bogus", &token)
            .await,
        422,
        "validation_failed",
    )
    .await;
}

tessera_store::on_both_databases!(answers_yield_versioned_artifacts);
