//! Request budgets over HTTPS: per principal, per organization, per peer for token requests,
//! and shared by two replicas through Redis.

use tessera_store::Backend;

use crate::support::{TestApp, problem};

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_over_its_budget_gets_429_with_retry_after() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.rate_limit.principal_per_minute = 3).await;
    let (_, client_id, secret) = app.organization_with_client("files:read").await;
    let token = app.token(&client_id, &secret).await;
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let response = app
            .call(reqwest::Method::GET, "/v1/organization", &token)
            .await;
        assert_eq!(response.status(), 200);
        assert_eq!(header(&response, "ratelimit-limit").as_deref(), Some("3"));
        remaining.push(header(&response, "ratelimit-remaining").unwrap());
        assert!(
            header(&response, "ratelimit-reset")
                .unwrap()
                .parse::<u64>()
                .unwrap()
                <= 60
        );
    }
    assert_eq!(remaining, ["2", "1", "0"]);
    let refused = app
        .call(reqwest::Method::GET, "/v1/organization", &token)
        .await;
    let retry_after: u64 = header(&refused, "retry-after").unwrap().parse().unwrap();
    assert!(
        (19..=20).contains(&retry_after),
        "one request per 20 s: {retry_after}"
    );
    assert_eq!(
        header(&refused, "ratelimit-remaining").as_deref(),
        Some("0")
    );
    problem(refused, 429, "rate_limited").await;

    // Health checks are never limited.
    let health = app.get("/v1/health").await;
    assert_eq!(
        (health.status().as_u16(), header(&health, "ratelimit-limit")),
        (200, None)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_one_organization_share_its_budget() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.rate_limit.organization_per_minute = 4;
        s.rate_limit.principal_per_minute = 100;
    })
    .await;
    let (org_id, first_id, first_secret) = app.organization_with_client("files:read").await;
    let (second, second_secret) = {
        use tessera_identity::{ClientName, NewClient};
        let new = NewClient {
            organization_id: org_id.parse().unwrap(),
            name: ClientName::parse("second").unwrap(),
            scopes: tessera_kernel::ScopeSet::parse_list("files:read").unwrap(),
        };
        let (client, secret) = app
            .state
            .identity
            .create_client(new, &tessera_kernel::Actor::System)
            .await
            .unwrap();
        (client.id.to_string(), secret.expose().to_owned())
    };
    let tokens = [
        app.token(&first_id, &first_secret).await,
        app.token(&second, &second_secret).await,
    ];
    let mut statuses = Vec::new();
    for i in 0..5 {
        let response = app
            .call(reqwest::Method::GET, "/v1/organization", &tokens[i % 2])
            .await;
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 200, 429]);
    // Another organization is unaffected.
    let (_, other_id, other_secret) = app.organization_with_client("files:read").await;
    let other = app.token(&other_id, &other_secret).await;
    assert_eq!(
        app.call(reqwest::Method::GET, "/v1/organization", &other)
            .await
            .status(),
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_requests_are_limited_per_peer() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.rate_limit.anonymous_per_minute = 2).await;
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", "cli_00000000000000000000000000000000"),
        ("client_secret", "guess"),
    ];
    for _ in 0..2 {
        assert_eq!(
            app.client
                .post(app.url("/oauth/token"))
                .form(&form)
                .send()
                .await
                .unwrap()
                .status(),
            401
        );
    }
    let refused = app
        .client
        .post(app.url("/oauth/token"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert!(header(&refused, "retry-after").is_some());
    problem(refused, 429, "rate_limited").await;
}

/// Two replicas (one database, one key set) with a shared Redis draw from one budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_budgets_through_redis() {
    let redis = std::env::var("TESSERA_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let limit = |s: &mut tessera_api::config::Settings| {
        s.redis_url = Some(redis.clone());
        s.rate_limit.principal_per_minute = 3;
    };
    let first = TestApp::spawn_with(Backend::Postgres, limit).await;
    let database_url = first.settings.database_url.clone();
    let keys_dir = first.settings.keys_dir();
    let issuer = first.state.issuer.clone();
    let second = TestApp::spawn_with(Backend::Sqlite, |s| {
        limit(s);
        s.database_url = database_url;
        s.auth.keys_dir = Some(keys_dir);
        s.auth.issuer = Some(issuer);
    })
    .await;
    let (_, client_id, secret) = first.organization_with_client("files:read").await;
    let token = first.token(&client_id, &secret).await;
    let call = |app: &TestApp| {
        app.client
            .get(app.url("/v1/organization"))
            .bearer_auth(&token)
            .send()
    };
    assert_eq!(call(&first).await.unwrap().status(), 200);
    assert_eq!(call(&second).await.unwrap().status(), 200);
    assert_eq!(call(&first).await.unwrap().status(), 200);
    problem(call(&second).await.unwrap(), 429, "rate_limited").await;
    problem(call(&first).await.unwrap(), 429, "rate_limited").await;
}

/// Redis unreachable at start-up does not stop a replica: it serves with limits unenforced,
/// and enforces them once Redis answers (here, a Redis server started afterwards).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_starts_without_redis_and_limits_once_it_answers() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let app = TestApp::spawn_with(Backend::Sqlite, |s| {
        s.redis_url = Some(format!("redis://127.0.0.1:{port}"));
        s.rate_limit.principal_per_minute = 2;
    })
    .await;
    let (_, client_id, secret) = app.organization_with_client("files:read").await;
    let token = app.token(&client_id, &secret).await;
    let call = || {
        app.client
            .get(app.url("/v1/organization"))
            .bearer_auth(&token)
            .send()
    };
    for _ in 0..3 {
        assert_eq!(call().await.unwrap().status(), 200, "served without Redis");
    }
    let _redis = crate::binary::KillOnDrop(
        std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed (as on the CI machine)"),
    );
    // Reconnection is retried at each request; Redis needs a moment to listen.
    let mut statuses = Vec::new();
    for _ in 0..50 {
        let status = call().await.unwrap().status().as_u16();
        statuses.push(status);
        if status == 429 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        statuses.last(),
        Some(&429),
        "limits never enforced after Redis came up: {statuses:?}"
    );
}
