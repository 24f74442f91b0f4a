//! SIGTERM while a chat is generating for a client that already left: the binary refuses new
//! completions and reports not ready while it drains, lets the generation finish and store
//! its answer, then exits 0; after a restart the chat holds the whole answer (not an
//! "interrupted" error).

use std::{path::Path, process::Command, time::Duration};

use serde_json::{Value, json};

use crate::{
    binary::{Running, access_token, announced, start_with},
    chats::{LOCAL, model_dir},
    support::first_event,
};

fn start(data_dir: &Path) -> Running {
    let models = model_dir();
    start_with(
        data_dir,
        "info",
        &[
            ("TESSERA_MODELS__LOCAL_DIR", models.to_str().unwrap()),
            ("TESSERA_HTTP__SHUTDOWN_TIMEOUT_SECS", "120"),
            ("TESSERA_RATE_LIMIT__ENABLED", "false"),
            ("CANDLE_NUM_THREADS", "1"),
        ],
    )
}

fn client(data_dir: &Path) -> reqwest::Client {
    let cert = std::fs::read(data_dir.join("tls/cert.pem")).unwrap();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&cert).unwrap())
        .build()
        .unwrap()
}

/// A prompt the small model answers at length, so the generation outlasts the checks below.
fn counting(stream: bool) -> Value {
    json!({
        "modelId": LOCAL,
        "messages": [{"role": "user", "content": "Count from 1 to 500, separated by commas."}],
        "maxTokens": 256,
        "temperature": 0,
        "stream": stream
    })
}

#[test]
fn sigterm_lets_running_generations_finish_and_store_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut first = start(dir.path());
    let id = announced(&first, "client_id:");
    let secret = announced(&first, "client_secret:");
    let http = client(dir.path());
    let base = format!("https://localhost:{}", first.port);

    let (token, chat) = runtime.block_on(async {
        let token = access_token(&http, &base, &id, &secret).await;
        let mut response = http
            .post(format!("{base}/v1/chats"))
            .bearer_auth(&token)
            .json(&counting(true))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let chat = response.headers()["x-chat-id"].to_str().unwrap().to_owned();
        // The first event is out: the generation runs. Then the client leaves.
        let first_chunk = first_event(&mut response).await;
        assert!(first_chunk.starts_with("data: "), "{first_chunk:?}");
        drop(response);
        (token, chat)
    });

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(first.child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    runtime.block_on(async {
        // Draining, once the signal is handled: not ready, and no new completions, while the
        // answer is still being generated.
        let mut ready = None;
        for _ in 0..100 {
            let status = http
                .get(format!("{base}/v1/health/ready"))
                .send()
                .await
                .unwrap()
                .status();
            if status == 503 {
                ready = Some(status);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(ready.is_some(), "still ready 2 s after SIGTERM");
        let refused = http
            .post(format!("{base}/v1/chats"))
            .bearer_auth(&token)
            .json(&counting(false))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 503);
        assert_eq!(refused.headers()["retry-after"], "1");
        let problem: Value = refused.json().await.unwrap();
        assert_eq!(problem["code"], "shutting_down", "{problem}");
    });
    let exit = (0..1200).find_map(|_| {
        let exited = first.child.try_wait().unwrap();
        if exited.is_none() {
            std::thread::sleep(Duration::from_millis(100));
        }
        exited
    });
    let Some(exit) = exit else {
        first.child.kill().unwrap();
        panic!("the server did not stop within 120 s of SIGTERM");
    };
    assert_eq!(exit.code(), Some(0));

    let mut second = start(dir.path());
    let base = format!("https://localhost:{}", second.port);
    runtime.block_on(async {
        let token = access_token(&http, &base, &id, &secret).await;
        let record: Value = http
            .get(format!("{base}/v1/chats/{chat}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            (&record["status"], &record["error"]),
            (&Value::Null, &Value::Null),
            "{record}"
        );
        let messages = record["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2, "{record}");
        let answer = &messages[1];
        assert!(!answer["content"].as_str().unwrap().is_empty(), "{answer}");
        assert!(
            answer["usage"]["outputTokens"].as_u64().unwrap() > 10,
            "{answer}"
        );
    });
    assert_eq!(crate::binary::terminate(&mut second.child), 0);
}
