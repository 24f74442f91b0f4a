//! The store's parts (`tessera_store::Part`): a database migrated with one domain's part has
//! that domain's tables and the ones they refer to, nothing else; the chat store works over
//! the chats part alone, handing usage records to another store; parts added later join the
//! same database; and a database migrated before the migrations were split per domain runs
//! the two split-out halves without harm and without losing rows.
#![cfg(feature = "chats")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tessera_chats::{
    Chat, ChatStore, FinishedTurn, Message, MessageId,
    contract::{at, chat, message, turn_of, usage, usage_record},
};
use tessera_kernel::{OrganizationId, PrincipalKind};
use tessera_models::{FinishReason, Role};
use tessera_store::{
    Backend, Database, Part, SqlChatStore, SqlUsageStore,
    testing::{TestDatabase, execute, store_organization, text_rows},
};
use tessera_usage::{FAILED, UsageRecord, UsageStore, memory::InMemoryUsageStore};

/// The split-out halves: artifacts (chats) and the `api_key` principal kind (usage).
const SPLIT_VERSIONS: [&str; 2] = ["202611220000071", "202611270000161"];

/// Later migrations of a table a split-out half rebuilds (on SQLite, `usage_records` with the
/// columns it had then), by folder under `migrations/<backend>/` and version: a database
/// migrated before the split has not run them either.
const LATER: [(&str, &str); 2] = [
    (
        "usage/2026-11-29-000021_cached_input_tokens",
        "20261129000021",
    ),
    ("usage/2026-12-03-000074_cached_usage", "20261203000074"),
];

/// Undoes `LATER` with their own `down.sql`, the latest first, and forgets them.
async fn undo_later_migrations(database: &Database, backend: Backend) {
    let folder = match backend {
        Backend::Postgres => "postgres",
        Backend::Sqlite => "sqlite",
    };
    for (migration, version) in LATER.iter().rev() {
        let path = format!(
            "{}/../../migrations/{folder}/{migration}/down.sql",
            env!("CARGO_MANIFEST_DIR")
        );
        let down = std::fs::read_to_string(&path).unwrap();
        for statement in down.split(';').filter(|s| !s.trim().is_empty()) {
            execute(database, statement).await.unwrap();
        }
        let sql = format!("DELETE FROM __diesel_schema_migrations WHERE version = '{version}'");
        assert_eq!(execute(database, &sql).await.unwrap(), 1, "{migration}");
    }
}

async fn tables(database: &Database, backend: Backend) -> Vec<String> {
    let sql = match backend {
        Backend::Sqlite => {
            "SELECT name AS value FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' ORDER BY name"
        }
        Backend::Postgres => {
            "SELECT tablename::text AS value FROM pg_tables WHERE schemaname = 'public' \
             ORDER BY tablename"
        }
    };
    text_rows(database, sql).await
}

/// A finished turn of `chat`: the question and its answer, with the answer's usage record.
fn turn(chat: &Chat) -> FinishedTurn {
    let answer = Message {
        usage: Some(usage(7, 3, 0, FinishReason::Stop)),
        ..message(chat, 1, Role::Assistant, "Hello.")
    };
    turn_of(
        chat,
        &[message(chat, 0, Role::User, "Hello?"), answer],
        at(2),
    )
}

/// A usage record of an API key's completion in `chat`, answer `message_id`.
fn api_key_usage(chat: &Chat, message_id: &str) -> UsageRecord {
    UsageRecord {
        principal_kind: PrincipalKind::ApiKey,
        message_id: message_id.to_owned(),
        ..usage_record(chat, &MessageId::generate(), at(2))
    }
}

async fn the_chats_part_alone_has_no_other_domains_tables(backend: Backend) {
    let db = TestDatabase::with_parts(backend, &[Part::Chats]).await;
    let mut found = tables(&db.database, backend).await;
    found.retain(|table| table != "__diesel_schema_migrations");
    assert_eq!(
        found,
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
}

async fn the_chat_store_over_the_chats_part_alone_hands_usage_to_another_store(backend: Backend) {
    let db = TestDatabase::with_parts(backend, &[Part::Chats]).await;
    let organization = OrganizationId::generate();
    store_organization(&db.database, &organization, "Chats only").await;
    let usage = Arc::new(InMemoryUsageStore::new());
    let store = SqlChatStore::with_usage_store(db.database.clone(), usage.clone());

    // A finished turn: its messages in the database, its usage record in the other store.
    let first = chat(&organization, "someone");
    store.insert(&first).await.unwrap();
    assert!(
        store
            .begin_generation(&organization, &first.id, at(1))
            .await
            .unwrap()
    );
    let finished = turn(&first);
    store
        .finish_generation(&organization, &first.id, &finished, at(2))
        .await
        .unwrap();
    let messages = store.messages(&organization, &first.id).await.unwrap();
    assert_eq!(messages, finished.messages);
    assert_eq!(
        store
            .get(&organization, &first.id)
            .await
            .unwrap()
            .unwrap()
            .status,
        None
    );
    assert_eq!(usage.all(), vec![finished.usage.clone()]);

    // The failure written after a turn that could not be stored names the same answer:
    // its record is already there, and is kept once.
    assert!(
        store
            .begin_generation(&organization, &first.id, at(3))
            .await
            .unwrap()
    );
    store
        .fail_generation(
            &organization,
            &first.id,
            "boom",
            Some(finished.usage.clone()),
            at(4),
        )
        .await
        .unwrap();
    assert_eq!(usage.all(), vec![finished.usage.clone()]);

    // A failed attempt that consumed tokens is recorded too.
    let second = chat(&organization, "someone");
    store.insert(&second).await.unwrap();
    assert!(
        store
            .begin_generation(&organization, &second.id, at(5))
            .await
            .unwrap()
    );
    let failed = UsageRecord {
        finish_reason: FAILED.to_owned(),
        ..usage_record(&second, &MessageId::generate(), at(6))
    };
    store
        .fail_generation(
            &organization,
            &second.id,
            "upstream failed",
            Some(failed.clone()),
            at(6),
        )
        .await
        .unwrap();
    assert_eq!(usage.all(), vec![finished.usage, failed]);
    let stored = store.get(&organization, &second.id).await.unwrap().unwrap();
    assert_eq!(stored.error.as_deref(), Some("upstream failed"));

    // An unknown chat is still not found, with its usage recorded (the tokens were spent).
    let unknown = chat(&organization, "someone");
    let error = store
        .finish_generation(&organization, &unknown.id, &turn(&unknown), at(7))
        .await
        .unwrap_err();
    assert!(
        matches!(error, tessera_kernel::DomainError::NotFound { .. }),
        "{error}"
    );
    assert_eq!(usage.all().len(), 3);
}

async fn parts_migrated_later_join_the_same_database(backend: Backend) {
    let db = TestDatabase::with_parts(backend, &[Part::Chats]).await;
    let chats_only = tables(&db.database, backend).await.len();
    let rest = Database::migrate(&db.url).await.unwrap();
    assert!(!rest.is_empty());
    assert!(tables(&db.database, backend).await.len() > chats_only);
    assert!(
        tables(&db.database, backend)
            .await
            .contains(&"usage_records".to_owned())
    );
    assert_eq!(
        Database::migrate(&db.url).await.unwrap(),
        Vec::<String>::new()
    );
    // What a fresh database migrated at once has, this one has.
    let whole = TestDatabase::of(backend).await;
    assert_eq!(
        tables(&db.database, backend).await,
        tables(&whole.database, backend).await
    );
}

async fn a_database_migrated_before_the_split_runs_the_split_halves_harmlessly(backend: Backend) {
    let db = TestDatabase::of(backend).await;
    let organization = OrganizationId::generate();
    store_organization(&db.database, &organization, "Before the split").await;
    let records = SqlUsageStore::new(db.database.clone());
    let kept = api_key_usage(&chat(&organization, "someone"), "msg_kept");
    records.record(&kept).await.unwrap();

    // Before the split, the two halves ran inside their combined migrations: a database
    // migrated then has everything and records neither new version.
    let versions = SPLIT_VERSIONS.map(|v| format!("'{v}'")).join(", ");
    let forgotten = execute(
        &db.database,
        &format!("DELETE FROM __diesel_schema_migrations WHERE version IN ({versions})"),
    )
    .await
    .unwrap();
    assert_eq!(forgotten, 2);
    undo_later_migrations(&db.database, backend).await;
    let mut applied = Database::migrate(&db.url).await.unwrap();
    applied.sort();
    let mut expected: Vec<&str> = SPLIT_VERSIONS.to_vec();
    expected.extend(LATER.map(|(_, version)| version));
    assert_eq!(applied, expected);

    // Nothing was lost, and an API key may still be a record's principal.
    let report = text_rows(
        &db.database,
        "SELECT message_id AS value FROM usage_records",
    )
    .await;
    assert_eq!(report, ["msg_kept"]);
    let another = api_key_usage(&chat(&organization, "someone"), "msg_after");
    records.record(&another).await.unwrap();
}

tessera_store::on_both_databases!(
    the_chats_part_alone_has_no_other_domains_tables,
    the_chat_store_over_the_chats_part_alone_hands_usage_to_another_store,
    parts_migrated_later_join_the_same_database,
    a_database_migrated_before_the_split_runs_the_split_halves_harmlessly,
);
