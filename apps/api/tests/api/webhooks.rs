//! Webhooks through the real HTTP stack: registration rules (scope, validation, tenant
//! scoping, limits), and deliveries end to end on SQLite and PostgreSQL: real files processed
//! by the real workers emit `file.ready`, `file.failed` and `dataset.updated`, which a real
//! HTTP receiver on loopback gets, signed, with a retry after it first answers 500.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};
use tessera_store::Backend;
use tessera_webhooks::{WebhookSecret, verify};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::mpsc,
};

use crate::{
    processing::{knowledge_app_with, ready, settled, upload},
    support::{TestApp, ok, problem},
};

/// One request a receiver got: lower-case header names, and the body.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: String,
}

/// The next HTTP/1.1 request on `socket` (None once the client closes it).
pub(crate) async fn read_request(socket: &mut TcpStream) -> Option<Received> {
    let mut raw = Vec::new();
    let mut buffer = [0_u8; 8192];
    loop {
        let read = socket.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        raw.extend_from_slice(&buffer[..read]);
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_string();
        let headers: HashMap<String, String> = head
            .lines()
            .skip(1)
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if raw.len() >= end + 4 + length {
            let body = String::from_utf8_lossy(&raw[end + 4..end + 4 + length]).to_string();
            return Some(Received { headers, body });
        }
    }
}

/// A receiver on loopback that answers its first request 500 and every later one 204, and
/// reports each request it reads.
async fn receiver() -> (String, mpsc::UnboundedReceiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks/tessera", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    let seen = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (tx, seen) = (tx.clone(), seen.clone());
            tokio::spawn(async move {
                while let Some(request) = read_request(&mut socket).await {
                    let status = if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                        "500 Internal Server Error"
                    } else {
                        "204 No Content"
                    };
                    let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
                    if socket.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = tx.send(request);
                }
            });
        }
    });
    (url, rx)
}

const SCOPES: &str = "org:admin files:read files:write datasets:read datasets:write";

async fn signed_events_are_delivered_and_retried(backend: Backend) {
    let (url, mut requests) = receiver().await;
    let app = knowledge_app_with(backend, |settings| {
        settings.webhooks.allow_private_targets = true;
        settings.webhooks.first_retry_secs = 1;
        settings.webhooks.poll_millis = 100;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    let response = app
        .call_json(
            Method::POST,
            "/v1/webhooks",
            &token,
            &json!({
                "url": url,
                "events": ["file.ready", "file.failed", "dataset.updated"],
                "description": "ingestion monitor"
            }),
        )
        .await;
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(response.headers()["cache-control"], "no-store");
    let webhook = ok(response, 201).await;
    let id = webhook["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/v1/webhooks/{id}"));
    let secret = WebhookSecret::stored(webhook["secret"].as_str().unwrap());
    assert!(secret.expose().starts_with("whsec_"));

    // A document that processes, one that cannot, and a dataset change.
    let good = upload(
        &app,
        &token,
        "notes.txt",
        b"Webhooks tell receivers when files are ready.".to_vec(),
    )
    .await;
    let good = ready(&app, &token, &good).await;
    let bad = upload(
        &app,
        &token,
        "broken.pdf",
        b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage".to_vec(),
    )
    .await;
    let bad = settled(&app, &token, bad["id"].as_str().unwrap()).await;
    assert_eq!(bad["status"], "failed", "{bad}");
    let dataset = ok(
        app.call_json(
            Method::POST,
            "/v1/datasets",
            &token,
            &json!({"name": "Docs"}),
        )
        .await,
        201,
    )
    .await;
    ok(
        app.call_json(
            Method::POST,
            &format!("/v1/files/{}/associations", good["id"].as_str().unwrap()),
            &token,
            &json!({"datasetId": dataset["id"]}),
        )
        .await,
        201,
    )
    .await;

    // Three events, one of them sent twice (the receiver's first answer is 500).
    let mut got: Vec<(Received, Value)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < 4 {
        let left = deadline.saturating_duration_since(Instant::now());
        let request = tokio::time::timeout(left, requests.recv())
            .await
            .unwrap_or_else(|_| panic!("only {} deliveries arrived: {got:?}", got.len()))
            .unwrap();
        let body: Value = serde_json::from_str(&request.body).unwrap();
        got.push((request, body));
    }
    for (request, body) in &got {
        let signature = &request.headers["tessera-signature"];
        assert!(
            verify(
                &secret,
                signature,
                request.body.as_bytes(),
                chrono::Utc::now(),
                300
            ),
            "bad signature {signature} on {}",
            request.body
        );
        assert!(!verify(
            &WebhookSecret::stored("whsec_other"),
            signature,
            request.body.as_bytes(),
            chrono::Utc::now(),
            300
        ));
        assert_eq!(
            request.headers["tessera-event"],
            body["type"].as_str().unwrap()
        );
        assert_eq!(
            request.headers["tessera-event-id"],
            body["id"].as_str().unwrap()
        );
        assert_eq!(request.headers["content-type"], "application/json");
        assert!(request.headers["tessera-delivery"].starts_with("whd_"));
        assert_eq!(body["organizationId"], webhook["organizationId"]);
    }
    let first = &got[0];
    let retried: Vec<_> = got[1..]
        .iter()
        .filter(|(request, _)| {
            request.headers["tessera-event-id"] == first.0.headers["tessera-event-id"]
        })
        .collect();
    assert_eq!(retried.len(), 1, "the 500 answer is retried once: {got:?}");
    assert_eq!(
        retried[0].0.body, first.0.body,
        "a retry sends the same body"
    );
    assert_eq!(
        retried[0].0.headers["tessera-delivery"],
        first.0.headers["tessera-delivery"]
    );
    let data_of = |kind: &str| {
        got.iter()
            .find(|(_, body)| body["type"] == kind)
            .map(|(_, body)| body["data"].clone())
            .unwrap_or_else(|| panic!("no {kind} in {got:?}"))
    };
    assert_eq!(
        data_of("file.ready"),
        json!({"fileId": good["id"], "name": "notes.txt", "chunkCount": good["chunkCount"]})
    );
    let failed = data_of("file.failed");
    assert_eq!(
        (&failed["fileId"], &failed["name"]),
        (&bad["id"], &json!("broken.pdf"))
    );
    assert_eq!(failed["error"], bad["error"]);
    assert_eq!(
        data_of("dataset.updated"),
        json!({"datasetId": dataset["id"], "version": 2, "change": "file_added", "fileId": good["id"]})
    );

    // The delivery log agrees: three deliveries, all delivered, one after two attempts.
    let deliveries = loop {
        let page = ok(
            app.call(
                Method::GET,
                &format!("/v1/webhooks/{id}/deliveries"),
                &token,
            )
            .await,
            200,
        )
        .await;
        let items = page["items"].as_array().unwrap().clone();
        if items.len() == 3 && items.iter().all(|d| d["status"] == "delivered") {
            break items;
        }
        assert!(Instant::now() < deadline, "deliveries not settled: {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut attempts: Vec<u64> = deliveries
        .iter()
        .map(|d| d["attempts"].as_u64().unwrap())
        .collect();
    attempts.sort_unstable();
    assert_eq!(attempts, [1, 1, 2]);
    for delivery in &deliveries {
        assert_eq!(delivery["lastStatusCode"], 204, "{delivery}");
        assert_eq!(delivery["webhookId"], json!(id));
        assert!(delivery["deliveredAt"].is_string(), "{delivery}");
        assert_eq!(delivery["nextAttemptAt"], Value::Null, "{delivery}");
        assert_eq!(delivery["payload"]["id"], delivery["eventId"], "{delivery}");
    }
    app.stop().await;
}

tessera_store::on_both_databases!(signed_events_are_delivered_and_retried);

#[tokio::test]
async fn registration_is_validated_scoped_and_tenant_isolated() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let admin = app.caller_token("org:admin").await;
    let create = |url: &str, events: Value| json!({"url": url, "events": events});

    // Scope: managing webhooks needs org:admin.
    let reader = app.caller_token("files:read files:write").await;
    problem(
        app.call_json(
            Method::POST,
            "/v1/webhooks",
            &reader,
            &create("https://example.com/h", json!(["file.ready"])),
        )
        .await,
        403,
        "insufficient_scope",
    )
    .await;
    problem(
        app.call(Method::GET, "/v1/webhooks", &reader).await,
        403,
        "insufficient_scope",
    )
    .await;

    // Validation, each error at its location.
    let cases = [
        (
            create("ftp://example.com/h", json!(["file.ready"])),
            "url",
            "invalid_url",
        ),
        (
            create("http://127.0.0.1:9/h", json!(["file.ready"])),
            "url",
            "invalid_url",
        ),
        (
            create("https://user:pw@example.com/h", json!(["file.ready"])),
            "url",
            "invalid_url",
        ),
        (
            create("https://example.com/h", json!(["file.deleted"])),
            "events.0",
            "invalid_event",
        ),
        (create("https://example.com/h", json!([])), "events", ""),
        (json!({"url": "https://example.com/h"}), "events", ""),
        (
            json!({"url": "https://example.com/h", "events": ["file.ready"], "secret": "mine"}),
            "",
            "",
        ),
    ];
    for (body, loc, kind) in cases {
        let error = problem(
            app.call_json(Method::POST, "/v1/webhooks", &admin, &body)
                .await,
            422,
            "validation_failed",
        )
        .await;
        let errors = error["detail"].as_array().unwrap();
        let wanted: Vec<&str> = std::iter::once("body")
            .chain(loc.split('.').filter(|s| !s.is_empty()))
            .collect();
        assert!(
            errors.iter().any(|e| {
                let at: Vec<String> = e["loc"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.to_string().trim_matches('"').to_owned())
                    .collect();
                at.iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .starts_with(&wanted)
                    && (kind.is_empty() || e["type"] == kind)
            }),
            "{body} → {error}"
        );
    }

    // Create, read, list: the secret shows only once.
    let created = ok(
        app.call_json(
            Method::POST,
            "/v1/webhooks",
            &admin,
            &create(
                "https://hooks.example.com/t",
                json!(["dataset.updated", "file.ready"]),
            ),
        )
        .await,
        201,
    )
    .await;
    let id = created["id"].as_str().unwrap();
    assert_eq!(created["events"], json!(["file.ready", "dataset.updated"]));
    assert_eq!(created["description"], Value::Null);
    let got = ok(
        app.call(Method::GET, &format!("/v1/webhooks/{id}"), &admin)
            .await,
        200,
    )
    .await;
    assert_eq!(got.get("secret"), None, "{got}");
    assert_eq!(got["url"], "https://hooks.example.com/t");
    let list = ok(
        app.call(Method::GET, "/v1/webhooks?limit=1", &admin).await,
        200,
    )
    .await;
    assert_eq!(
        (list["totalCount"].as_u64(), list["hasMore"].as_bool()),
        (Some(1), Some(false))
    );
    assert_eq!(list["items"][0]["id"], created["id"]);
    assert_eq!(list["items"][0].get("secret"), None);
    let deliveries = ok(
        app.call(
            Method::GET,
            &format!("/v1/webhooks/{id}/deliveries"),
            &admin,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(deliveries["items"], json!([]));
    problem(
        app.call(Method::GET, "/v1/webhooks?cursor=forged", &admin)
            .await,
        422,
        "validation_failed",
    )
    .await;

    // Another organization sees none of it.
    let stranger = app.caller_token("org:admin").await;
    for (method, path) in [
        (Method::GET, format!("/v1/webhooks/{id}")),
        (Method::GET, format!("/v1/webhooks/{id}/deliveries")),
        (Method::DELETE, format!("/v1/webhooks/{id}")),
        (Method::GET, "/v1/webhooks/not-an-id".to_owned()),
    ] {
        problem(app.call(method, &path, &stranger).await, 404, "not_found").await;
    }
    let theirs = ok(app.call(Method::GET, "/v1/webhooks", &stranger).await, 200).await;
    assert_eq!(theirs["totalCount"], 0);

    // At most 20 per organization.
    for n in 1..20 {
        ok(
            app.call_json(
                Method::POST,
                "/v1/webhooks",
                &admin,
                &create(
                    &format!("https://hooks.example.com/{n}"),
                    json!(["file.ready"]),
                ),
            )
            .await,
            201,
        )
        .await;
    }
    problem(
        app.call_json(
            Method::POST,
            "/v1/webhooks",
            &admin,
            &create("https://hooks.example.com/21", json!(["file.ready"])),
        )
        .await,
        409,
        "webhook_limit_reached",
    )
    .await;

    // Delete.
    ok(
        app.call(Method::DELETE, &format!("/v1/webhooks/{id}"), &admin)
            .await,
        204,
    )
    .await;
    problem(
        app.call(Method::GET, &format!("/v1/webhooks/{id}"), &admin)
            .await,
        404,
        "not_found",
    )
    .await;
    app.stop().await;
}

/// Scale-out: an API replica without dispatchers records the event; a separate
/// `tessera-api worker` process on the same database delivers it (and retries it).
#[tokio::test]
async fn a_worker_process_delivers_what_an_api_replica_recorded() {
    let (url, mut requests) = receiver().await;
    let app = TestApp::spawn_with(Backend::Postgres, |settings| {
        settings.webhooks.dispatchers = 0;
        settings.webhooks.allow_private_targets = true;
        settings.rate_limit.enabled = false;
    })
    .await;
    let token = app.caller_token(SCOPES).await;
    ok(
        app.call_json(
            Method::POST,
            "/v1/webhooks",
            &token,
            &json!({"url": url, "events": ["file.ready"]}),
        )
        .await,
        201,
    )
    .await;
    // Images are ready at once: the upload records `file.ready`.
    let image = ok(
        crate::files::upload(&app, &token, "logo.png", b"\x89PNG\r\n\x1a\n....".to_vec()).await,
        201,
    )
    .await;
    assert!(
        tokio::time::timeout(Duration::from_millis(800), requests.recv())
            .await
            .is_err(),
        "the API replica has no dispatcher"
    );

    let Some(tessera_store::DatabaseUrl::Postgres(database_url)) =
        app.settings.database_url.clone()
    else {
        panic!("a PostgreSQL app");
    };
    let mut worker = crate::binary::spawn_worker(
        &app.settings.data_dir,
        &[
            ("DATABASE_URL", database_url.as_str()),
            // Never contacted: without an embedding model this worker only sends webhooks.
            ("TESSERA_KNOWLEDGE__QDRANT_URL", "http://127.0.0.1:1"),
            ("TESSERA_KNOWLEDGE__WORKERS", "0"),
            ("TESSERA_WEBHOOKS__DISPATCHERS", "1"),
            ("TESSERA_WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true"),
            ("TESSERA_WEBHOOKS__FIRST_RETRY_SECS", "1"),
            ("TESSERA_WEBHOOKS__POLL_MILLIS", "100"),
        ],
    );
    // The receiver fails the first attempt; the worker retries.
    let mut deliveries = Vec::new();
    while deliveries.len() < 2 {
        let delivery = tokio::time::timeout(Duration::from_secs(60), requests.recv())
            .await
            .expect("the worker delivers within a minute")
            .unwrap();
        deliveries.push(delivery);
    }
    let (first, second) = (&deliveries[0], &deliveries[1]);
    for delivery in [first, second] {
        assert_eq!(delivery.headers["tessera-event"], "file.ready");
        let body: Value = serde_json::from_str(&delivery.body).unwrap();
        assert_eq!(body["data"]["fileId"], image["id"], "{body}");
    }
    assert_eq!(
        first.headers["tessera-event-id"],
        second.headers["tessera-event-id"]
    );
    assert_eq!(crate::binary::terminate(&mut worker), 0);
    app.stop().await;
}
