//! Identity over HTTPS: the token endpoint, discovery documents, and the enforcement of the
//! access table on every documented operation.

use tessera_identity::{AccessClaims, TokenSigner};
use tessera_store::Backend;

use crate::support::{TestApp, problem};

async fn client_credentials_token_opens_the_api(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (org_id, client_id, secret) = app
        .organization_with_client("files:read particles:admin")
        .await;

    // Form-encoded (RFC 6749), as OAuth libraries send it.
    let response = app
        .client
        .post(app.url("/oauth/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", secret.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers().get("cache-control").unwrap(), "no-store");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        (body["token_type"].as_str(), body["expires_in"].as_u64()),
        (Some("bearer"), Some(3600))
    );
    assert_eq!(body["scope"], "files:read particles:admin");
    let token = body["access_token"].as_str().unwrap();

    let organization = app
        .call(reqwest::Method::GET, "/v1/organization", token)
        .await;
    assert_eq!(organization.status(), 200);
    let organization: serde_json::Value = organization.json().await.unwrap();
    assert_eq!(
        (organization["id"].as_str(), organization["plan"].as_str()),
        (Some(org_id.as_str()), Some("pro"))
    );

    // JSON on the /v1 address, narrowed scope.
    let json = app
        .client
        .post(app.url("/v1/oauth2/token"))
        .json(&serde_json::json!({"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": "particles:read"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json.status(), 200);
    assert_eq!(
        json.json::<serde_json::Value>().await.unwrap()["scope"],
        "particles:read"
    );

    // HTTP Basic client authentication.
    let basic = app
        .client
        .post(app.url("/oauth/token"))
        .basic_auth(&client_id, Some(&secret))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 200);
}

async fn oauth_errors_follow_rfc_6749(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, client_id, secret) = app.organization_with_client("files:read").await;
    let post = |form: Vec<(&'static str, String)>| {
        app.client.post(app.url("/oauth/token")).form(&form).send()
    };
    let grant = || ("grant_type", "client_credentials".to_owned());

    let cases = [
        (
            vec![
                grant(),
                ("client_id", client_id.clone()),
                ("client_secret", "tss_wrong".to_owned()),
            ],
            401,
            "invalid_client",
        ),
        (
            vec![
                grant(),
                (
                    "client_id",
                    "cli_00000000000000000000000000000000".to_owned(),
                ),
                ("client_secret", secret.clone()),
            ],
            401,
            "invalid_client",
        ),
        (vec![grant()], 401, "invalid_client"),
        (
            vec![
                ("grant_type", "password".to_owned()),
                ("client_id", client_id.clone()),
                ("client_secret", secret.clone()),
            ],
            400,
            "unsupported_grant_type",
        ),
        (
            vec![
                ("client_id", client_id.clone()),
                ("client_secret", secret.clone()),
            ],
            400,
            "invalid_request",
        ),
        (
            vec![
                grant(),
                ("client_id", client_id.clone()),
                ("client_secret", secret.clone()),
                ("scope", "files:write".to_owned()),
            ],
            400,
            "invalid_scope",
        ),
        (
            vec![
                grant(),
                ("client_id", client_id.clone()),
                ("client_secret", secret.clone()),
                ("scope", "nonsense".to_owned()),
            ],
            400,
            "invalid_scope",
        ),
    ];
    for (form, status, error) in cases {
        let response = post(form.clone()).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{form:?}");
        if status == 401 {
            assert!(response.headers().get("www-authenticate").is_some());
        }
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], error, "{form:?}: {body}");
        assert!(body["error_description"].is_string());
        assert_eq!(body["status"], status);
    }

    let wrong_type = app
        .client
        .post(app.url("/oauth/token"))
        .header("content-type", "text/plain")
        .body("hi")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), 400);
    assert_eq!(
        wrong_type.json::<serde_json::Value>().await.unwrap()["error"],
        "invalid_request"
    );
}

tessera_store::on_both_databases!(
    client_credentials_token_opens_the_api,
    oauth_errors_follow_rfc_6749
);

/// Claims for `client_id` of `org_id` valid now, signed by the app's own key.
fn signed(
    app: &TestApp,
    org_id: &str,
    client_id: &str,
    adjust: impl FnOnce(&mut AccessClaims),
) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut claims = AccessClaims {
        iss: app.state.issuer.clone(),
        sub: client_id.to_owned(),
        aud: "tessera-api".into(),
        org: org_id.to_owned(),
        scope: "files:read".into(),
        secret_generation: 1,
        iat: now,
        nbf: now,
        exp: now + 600,
        jti: "test".into(),
    };
    adjust(&mut claims);
    app.state.keys.sign(&claims).unwrap()
}

/// Walks every operation of the OpenAPI document: each non-public one refuses a missing,
/// malformed, forged, expired, foreign-issuer, rotated or revoked token with 401, and each
/// scoped one refuses a valid token without the scope with 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_protected_operation_refuses_bad_tokens() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (org_id, client_id, _) = app.organization_with_client("files:read").await;
    let (revoked_org, revoked_client, _) = app.organization_with_client("files:read").await;
    app.state
        .identity
        .revoke(
            &revoked_org.parse().unwrap(),
            &revoked_client.parse().unwrap(),
            &tessera_kernel::Actor::System,
        )
        .await
        .unwrap();

    let other_keys = tempfile::tempdir().unwrap();
    let stranger = tessera_auth::JwtKeys::load_or_create(
        other_keys.path(),
        tessera_auth::TokenRules {
            issuer: app.state.issuer.clone(),
            audience: "tessera-api".into(),
            leeway_secs: 30,
        },
    )
    .unwrap();
    let valid = signed(&app, &org_id, &client_id, |_| {});
    let forged = {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let claims = AccessClaims {
            iss: app.state.issuer.clone(),
            sub: client_id.clone(),
            aud: "tessera-api".into(),
            org: org_id.clone(),
            scope: "org:admin".into(),
            secret_generation: 1,
            iat: now,
            nbf: now,
            exp: now + 600,
            jti: "x".into(),
        };
        stranger.sign(&claims).unwrap()
    };
    let bad_tokens: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("malformed", Some("not-a-jwt".into())),
        ("forged", Some(forged)),
        (
            "expired",
            Some(signed(&app, &org_id, &client_id, |c| c.exp -= 3600)),
        ),
        (
            "foreign issuer",
            Some(signed(&app, &org_id, &client_id, |c| {
                c.iss = "https://evil.example".into()
            })),
        ),
        (
            "wrong audience",
            Some(signed(&app, &org_id, &client_id, |c| {
                c.aud = "other".into()
            })),
        ),
        (
            "old secret generation",
            Some(signed(&app, &org_id, &client_id, |c| {
                c.secret_generation = 0
            })),
        ),
        (
            "revoked client",
            Some(signed(&app, &revoked_org, &revoked_client, |_| {})),
        ),
        (
            "organization swapped",
            Some(signed(&app, &revoked_org, &client_id, |_| {})),
        ),
        ("unknown API key", Some(format!("tsk_{}", "A".repeat(43)))),
    ];

    let document = serde_json::to_value(tessera_api::startup::openapi()).unwrap();
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let security = operation["security"].as_array().unwrap();
            if security.is_empty() {
                continue;
            }
            let concrete = path
                .split('/')
                .map(|s| if s.starts_with('{') { "x0" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            let method =
                reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap();
            for (label, token) in &bad_tokens {
                let mut request = app.client.request(method.clone(), app.url(&concrete));
                if let Some(token) = token {
                    request = request.bearer_auth(token);
                }
                let response = request.send().await.unwrap();
                assert!(
                    response.headers().get("www-authenticate").is_some(),
                    "{method} {path} ({label})"
                );
                let code = if token.is_none() {
                    "missing_token"
                } else {
                    "invalid_token"
                };
                refused(response, path, 401, code).await;
            }
            let required: Vec<&str> = security[0]["bearer"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|s| s.as_str())
                .collect();
            if !required.is_empty() && !required.contains(&"files:read") {
                let response = app
                    .client
                    .request(method.clone(), app.url(&concrete))
                    .bearer_auth(&valid)
                    .send()
                    .await
                    .unwrap();
                refused(response, path, 403, "insufficient_scope").await;
            }
            checked += 1;
        }
    }
    assert!(checked >= 1, "at least one protected operation was walked");
}

/// A refusal in the dialect of `path`: a problem on `/v1`, OpenAI's error under
/// `/openai/` (whose 401 code is always OpenAI's `invalid_api_key`), Anthropic's under
/// `/anthropic/` (its error types, no codes).
async fn refused(response: reqwest::Response, path: &str, status: u16, code: &str) {
    if path.starts_with("/anthropic/") {
        assert_eq!(response.status().as_u16(), status, "{path}");
        let body: serde_json::Value = response.json().await.unwrap();
        let expected = if status == 401 {
            "authentication_error"
        } else {
            "permission_error"
        };
        assert_eq!(body["type"], "error", "{path}: {body}");
        assert_eq!(body["error"]["type"], expected, "{path}: {body}");
        return;
    }
    if !path.starts_with("/openai/") {
        problem(response, status, code).await;
        return;
    }
    assert_eq!(response.status().as_u16(), status, "{path}");
    let body: serde_json::Value = response.json().await.unwrap();
    let expected = if status == 401 {
        "invalid_api_key"
    } else {
        code
    };
    assert_eq!(body["error"]["code"], expected, "{path}: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_documents_describe_the_issuer_and_its_keys() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let metadata: serde_json::Value = app
        .get("/.well-known/openid-configuration")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["issuer"], app.state.issuer);
    assert_eq!(
        metadata["token_endpoint"],
        format!("{}/oauth/token", app.state.issuer)
    );
    assert!(
        metadata["scopes_supported"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "chats:invoke")
    );
    let jwks: serde_json::Value = app
        .get("/.well-known/jwks.json")
        .await
        .json()
        .await
        .unwrap();
    let (_, client_id, secret) = app.organization_with_client("files:read").await;
    let token = app.token(&client_id, &secret).await;
    let header: serde_json::Value = {
        use base64::Engine;
        let encoded = token.split('.').next().unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(encoded)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        (header["alg"].as_str(), header["typ"].as_str()),
        (Some("EdDSA"), Some("at+jwt"))
    );
    assert!(
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["kid"] == header["kid"] && k["crv"] == "Ed25519")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_or_revoking_a_client_ends_its_tokens() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (org_id, client_id, secret) = app.organization_with_client("files:read").await;
    let token = app.token(&client_id, &secret).await;
    let call = |token: String| {
        app.client
            .get(app.url("/v1/organization"))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(call(token.clone()).await.unwrap().status(), 200);

    let (org, id) = (org_id.parse().unwrap(), client_id.parse().unwrap());
    let new_secret = app
        .state
        .identity
        .rotate_secret(&org, &id, &tessera_kernel::Actor::System)
        .await
        .unwrap();
    problem(call(token).await.unwrap(), 401, "invalid_token").await;
    let fresh = app.token(&client_id, new_secret.expose()).await;
    assert_eq!(call(fresh.clone()).await.unwrap().status(), 200);
    let old_secret = app
        .client
        .post(app.url("/oauth/token"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("client_id", &client_id),
            ("client_secret", &secret),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(old_secret.status(), 401);

    app.state
        .identity
        .revoke(&org, &id, &tessera_kernel::Actor::System)
        .await
        .unwrap();
    problem(call(fresh).await.unwrap(), 401, "invalid_token").await;
}
