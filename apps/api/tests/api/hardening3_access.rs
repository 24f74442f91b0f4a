//! Issue 61, third hardening round, over HTTPS on the real application: no power gained
//! through a credential one may act on (rotating or revoking a client or API key needs its
//! every scope, like creating it); no target URL whose IPv6 address carries a private IPv4
//! address (webhooks, MCP servers); no session token of a provider whose discovery document
//! names another issuer; no MCP header secret that follows its server's URL to another
//! origin, and no change to a server that undoes another.

use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;

use crate::support::{TestApp, ok, problem};

/// A credential's `org:owner` is out of reach of an `org:admin` API key of its organization:
/// rotating or revoking the owner's client or key is 403 `scope_not_held` and the owner's
/// secret and key keep working; the same admin key rotates and revokes credentials whose
/// scopes it holds; an operator (`tessera-admin`, no principal) still acts on any.
async fn an_admin_cannot_take_over_or_revoke_an_owner(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // The owner's client, made as `tessera-admin` makes it (no principal).
    let (org, owner_client, owner_secret) = app.organization_with_client("org:owner").await;
    let owner_token = app.token(&owner_client, &owner_secret).await;
    let owner_key = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            &owner_token,
            &json!({"name": "owner's key", "scopes": ["org:owner"]}),
        )
        .await,
        201,
    )
    .await;
    let admin_key = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            &owner_token,
            &json!({"name": "admin's key", "scopes": ["org:admin"]}),
        )
        .await,
        201,
    )
    .await;
    let admin = admin_key["secret"].as_str().unwrap();
    let owner_key_id = owner_key["id"].as_str().unwrap();

    // Rotation would hand the admin a secret whose tokens carry org:owner.
    let refused = problem(
        app.call(
            Method::POST,
            &format!("/v1/clients/{owner_client}/rotate"),
            admin,
        )
        .await,
        403,
        "scope_not_held",
    )
    .await;
    assert!(
        refused["detail"].as_str().unwrap().contains("org:owner"),
        "{refused}"
    );
    assert!(refused.get("clientSecret").is_none());
    problem(
        app.call(
            Method::DELETE,
            &format!("/v1/clients/{owner_client}"),
            admin,
        )
        .await,
        403,
        "scope_not_held",
    )
    .await;
    problem(
        app.call(
            Method::DELETE,
            &format!("/v1/api-keys/{owner_key_id}"),
            admin,
        )
        .await,
        403,
        "scope_not_held",
    )
    .await;
    // The owner's secret, its earlier token and its key all still work.
    let again = app.token(&owner_client, &owner_secret).await;
    for credential in [
        again.as_str(),
        owner_token.as_str(),
        owner_key["secret"].as_str().unwrap(),
    ] {
        let me = ok(
            app.call(Method::GET, "/v1/clients?limit=1", credential)
                .await,
            200,
        )
        .await;
        assert_eq!(me["totalCount"], 1, "{me}");
    }
    let unchanged = ok(
        app.call(Method::GET, &format!("/v1/clients/{owner_client}"), admin)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (unchanged["scopes"].clone(), unchanged["revokedAt"].clone()),
        (json!(["org:owner"]), Value::Null),
        "{unchanged}"
    );

    // A client and a key whose scopes the admin holds: rotated and revoked by it.
    let job = ok(
        app.call_json(
            Method::POST,
            "/v1/clients",
            admin,
            &json!({"name": "ingest job", "scopes": ["files:read", "org:admin"]}),
        )
        .await,
        201,
    )
    .await;
    let job_id = job["id"].as_str().unwrap();
    let rotated = ok(
        app.call(Method::POST, &format!("/v1/clients/{job_id}/rotate"), admin)
            .await,
        200,
    )
    .await;
    let new_secret = rotated["clientSecret"].as_str().unwrap();
    assert_ne!(new_secret, job["clientSecret"].as_str().unwrap());
    app.token(job_id, new_secret).await;
    let bot = ok(
        app.call_json(
            Method::POST,
            "/v1/api-keys",
            admin,
            &json!({"name": "bot", "scopes": ["chats:invoke"]}),
        )
        .await,
        201,
    )
    .await;
    ok(
        app.call(
            Method::DELETE,
            &format!("/v1/api-keys/{}", bot["id"].as_str().unwrap()),
            admin,
        )
        .await,
        204,
    )
    .await;
    ok(
        app.call(Method::DELETE, &format!("/v1/clients/{job_id}"), admin)
            .await,
        204,
    )
    .await;
    // The owner acts on its own credentials as before.
    let owners_key_of_admin = admin_key["id"].as_str().unwrap();
    ok(
        app.call(
            Method::DELETE,
            &format!("/v1/api-keys/{owners_key_of_admin}"),
            &owner_token,
        )
        .await,
        204,
    )
    .await;

    // An operator has no principal, and keeps full power.
    let organization = org.parse().unwrap();
    let operator = tessera_kernel::Actor::Operator("ops".into());
    let rotated = app
        .state
        .identity
        .rotate_secret(&organization, &owner_client.parse().unwrap(), &operator)
        .await
        .unwrap();
    app.token(&owner_client, rotated.expose()).await;
    app.state
        .api_keys
        .revoke(&organization, &owner_key_id.parse().unwrap(), &operator)
        .await
        .unwrap();
}

/// URL hosts written as IPv6 addresses that carry 127.0.0.1 or another private IPv4 address.
const EMBEDDING_PRIVATE_IPV4: [&str; 8] = [
    // IPv4-compatible.
    "http://[::127.0.0.1]:8080/x",
    // IPv4-mapped, in both spellings.
    "http://[::ffff:127.0.0.1]/x",
    "http://[::ffff:a9fe:a9fe]/x",
    // NAT64's well-known prefix, and its local-use prefix.
    "http://[64:ff9b::7f00:1]/x",
    "http://[64:ff9b::10.0.0.1]/x",
    "http://[64:ff9b:1::808:808]/x",
    // 6to4.
    "http://[2002:7f00:1::]/x",
    // Teredo, whose client 127.0.0.1 is stored inverted.
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x",
];

/// 422 `validation_failed` at `body.url` (`invalid_url`), as for `127.0.0.1` itself.
async fn refused_url(response: reqwest::Response) {
    let error = problem(response, 422, "validation_failed").await;
    assert!(
        error["detail"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["loc"] == json!(["body", "url"]) && e["type"] == "invalid_url"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_embedding_a_private_ipv4_are_refused_for_webhooks_and_mcp_servers() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let admin = app.caller_token("org:admin").await;
    for url in EMBEDDING_PRIVATE_IPV4 {
        refused_url(
            app.call_json(
                Method::POST,
                "/v1/webhooks",
                &admin,
                &json!({"url": url, "events": ["file.ready"]}),
            )
            .await,
        )
        .await;
        refused_url(
            app.call_json(
                Method::POST,
                "/v1/mcp-servers",
                &admin,
                &json!({"name": "tools", "url": url}),
            )
            .await,
        )
        .await;
    }
    // The same prefixes carrying a public address are accepted.
    let mcp = ok(
        app.call_json(
            Method::POST,
            "/v1/mcp-servers",
            &admin,
            &json!({"name": "tools", "url": "https://[64:ff9b::808:808]/mcp"}),
        )
        .await,
        201,
    )
    .await;
    ok(
        app.call_json(
            Method::POST,
            "/v1/webhooks",
            &admin,
            &json!({"url": "https://[2002:808:808::1]/h", "events": ["file.ready"]}),
        )
        .await,
        201,
    )
    .await;
    // And a change of URL is held to the same check.
    let path = format!("/v1/mcp-servers/{}", mcp["id"].as_str().unwrap());
    for url in EMBEDDING_PRIVATE_IPV4 {
        refused_url(
            app.call_json(Method::PATCH, &path, &admin, &json!({"url": url}))
                .await,
        )
        .await;
    }
}

/// A discovery document of the test's own on a real loopback listener, naming the issuer
/// the test sets and a real provider's JWKS.
struct Discovery {
    url: String,
    issuer: Arc<Mutex<String>>,
}

impl Discovery {
    async fn serve(jwks_uri: String) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let issuer = Arc::new(Mutex::new(url.clone()));
        let named = issuer.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut buffer = [0; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buffer[..n]),
                    }
                }
                let (status, body) = if head.starts_with(b"GET /.well-known/openid-configuration ")
                {
                    let issuer = named.lock().unwrap().clone();
                    (
                        "200 OK",
                        json!({"issuer": issuer, "jwks_uri": jwks_uri}).to_string(),
                    )
                } else {
                    ("404 Not Found", "{}".to_owned())
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        Self { url, issuer }
    }

    fn name(&self, issuer: &str) {
        *self.issuer.lock().unwrap() = issuer.to_owned();
    }
}

/// OpenID Connect Discovery 1.0, 4.3: a discovery document whose `issuer` is not the
/// configured issuer is refused, so a session token whose keys only it names is refused as
/// unverifiable (401 `invalid_token`); the same token is accepted once the document names
/// the configured issuer. The keys and the token come from a real provider
/// (`oauth2-mock-server`), the document from the test's own server in front of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_tokens_of_a_provider_whose_discovery_names_another_issuer_are_refused() {
    let provider = crate::oidc::Provider::start();
    let own: Value = reqwest::get(format!(
        "{}/.well-known/openid-configuration",
        provider.issuer
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let discovery = Discovery::serve(own["jwks_uri"].as_str().unwrap().to_owned()).await;
    let mut settings = provider.settings();
    settings.issuer = discovery.url.clone();
    let app = TestApp::spawn_with(Backend::Sqlite, move |s| s.auth.oidc = vec![settings]).await;
    let (org_id, _, _) = app.organization_with_client("files:read").await;
    let token = provider
        .mint(&[
            ("sub", "user-1"),
            ("org_id", &org_id),
            ("aud", "tessera-api"),
            ("iss", &discovery.url),
        ])
        .await;

    for wrong in [
        provider.issuer.clone(),
        format!("{}/", discovery.url),
        "https://login.example.com".to_owned(),
    ] {
        discovery.name(&wrong);
        let refused = problem(
            app.call(Method::GET, "/v1/organization", &token).await,
            401,
            "invalid_token",
        )
        .await;
        assert!(
            refused["detail"].as_str().unwrap().contains("issuer"),
            "{wrong}: {refused}"
        );
    }
    discovery.name(&discovery.url);
    let organization = ok(app.call(Method::GET, "/v1/organization", &token).await, 200).await;
    assert_eq!(organization["id"], org_id.as_str());
}

/// A wiretap in front of a real server: every byte a client sends through it is kept (and
/// passed on), so a test can tell which headers reached this origin.
struct Tap {
    base: String,
    sent: Arc<Mutex<Vec<u8>>>,
}

impl Tap {
    async fn in_front_of(upstream: &str) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let upstream = reqwest::Url::parse(upstream).unwrap();
        let target = format!(
            "{}:{}",
            upstream.host_str().unwrap(),
            upstream.port().unwrap()
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let sent = Arc::new(Mutex::new(Vec::new()));
        let kept = sent.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(&target).await else {
                    continue;
                };
                let kept = kept.clone();
                let (mut from_client, mut to_client) = client.into_split();
                let (mut from_server, mut to_server) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
                });
                tokio::spawn(async move {
                    let mut buffer = [0; 8192];
                    while let Ok(n) = from_client.read(&mut buffer).await {
                        if n == 0 {
                            break;
                        }
                        kept.lock().unwrap().extend_from_slice(&buffer[..n]);
                        if to_server.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = to_server.shutdown().await;
                });
            }
        });
        Self { base, sent }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// What was sent through since the last call, lowercased.
    fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.sent.lock().unwrap());
        String::from_utf8_lossy(&bytes).to_lowercase()
    }
}

/// The tools of a server, listed from it now (what sends its headers).
async fn list_tools(app: &TestApp, token: &str, server: &str) {
    let listed = ok(
        app.call(
            Method::GET,
            &format!("/v1/mcp-servers/{server}/tools?refresh=true"),
            token,
        )
        .await,
        200,
    )
    .await;
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "bearer"),
        "{listed}"
    );
}

/// A `PATCH` whose `url` goes to another origin (another port here) drops the sealed
/// headers, so the next tool listing sends no `Authorization` there; a URL of the same
/// origin keeps them; headers sent in the same request as a new origin go to it. Checked
/// by what reached a real MCP server (the official Python SDK's, `tests/mcp`) through two
/// wiretaps, each its own origin.
async fn mcp_header_secrets_do_not_follow_a_url_to_another_origin(backend: Backend) {
    let tools = crate::mcp::python_tool_server().await;
    let (first, second) = (
        Tap::in_front_of(&tools.url).await,
        Tap::in_front_of(&tools.url).await,
    );
    let app = TestApp::spawn_with(backend, |settings| {
        settings.rate_limit.enabled = false;
        // The server and the taps listen on loopback.
        settings.mcp.allow_private_targets = true;
    })
    .await;
    let admin = app.caller_token("org:admin").await;
    let server = ok(
        app.call_json(
            Method::POST,
            "/v1/mcp-servers",
            &admin,
            &json!({
                "name": "tools",
                "url": first.url("/mcp"),
                "headers": {"Authorization": "Bearer first-origin-secret"}
            }),
        )
        .await,
        201,
    )
    .await;
    let id = server["id"].as_str().unwrap();
    let path = format!("/v1/mcp-servers/{id}");
    list_tools(&app, &admin, id).await;
    assert!(
        first
            .take()
            .contains("authorization: bearer first-origin-secret")
    );

    // Only the URL changes, to another origin: the secret stays behind.
    let moved = ok(
        app.call_json(
            Method::PATCH,
            &path,
            &admin,
            &json!({"url": second.url("/mcp")}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(moved["headerNames"], json!([]), "{moved}");
    list_tools(&app, &admin, id).await;
    let sent = second.take();
    assert!(
        sent.contains("post /mcp "),
        "the listing went to the new origin"
    );
    assert!(!sent.contains("first-origin-secret"), "{sent}");
    assert!(!sent.contains("authorization:"), "{sent}");
    assert_eq!(first.take(), "", "nothing went to the old origin");
    let read = ok(app.call(Method::GET, &path, &admin).await, 200).await;
    assert_eq!(read["headerNames"], json!([]));

    // Headers given again, then a URL of the same origin: they are kept.
    ok(
        app.call_json(
            Method::PATCH,
            &path,
            &admin,
            &json!({"headers": {"Authorization": "Bearer second-origin-secret"}}),
        )
        .await,
        200,
    )
    .await;
    let same = ok(
        app.call_json(
            Method::PATCH,
            &path,
            &admin,
            &json!({"url": second.url("/mcp?via=tap")}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(same["headerNames"], json!(["Authorization"]), "{same}");
    list_tools(&app, &admin, id).await;
    assert!(
        second
            .take()
            .contains("authorization: bearer second-origin-secret")
    );

    // Another origin with headers in the same request: those, and only those, go there.
    let back = ok(
        app.call_json(
            Method::PATCH,
            &path,
            &admin,
            &json!({
                "url": first.url("/mcp"),
                "headers": {"Authorization": "Bearer given-with-the-url"}
            }),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(back["headerNames"], json!(["Authorization"]));
    list_tools(&app, &admin, id).await;
    let sent = first.take();
    assert!(
        sent.contains("authorization: bearer given-with-the-url"),
        "{sent}"
    );
    assert!(!sent.contains("second-origin-secret"), "{sent}");
    assert_eq!(second.take(), "");
}

tessera_store::on_both_databases!(
    an_admin_cannot_take_over_or_revoke_an_owner,
    mcp_header_secrets_do_not_follow_a_url_to_another_origin
);
