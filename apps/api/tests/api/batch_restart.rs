//! A process killed with SIGKILL while a batch runs loses none of its lines and answers
//! none twice: on restart the expired lease is taken over, the answers kept before the kill
//! stay counted, the rest run, and the output file holds every line once, in input order.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::{
    binary::{Api, Running, announced, start_with, terminate},
    chats::{LOCAL, model_dir},
};

const LINES: usize = 25;

fn start(data_dir: &Path, chat_models: &str, embedding_models: &str) -> Running {
    start_with(
        data_dir,
        "info",
        &[
            ("TESSERA_MODELS__LOCAL_DIR", chat_models),
            ("TESSERA_KNOWLEDGE__EMBEDDING_MODEL_DIR", embedding_models),
            ("TESSERA_BATCHES__LEASE_SECS", "2"),
            ("TESSERA_BATCHES__POLL_MILLIS", "100"),
            ("TESSERA_RATE_LIMIT__ENABLED", "false"),
            ("CANDLE_NUM_THREADS", "1"),
        ],
    )
}

/// The OpenAI door of a running server.
impl Api {
    fn openai_url(&self, path: &str) -> String {
        format!("{}/openai/v1{path}", self.base)
    }

    async fn batch(&self, id: &str) -> Value {
        self.send(
            self.client.get(self.openai_url(&format!("/batches/{id}"))),
            200,
        )
        .await
    }

    /// A file's JSON lines.
    async fn lines_of(&self, file: &Value) -> Vec<Value> {
        let id = file.as_str().unwrap_or_else(|| panic!("no file: {file}"));
        let response = self
            .client
            .get(self.openai_url(&format!("/files/{id}/content")))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn input() -> String {
    (0..LINES)
        .map(|n| {
            let line = json!({
                "custom_id": format!("r{n}"),
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {
                    "model": LOCAL,
                    "messages": [{"role": "user", "content": format!("Count to {n}.")}],
                    "max_tokens": 16,
                    "temperature": 0,
                },
            });
            format!("{line}\n")
        })
        .collect()
}

#[test]
fn a_batch_running_when_the_process_is_killed_answers_every_line_once() {
    let chat_models = model_dir();
    let chat_models = chat_models.to_str().unwrap();
    let embedding_models = crate::processing::models_root();
    let embedding_models = embedding_models.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut first = start(dir.path(), chat_models, embedding_models);
    let id = announced(&first, "client_id:");
    let secret = announced(&first, "client_secret:");
    let (batch_id, at_kill) = runtime.block_on(async {
        let api = Api::connect(dir.path(), &first, &id, &secret).await;
        let form = Form::new().text("purpose", "batch").part(
            "file",
            Part::bytes(input().into_bytes()).file_name("requests.jsonl"),
        );
        let file = api
            .send(
                api.client.post(api.openai_url("/files")).multipart(form),
                200,
            )
            .await;
        assert_eq!(file["purpose"], "batch", "{file}");
        let created = api
            .send(
                api.client.post(api.openai_url("/batches")).json(&json!({
                    "input_file_id": file["id"],
                    "endpoint": "/v1/chat/completions",
                    "completion_window": "24h",
                })),
                200,
            )
            .await;
        assert_eq!(created["status"], "in_progress", "{created}");
        assert_eq!(created["request_counts"]["total"], LINES, "{created}");
        let batch_id = created["id"].as_str().unwrap().to_owned();
        // Kill once a few answers are kept and the rest are still to run.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let batch = api.batch(&batch_id).await;
            assert_eq!(batch["status"], "in_progress", "{batch}");
            if batch["request_counts"]["completed"].as_u64().unwrap() >= 3 {
                break (
                    batch_id,
                    batch["request_counts"]["completed"].as_u64().unwrap(),
                );
            }
            assert!(
                Instant::now() < deadline,
                "the batch never got going: {batch}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(
        at_kill < LINES as u64,
        "the kill came after every line was answered"
    );

    let mut second = start(dir.path(), chat_models, embedding_models);
    runtime.block_on(async {
        let api = Api::connect(dir.path(), &second, &id, &secret).await;
        // The answers kept before the kill are still counted.
        let restarted = api.batch(&batch_id).await;
        assert!(
            restarted["request_counts"]["completed"].as_u64().unwrap() >= at_kill,
            "answers kept before the kill ({at_kill}) were lost: {restarted}"
        );
        // Shown with `--no-capture`.
        println!("answered at the kill: {at_kill}; after the restart: {restarted}");
        let deadline = Instant::now() + Duration::from_secs(300);
        let done = loop {
            let batch = api.batch(&batch_id).await;
            if batch["status"] == "completed" {
                break batch;
            }
            assert!(
                ["in_progress", "finalizing"].contains(&batch["status"].as_str().unwrap()),
                "{batch}"
            );
            assert!(Instant::now() < deadline, "the batch never ended: {batch}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        assert_eq!(
            done["request_counts"],
            json!({"total": LINES, "completed": LINES, "failed": 0}),
            "{done}"
        );
        assert!(done["error_file_id"].is_null(), "{done}");
        let output = api.lines_of(&done["output_file_id"]).await;
        let ids: Vec<&str> = output
            .iter()
            .map(|line| line["custom_id"].as_str().unwrap())
            .collect();
        let expected: Vec<String> = (0..LINES).map(|n| format!("r{n}")).collect();
        assert_eq!(ids, expected, "every line once, in input order");
        for line in &output {
            assert_eq!(line["response"]["status_code"], 200, "{line}");
            assert_eq!(
                line["response"]["body"]["object"], "chat.completion",
                "{line}"
            );
        }
    });
    assert_eq!(terminate(&mut second.child), 0);
}
