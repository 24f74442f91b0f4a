//! Session tokens from a real OpenID Connect provider (npm `oauth2-mock-server`, started
//! here): discovery, JWKS, signature, audience, expiry, and key rotation.

use std::{
    io::{BufRead, BufReader, Write},
    process::{ChildStdin, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use tessera_api::config::OidcSettings;
use tessera_store::Backend;

use crate::{
    binary::KillOnDrop,
    support::{TestApp, problem},
};

pub(crate) struct Provider {
    /// The `node` process, killed with the provider.
    _server: KillOnDrop,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    pub(crate) issuer: String,
}

impl Provider {
    pub(crate) fn start() -> Self {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/oidc");
        assert!(
            dir.join("node_modules/oauth2-mock-server").exists(),
            "run `npm ci --prefix tests/oidc` (just test does)"
        );
        let mut child = Command::new("node")
            .arg("server.mjs")
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        let first: serde_json::Value = serde_json::from_str(
            &lines
                .recv_timeout(Duration::from_secs(30))
                .expect("the provider starts"),
        )
        .unwrap();
        let issuer = first["issuer"].as_str().unwrap().to_owned();
        Self {
            _server: KillOnDrop(child),
            stdin,
            lines,
            issuer,
        }
    }

    pub(crate) fn settings(&self) -> OidcSettings {
        OidcSettings {
            issuer: self.issuer.clone(),
            audience: "tessera-api".into(),
            organization_claim: "org_id".into(),
            scopes_claim: "scope".into(),
            jwks_refresh_secs: 0,
        }
    }

    /// Mints a session token with the given claims.
    pub(crate) async fn mint(&self, claims: &[(&str, &str)]) -> String {
        let mut form = vec![("grant_type", "client_credentials")];
        form.extend_from_slice(claims);
        let response = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json::<serde_json::Value>().await.unwrap()["access_token"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Adds a signing key; returns its kid.
    fn rotate(&mut self) -> String {
        writeln!(self.stdin, "rotate").unwrap();
        let line = self.lines.recv_timeout(Duration::from_secs(10)).unwrap();
        serde_json::from_str::<serde_json::Value>(&line).unwrap()["rotated"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

fn kid_of(token: &str) -> String {
    use base64::Engine;
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.split('.').next().unwrap())
        .unwrap();
    serde_json::from_slice::<serde_json::Value>(&header).unwrap()["kid"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn spawn_with(provider: &Provider) -> TestApp {
    let settings = provider.settings();
    TestApp::spawn_with(Backend::Sqlite, move |s| s.auth.oidc = vec![settings]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_token_acts_for_its_user_and_organization() {
    let provider = Provider::start();
    let app = spawn_with(&provider).await;
    let (org_id, _, _) = app.organization_with_client("files:read").await;
    let token = provider
        .mint(&[
            ("sub", "user-42"),
            ("org_id", &org_id),
            ("scope", "files:read chats:invoke"),
            ("aud", "tessera-api"),
        ])
        .await;
    let response = app
        .call(reqwest::Method::GET, "/v1/organization", &token)
        .await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("ratelimit-remaining").is_some());
    assert_eq!(
        response.json::<serde_json::Value>().await.unwrap()["id"],
        org_id.as_str()
    );

    // The principal is the user.
    let principal = app.state.identity.authenticate(&token).await.unwrap();
    assert_eq!(
        (principal.subject.as_str(), principal.kind),
        ("user-42", tessera_kernel::PrincipalKind::User)
    );
    assert!(principal.can(&"chats:invoke".parse().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_tokens_are_checked_like_our_own() {
    let provider = Provider::start();
    let unconfigured = Provider::start();
    let app = spawn_with(&provider).await;
    let (org_id, _, _) = app.organization_with_client("files:read").await;
    let base = [
        ("sub", "user-1"),
        ("org_id", org_id.as_str()),
        ("aud", "tessera-api"),
    ];
    let cases = [
        (
            "wrong audience",
            provider
                .mint(&[
                    ("sub", "user-1"),
                    ("org_id", &org_id),
                    ("aud", "someone-else"),
                ])
                .await,
        ),
        (
            "expired",
            provider
                .mint(&[base.as_slice(), &[("exp_offset", "-3600")]].concat())
                .await,
        ),
        (
            "no organization claim",
            provider
                .mint(&[("sub", "user-1"), ("aud", "tessera-api")])
                .await,
        ),
        ("unconfigured provider", unconfigured.mint(&base).await),
        (
            "organization unknown here",
            provider
                .mint(&[
                    ("sub", "user-1"),
                    ("org_id", "org-the-provider-invented"),
                    ("aud", "tessera-api"),
                ])
                .await,
        ),
    ];
    for (label, token) in cases {
        let response = app
            .call(reqwest::Method::GET, "/v1/organization", &token)
            .await;
        assert_eq!(response.status(), 401, "{label}");
        problem(response, 401, "invalid_token").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_fetched_again_when_the_provider_rotates() {
    let mut provider = Provider::start();
    let app = spawn_with(&provider).await;
    let (org_id, _, _) = app.organization_with_client("files:read").await;
    let claims = [
        ("sub", "user-1"),
        ("org_id", org_id.as_str()),
        ("aud", "tessera-api"),
    ];
    let first = provider.mint(&claims).await;
    assert_eq!(
        app.call(reqwest::Method::GET, "/v1/organization", &first)
            .await
            .status(),
        200
    );

    let new_kid = provider.rotate();
    // The provider signs round-robin; mint until a token uses the new key.
    let mut rotated = None;
    for _ in 0..4 {
        let token = provider.mint(&claims).await;
        if kid_of(&token) == new_kid {
            rotated = Some(token);
            break;
        }
    }
    let rotated = rotated.expect("a token signed with the new key");
    assert_eq!(
        app.call(reqwest::Method::GET, "/v1/organization", &rotated)
            .await
            .status(),
        200
    );
}
