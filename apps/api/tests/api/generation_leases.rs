//! Two processes on one database (replicas): a process that starts while another one is
//! generating leaves that generation alone, and once the generating process is killed
//! (SIGKILL, mid-answer) the survivor marks its chat `error` ("interrupted") when the dead
//! process's generation lease lapses.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::{
    binary::{Running, access_token, announced, start_with, terminate},
    chats::{LOCAL, model_dir},
    support::first_event,
};

/// Every third of a 3 s lease is a renewal each second.
const LEASE_SECS: &str = "3";

fn start(data_dir: &Path, shared: &[(&str, &str)]) -> Running {
    let models = model_dir();
    let mut env = vec![
        ("TESSERA_MODELS__LOCAL_DIR", models.to_str().unwrap()),
        ("TESSERA_CHATS__GENERATION_LEASE_SECS", LEASE_SECS),
        ("TESSERA_RATE_LIMIT__ENABLED", "false"),
        ("CANDLE_NUM_THREADS", "1"),
    ];
    env.extend_from_slice(shared);
    start_with(data_dir, "info", &env)
}

async fn chat_record(http: &reqwest::Client, base: &str, token: &str, chat: &str) -> Value {
    let response = http
        .get(format!("{base}/v1/chats/{chat}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[test]
fn a_killed_replicas_generation_fails_and_a_starting_replica_leaves_others_alone() {
    let first_dir = tempfile::tempdir().unwrap();
    let second_dir = tempfile::tempdir().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The first process runs embedded (and creates the database, keys and certificate); the
    // second is its replica: the same database, signing keys and certificate.
    let mut first = start(first_dir.path(), &[]);
    let id = announced(&first, "client_id:");
    let secret = announced(&first, "client_secret:");
    let shared = |file: &str| first_dir.path().join(file).to_str().unwrap().to_owned();
    let database = format!("sqlite://{}", shared("tessera.sqlite"));
    let (keys, cert, key) = (
        shared("keys"),
        shared("tls/cert.pem"),
        shared("tls/key.pem"),
    );
    let cert_pem = std::fs::read(&cert).unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&cert_pem).unwrap())
        .build()
        .unwrap();

    let chat = runtime.block_on(async {
        let base = format!("https://localhost:{}", first.port);
        let token = access_token(&http, &base, &id, &secret).await;
        let mut response = http
            .post(format!("{base}/v1/chats"))
            .bearer_auth(&token)
            .json(&json!({
                "modelId": LOCAL,
                // Greedy, the small model repeats until `maxTokens` (about 17 s for 1,024
                // tokens on a quiet machine), so the generation outlasts the second process's
                // start-up on a busy one too; counting to 500 stopped at 20 after 2 s.
                "messages": [{"role": "user", "content": "Repeat the word hello 400 times."}],
                "maxTokens": 1024,
                "temperature": 0,
                "stream": true
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let chat = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
        // The first event is out: the generation runs (and outlives this client).
        let first_chunk = first_event(&mut response).await;
        assert!(first_chunk.starts_with("data: "), "{first_chunk:?}");
        chat
    });

    let mut second = start(
        second_dir.path(),
        &[
            ("TESSERA_DATABASE_URL", &database),
            ("TESSERA_AUTH__KEYS_DIR", &keys),
            ("TESSERA_TLS__CERT", &cert),
            ("TESSERA_TLS__KEY", &key),
        ],
    );
    let base = format!("https://localhost:{}", second.port);
    runtime.block_on(async {
        let token = access_token(&http, &base, &id, &secret).await;
        let record = chat_record(&http, &base, &token, &chat).await;
        assert_eq!(
            record["status"], "generating",
            "the second process's start-up left the first one's generation alone \
             (or the answer was done before it started): {record}"
        );

        first.child.kill().unwrap();
        first.child.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let record = loop {
            let record = chat_record(&http, &base, &token, &chat).await;
            if record["status"] != "generating" {
                break record;
            }
            assert!(
                Instant::now() < deadline,
                "still generating a minute after the process was killed: {record}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(
            (&record["status"], &record["error"]),
            (&json!("error"), &json!(tessera_chats::INTERRUPTED)),
            "{record}"
        );
        assert_eq!(
            record["messages"].as_array().map(Vec::len),
            Some(0),
            "an interrupted turn stores nothing: {record}"
        );

        // The chat can be continued on the survivor.
        let answer = http
            .post(format!("{base}/v1/chats"))
            .bearer_auth(&token)
            .json(&json!({
                "chatId": chat,
                "messages": [{"role": "user", "content": "Say hi."}],
                "maxTokens": 8
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let record = chat_record(&http, &base, &token, &chat).await;
        assert_eq!(record["status"], Value::Null, "{record}");
    });
    assert_eq!(terminate(&mut second.child), 0);
}
