//! Issue 61, third hardening round, over HTTPS on the real application: no power gained
//! through a credential one may act on (rotating or revoking a client or API key needs its
//! every scope, like creating it).

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

tessera_store::on_both_databases!(an_admin_cannot_take_over_or_revoke_an_owner);
