//! The store's parts (`tessera_store::Part`): a database migrated with one domain's part has
//! that domain's tables and the ones they refer to, nothing else; the chat store works over
//! the chats part alone, handing usage records to another store; parts added later join the
//! same database; and a database migrated before the migrations were split per domain runs
//! the two split-out halves without harm and without losing rows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use tessera_chats::{
    Chat, ChatId, ChatStore, FinishedTurn, Message, MessageId, MessageUsage, ModelSnapshot,
};
use tessera_kernel::{OrganizationId, PrincipalKind};
use tessera_models::{FinishReason, Role, Usage};
use tessera_store::{
    Backend, Database, Part, SqlChatStore, SqlUsageStore,
    testing::{TestDatabase, execute, store_organization, text_rows},
};
use tessera_usage::{FAILED, Tokens, UsageId, UsageRecord, UsageStore, memory::InMemoryUsageStore};

/// The split-out halves: artifacts (chats) and the `api_key` principal kind (usage).
const SPLIT_VERSIONS: [&str; 2] = ["202611220000071", "202611270000161"];

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

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + chrono::Duration::seconds(seconds)
}

fn chat(organization: &OrganizationId) -> Chat {
    Chat {
        id: ChatId::generate(),
        organization_id: organization.clone(),
        owner: "someone".to_owned(),
        model: ModelSnapshot {
            model_id: "local/smollm2-135m".to_owned(),
            base_model_id: "local/smollm2-135m".to_owned(),
            system_prompt: None,
            system_prompt_id: None,
        },
        title: None,
        status: None,
        error: None,
        deleted_at: None,
        created_at: at(0),
        updated_at: at(0),
    }
}

fn usage_record(
    chat: &Chat,
    message: &str,
    kind: PrincipalKind,
    finish_reason: &str,
) -> UsageRecord {
    UsageRecord {
        id: UsageId::generate(),
        organization_id: chat.organization_id.clone(),
        principal: "someone".to_owned(),
        principal_kind: kind,
        chat_id: chat.id.to_string(),
        message_id: message.to_owned(),
        model_id: chat.model.model_id.clone(),
        parent_model_id: chat.model.base_model_id.clone(),
        provider: "local".to_owned(),
        tokens: Tokens {
            input: 7,
            output: 3,
            reasoning: 0,
        },
        credits: 10,
        latency_ms: 12,
        finish_reason: finish_reason.to_owned(),
        created_at: at(2),
    }
}

/// A finished turn: the question and its answer, with the answer's usage record.
fn turn(chat: &Chat) -> FinishedTurn {
    let message = |role: Role, sequence: u32, content: &str| Message {
        id: MessageId::generate(),
        chat_id: chat.id.clone(),
        sequence,
        role,
        content: content.to_owned(),
        reasoning: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        sources: Vec::new(),
        attachments: Vec::new(),
        usage: None,
        created_at: at(1),
    };
    let question = message(Role::User, 0, "Hello?");
    let mut answer = message(Role::Assistant, 1, "Hello.");
    answer.usage = Some(MessageUsage {
        usage: Usage {
            input_tokens: 7,
            output_tokens: 3,
            reasoning_tokens: 0,
        },
        finish_reason: FinishReason::Stop,
        route: None,
    });
    let usage = usage_record(chat, answer.id.as_str(), PrincipalKind::User, "stop");
    FinishedTurn {
        messages: vec![question, answer],
        usage,
        artifacts: Vec::new(),
        error: None,
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
    let first = chat(&organization);
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
    let second = chat(&organization);
    store.insert(&second).await.unwrap();
    assert!(
        store
            .begin_generation(&organization, &second.id, at(5))
            .await
            .unwrap()
    );
    let failed = usage_record(
        &second,
        MessageId::generate().as_str(),
        PrincipalKind::User,
        FAILED,
    );
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
    let unknown = chat(&organization);
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
    let kept = usage_record(
        &chat(&organization),
        "msg_kept",
        PrincipalKind::ApiKey,
        "stop",
    );
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
    let mut applied = Database::migrate(&db.url).await.unwrap();
    applied.sort();
    assert_eq!(applied, SPLIT_VERSIONS);

    // Nothing was lost, and an API key may still be a record's principal.
    let report = text_rows(
        &db.database,
        "SELECT message_id AS value FROM usage_records",
    )
    .await;
    assert_eq!(report, ["msg_kept"]);
    let another = usage_record(
        &chat(&organization),
        "msg_after",
        PrincipalKind::ApiKey,
        "stop",
    );
    records.record(&another).await.unwrap();
}

tessera_store::on_both_databases!(
    the_chats_part_alone_has_no_other_domains_tables,
    the_chat_store_over_the_chats_part_alone_hands_usage_to_another_store,
    parts_migrated_later_join_the_same_database,
    a_database_migrated_before_the_split_runs_the_split_halves_harmlessly,
);
