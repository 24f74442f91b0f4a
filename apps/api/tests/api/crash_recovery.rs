//! A process killed with SIGKILL while files are processing loses none of them: on restart
//! the expired leases are taken over and every file ends `ready`, its chunks in the database
//! and in the vector index once each.

use std::{
    collections::BTreeSet,
    path::Path,
    time::{Duration, Instant},
};

use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::binary::{Api, Running, announced, start_with, terminate};

const FILES: usize = 20;

/// A document of several chunks whose every paragraph names its file.
pub(crate) fn document(number: usize) -> String {
    (0..12)
        .map(|paragraph| {
            format!(
                "## Part {paragraph} of report {number}\n\nReport {number} describes warehouse \
                 {number}, aisle {paragraph}: shelves are inspected every morning, damaged goods \
                 are logged with a photo, and the inventory is reconciled against orders before \
                 noon so that shipping can start on time. Staff sign the checklist at the end of \
                 each shift and report missing items to the site manager at once.\n\n"
            )
        })
        .collect()
}

fn start(data_dir: &Path, models: &str) -> Running {
    start_with(
        data_dir,
        "info",
        &[
            ("TESSERA_KNOWLEDGE__EMBEDDING_MODEL_DIR", models),
            ("TESSERA_KNOWLEDGE__WORKERS", "1"),
            ("TESSERA_KNOWLEDGE__LEASE_SECS", "2"),
            ("TESSERA_KNOWLEDGE__POLL_SECS", "1"),
            ("TESSERA_RATE_LIMIT__ENABLED", "false"),
            ("CANDLE_NUM_THREADS", "1"),
        ],
    )
}

impl Api {
    /// The organization's files (the first hundred).
    pub async fn files(&self) -> Vec<Value> {
        let page = self
            .send(
                self.client.get(format!("{}/v1/files?limit=100", self.base)),
                200,
            )
            .await;
        page["items"].as_array().unwrap().clone()
    }
}

#[test]
fn files_processing_when_the_process_is_killed_all_end_ready_once() {
    let models = crate::processing::models_root();
    let models = models.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let mut first = start(dir.path(), models);
    let id = announced(&first, "client_id:");
    let secret = announced(&first, "client_secret:");
    let processing_at_kill = runtime.block_on(async {
        let api = Api::connect(dir.path(), &first, &id, &secret).await;
        for number in 0..FILES {
            let form = Form::new().part(
                "file",
                Part::bytes(document(number).into_bytes()).file_name(format!("report-{number}.md")),
            );
            api.send(
                api.client
                    .post(format!("{}/v1/files", api.base))
                    .multipart(form),
                201,
            )
            .await;
        }
        // Kill once the worker is well into the queue: some files done, one mid-way.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let files = api.files().await;
            let ready = files.iter().filter(|f| f["status"] == "ready").count();
            let started = files
                .iter()
                .any(|f| f["status"] == "processing" && f["progress"].as_u64() > Some(0));
            if ready >= 1 && started {
                break files.iter().filter(|f| f["status"] == "processing").count();
            }
            assert!(Instant::now() < deadline, "processing never got going");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(
        processing_at_kill > 0,
        "the kill came after every file was done"
    );

    let mut second = start(dir.path(), models);
    runtime.block_on(async {
        let api = Api::connect(dir.path(), &second, &id, &secret).await;
        let deadline = Instant::now() + Duration::from_secs(300);
        let files = loop {
            let files = api.files().await;
            assert_eq!(files.len(), FILES);
            if files.iter().all(|f| f["status"] != "processing") {
                break files;
            }
            assert!(Instant::now() < deadline, "files still processing: {files:#?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let dataset = api
            .send(
                api.client
                    .post(format!("{}/v1/datasets", api.base))
                    .json(&json!({"name": "Reports"})),
                201,
            )
            .await;
        let dataset = dataset["id"].as_str().unwrap();
        for file in &files {
            assert_eq!(
                (&file["status"], &file["progress"]),
                (&json!("ready"), &json!(100)),
                "{file}"
            );
            let file_id = file["id"].as_str().unwrap();
            api.send(
                api.client
                    .post(format!("{}/v1/files/{file_id}/associations", api.base))
                    .json(&json!({"datasetId": dataset})),
                201,
            )
            .await;
        }
        // Every chunk the database counts is in the index exactly once.
        for file in &files {
            let file_id = file["id"].as_str().unwrap();
            let chunks = file["chunkCount"].as_u64().unwrap();
            assert!(chunks > 1, "{file}");
            let found = api
                .send(
                    api.client
                        .post(format!("{}/v1/datasets/{dataset}/search", api.base))
                        .json(&json!({"query": "warehouse shelves", "limit": 50, "fileIds": [file_id]})),
                    200,
                )
                .await;
            let hits = found["items"].as_array().unwrap();
            let ordinals: BTreeSet<u64> = hits
                .iter()
                .map(|hit| hit["chunkIndex"].as_u64().unwrap())
                .collect();
            assert_eq!(ordinals.len(), hits.len(), "a chunk twice: {hits:#?}");
            assert_eq!(ordinals, (0..chunks).collect(), "{file}");
        }
    });
    assert_eq!(terminate(&mut second.child), 0);
}
