//! The example service runs as its own binary: the first completion is answered by the
//! embedded engine and stored in a database that has the chats part of the schema alone;
//! the second is refused by the spent budget. It builds the chats part of the store alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use tessera_store::{Database, DatabaseUrl, PoolOptions, testing::text_rows};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_then_refuses_once_the_budget_is_spent() {
    let dir = tempfile::tempdir().unwrap();
    let url = DatabaseUrl::Sqlite(dir.path().join("chats.sqlite"));
    let output = Command::new(env!("CARGO_BIN_EXE_chat-service"))
        .arg("--model")
        .arg(tessera_llm_local::testing::model_path())
        .args(["--database", &url.to_string()])
        .args(["--budget", "1", "What is the capital of France?"])
        .env("CANDLE_NUM_THREADS", "1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("answer: ") && lines[0].len() > "answer: ".len(),
        "{stdout}"
    );
    assert!(lines[1].starts_with("usage: "), "{stdout}");
    assert!(lines[2].starts_with("refused: "), "{stdout}");
    assert!(lines[2].ends_with(" of 1 credits used"), "{stdout}");

    // The answer is in the database, which has no usage, webhook or other domains' tables.
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
            "artifacts",
            "audit_events",
            "chat_messages",
            "chats",
            "generation_runners",
            "organizations",
            "running_generations",
        ]
    );
    let answers = text_rows(
        &database,
        "SELECT role AS value FROM chat_messages ORDER BY sequence",
    )
    .await;
    assert_eq!(answers, ["user", "assistant"]);
}

/// The store's `chats` feature alone: no other domain's store code, so none of their crates
/// (nor the HTTP framework) is in the example's dependency tree, resolved for it alone.
#[test]
fn builds_the_chats_store_alone() {
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
    for wanted in ["tessera-store", "tessera-chats", "tessera-usage"] {
        assert!(packages.contains(&wanted), "{wanted} missing from:\n{tree}");
    }
    for other in [
        "tessera-webhooks",
        "tessera-knowledge",
        "tessera-identity",
        "tessera-audit",
        "tessera-mcp",
        "tessera-idempotency",
        "actix-web",
    ] {
        assert!(
            !packages.contains(&other),
            "{other} is in the example's tree:\n{tree}"
        );
    }
}
