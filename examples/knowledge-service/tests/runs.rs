//! The example service runs as its own binary: the help centre's three documents are
//! uploaded, processed by the real pipeline (extraction, chunking, all-MiniLM-L6-v2,
//! qdrant-edge) and searched, and each question's answer ranks first; the files are stored
//! in a database that has the knowledge part of the schema alone. It builds the knowledge
//! store alone, without the HTTP framework.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{path::PathBuf, process::Command};

use tessera_store::{Database, DatabaseUrl, PoolOptions, testing::text_rows};

const SHIPPING: &str = "How long does a parcel to Canada take?";
const PASSWORD: &str = "I forgot my password, how do I get back in?";
const REFUND: &str = "When do I get my money back for a returned item?";

/// The folder `just models` fills (`TESSERA_MODELS_DIR`, else `~/.cache/tessera-models`).
fn models_root() -> PathBuf {
    std::env::var_os("TESSERA_MODELS_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tessera-models"),
        PathBuf::from,
    )
}

/// The file the passage ranked first for `query` comes from.
fn first_for<'a>(stdout: &'a str, query: &str) -> &'a str {
    let mut lines = stdout.lines();
    lines
        .find(|line| *line == format!("query: {query}"))
        .unwrap_or_else(|| panic!("no results for {query:?}:\n{stdout}"));
    let first = lines.next().unwrap_or_default();
    let rest = first
        .strip_prefix("1. ")
        .unwrap_or_else(|| panic!("no first passage for {query:?}:\n{stdout}"));
    rest.split(' ').next().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_question_finds_its_document_first() {
    let data = tempfile::tempdir().unwrap();
    let documents = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("documents");
    let output = Command::new(env!("CARGO_BIN_EXE_knowledge-service"))
        .arg("--models")
        .arg(models_root())
        .arg("--data")
        .arg(data.path())
        .args(["--query", SHIPPING, "--query", PASSWORD, "--query", REFUND])
        .args(["shipping.md", "returns.md", "accounts.txt"].map(|name| documents.join(name)))
        .env("CANDLE_NUM_THREADS", "1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for name in ["shipping.md", "returns.md", "accounts.txt"] {
        assert!(
            stdout
                .lines()
                .any(|line| line.starts_with(&format!("ready: {name} ("))),
            "{name} was not processed:\n{stdout}"
        );
    }
    assert_eq!(first_for(&stdout, SHIPPING), "shipping.md", "{stdout}");
    assert_eq!(first_for(&stdout, PASSWORD), "accounts.txt", "{stdout}");
    assert_eq!(first_for(&stdout, REFUND), "returns.md", "{stdout}");

    // The files are in the database, which has no chats, usage, identity or other domains'
    // tables: the knowledge part (with the batches, whose lines refer to its files), the
    // webhook outbox its stores write events to, and the tenants.
    let url = DatabaseUrl::Sqlite(data.path().join("knowledge.sqlite"));
    let database = Database::connect(&url, PoolOptions::default())
        .await
        .unwrap();
    let tables = text_rows(
        &database,
        "SELECT name AS value FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite_%' AND name <> '__diesel_schema_migrations' ORDER BY name",
    )
    .await;
    assert_eq!(
        tables,
        [
            "audit_events",
            "batch_results",
            "batches",
            "dataset_file_batches",
            "dataset_files",
            "dataset_snapshots",
            "datasets",
            "file_chunks",
            "file_jobs",
            "files",
            "index_generations",
            "organizations",
            "snapshot_files",
            "webhook_deliveries",
            "webhooks",
        ]
    );
    let files = text_rows(
        &database,
        "SELECT name || ' ' || status AS value FROM files ORDER BY name",
    )
    .await;
    assert_eq!(
        files,
        [
            "accounts.txt ready",
            "returns.md ready",
            "shipping.md ready"
        ]
    );
}

/// The store's `knowledge` feature alone: no other domain's store code, so none of their
/// crates (nor the HTTP framework, nor an HTTP client) is in the example's dependency tree,
/// resolved for it alone.
#[test]
fn builds_the_knowledge_store_alone() {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--locked", "--edges", "normal"])
        .args(["--prefix", "none", "--format", "{p}", "--package"])
        .arg(env!("CARGO_PKG_NAME"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    let tree = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let packages: Vec<&str> = (tree.lines())
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    for wanted in [
        "tessera-store",
        "tessera-knowledge",
        "tessera-blobs-local",
        "tessera-documents",
        "tessera-embed-local",
        "tessera-vectors-qdrant",
    ] {
        assert!(packages.contains(&wanted), "{wanted} missing from:\n{tree}");
    }
    for other in [
        "tessera-chats",
        "tessera-models",
        "tessera-identity",
        "tessera-audit",
        "tessera-mcp",
        "tessera-idempotency",
        "tessera-batches",
        "tessera-services",
        "tessera-setup",
        "actix-web",
        "reqwest",
    ] {
        assert!(
            !packages.contains(&other),
            "{other} is in the example's tree:\n{tree}"
        );
    }
}
