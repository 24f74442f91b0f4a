//! The `ChatStore` contract (`tessera_chats::contract`, also run against the in-memory
//! reference) on SQLite and PostgreSQL, and what only a database can show: references that
//! must exist, corrupt rows, PostgreSQL's group commit and the runners' table.
#![cfg(feature = "chats")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::sql_types::{BigInt, Bool, Text, Timestamp};
use diesel_async::RunQueryDsl;
use tessera_chats::{
    ArtifactStore, Chat, ChatStatus, ChatStore, FinishedTurn, Message, MessageId,
    contract::{
        ChatStores, Fixture, Runner, artifact, at, chat, chat_of, is_conflict, is_internal,
        is_not_found, live, message, page, turn_of, turn_with_artifacts, usage, usage_record,
        versions,
    },
};
use tessera_kernel::{DomainError, OrganizationId, PrincipalKind};
use tessera_models::{FinishReason, Role};
use tessera_store::{
    Backend, Database, Part, SqlArtifactStore, SqlChatStore,
    testing::{TestDatabase, execute, store_organization},
};
use tessera_usage::{Tokens, UsageRecord, memory::InMemoryUsageStore};

/// The chat and artifact stores over one database, which stores the organizations chats
/// refer to.
struct SqlStores {
    chats: Arc<SqlChatStore>,
    database: Database,
}

#[async_trait]
impl ChatStores for SqlStores {
    fn store(&self) -> Arc<dyn Runner> {
        self.chats.clone()
    }

    fn another_runner(&self) -> Arc<dyn Runner> {
        Arc::new(SqlChatStore::new(self.database.clone()))
    }

    fn artifacts(&self) -> Arc<dyn ArtifactStore> {
        Arc::new(SqlArtifactStore::new(self.database.clone()))
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }

    async fn recorded_usage(&self) -> Vec<UsageRecord> {
        let sql = "SELECT * FROM usage_records";
        let rows: Vec<StoredUsage> = match &self.database {
            Database::Postgres(pool) => {
                let mut conn = pool.get().await.unwrap();
                diesel::sql_query(sql).load(&mut *conn).await.unwrap()
            }
            Database::Sqlite(pool) => {
                let mut conn = pool.get().await.unwrap();
                diesel::sql_query(sql).load(&mut *conn).await.unwrap()
            }
        };
        rows.into_iter().map(UsageRecord::from).collect()
    }
}

/// The stores over a fresh database of `backend`, and the database (dropped after the test).
async fn sql_stores(backend: Backend) -> (SqlStores, TestDatabase) {
    let db = TestDatabase::of(backend).await;
    let stores = SqlStores {
        chats: Arc::new(SqlChatStore::new(db.database.clone())),
        database: db.database.clone(),
    };
    (stores, db)
}

mod contract_sqlite {
    tessera_chats::chat_store_contract!(|| super::sql_stores(tessera_store::Backend::Sqlite));
}

mod contract_postgres {
    tessera_chats::chat_store_contract!(|| super::sql_stores(tessera_store::Backend::Postgres));
}

/// The chat store over a database of the chats part alone, handing each turn's usage record
/// to a usage store of its own (what a service embedding only the chats domain runs).
struct ChatsPartStores {
    chats: Arc<SqlChatStore>,
    usage: Arc<InMemoryUsageStore>,
    database: Database,
}

#[async_trait]
impl ChatStores for ChatsPartStores {
    fn store(&self) -> Arc<dyn Runner> {
        self.chats.clone()
    }

    fn another_runner(&self) -> Arc<dyn Runner> {
        Arc::new(SqlChatStore::with_usage_store(
            self.database.clone(),
            self.usage.clone(),
        ))
    }

    fn artifacts(&self) -> Arc<dyn ArtifactStore> {
        Arc::new(SqlArtifactStore::new(self.database.clone()))
    }

    async fn organization_exists(&self, id: &OrganizationId, name: &str) {
        store_organization(&self.database, id, name).await;
    }

    async fn recorded_usage(&self) -> Vec<UsageRecord> {
        self.usage.all()
    }
}

async fn chats_part_stores(backend: Backend) -> (ChatsPartStores, TestDatabase) {
    let db = TestDatabase::with_parts(backend, &[Part::Chats]).await;
    let usage = Arc::new(InMemoryUsageStore::new());
    let stores = ChatsPartStores {
        chats: Arc::new(SqlChatStore::with_usage_store(
            db.database.clone(),
            usage.clone(),
        )),
        usage,
        database: db.database.clone(),
    };
    (stores, db)
}

/// The contract's checks the chats-part store meets. It records a turn's usage in its usage
/// store just before writing the turn, as two stores share no transaction: a turn then
/// refused keeps its usage record (the tokens were spent), and a record already there counts
/// as recorded (the failure written after a turn that could not be stored names the same
/// answer). So the five checks that a refused finish records nothing, or that an answer's
/// usage cannot be recorded twice, do not apply; `store_parts.rs` tests what it does instead.
macro_rules! chats_part_contract {
    ($backend:ident) => {
        tessera_kernel::contract_checks!(
            || super::chats_part_stores(tessera_store::Backend::$backend), tessera_chats;
            chats_read_back_unchanged,
            duplicate_chat_ids_are_refused,
            lists_are_newest_first_and_filtered,
            keyset_pages_have_no_gaps_or_duplicates,
            messages_read_back_unchanged_in_sequence_order,
            messages_of_one_turn_come_back_in_sequence_order,
            one_generation_runs_at_a_time,
            finishing_appends_messages_and_clears_the_status,
            failing_records_the_error,
            a_failed_turn_keeps_its_partial_answer_and_its_route,
            interrupted_generations_fail_in_every_organization,
            a_runner_retires_only_without_generations,
            update_saves_title_deletion_and_time_only,
            concurrent_starts_have_one_winner,
            finishing_stores_the_usage_and_the_artifacts,
            artifacts_are_scoped_to_the_organization_and_filtered,
            artifact_keyset_pages_have_no_gaps_or_duplicates,
        );
    };
}

mod chats_part_contract_sqlite {
    chats_part_contract!(Sqlite);
}

mod chats_part_contract_postgres {
    chats_part_contract!(Postgres);
}

/// Runs one SQL statement as is (to plant rows the store would never write).
async fn run_sql(database: &Database, sql: &str) {
    execute(database, sql).await.unwrap();
}

/// A `usage_records` row as stored, read with plain SQL.
#[derive(diesel::QueryableByName)]
struct StoredUsage {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    organization_id: String,
    #[diesel(sql_type = Text)]
    principal: String,
    #[diesel(sql_type = Text)]
    principal_kind: String,
    #[diesel(sql_type = Text)]
    chat_id: String,
    #[diesel(sql_type = Text)]
    message_id: String,
    #[diesel(sql_type = Text)]
    model_id: String,
    #[diesel(sql_type = Text)]
    parent_model_id: String,
    #[diesel(sql_type = Text)]
    provider: String,
    #[diesel(sql_type = BigInt)]
    input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    reasoning_tokens: i64,
    #[diesel(sql_type = BigInt)]
    credits: i64,
    #[diesel(sql_type = BigInt)]
    latency_ms: i64,
    #[diesel(sql_type = Text)]
    finish_reason: String,
    #[diesel(sql_type = Timestamp)]
    created_at: NaiveDateTime,
    #[diesel(sql_type = BigInt)]
    cached_input_tokens: i64,
    #[diesel(sql_type = Bool)]
    cached: bool,
}

impl From<StoredUsage> for UsageRecord {
    fn from(row: StoredUsage) -> Self {
        let count = |value: i64| u64::try_from(value).unwrap();
        UsageRecord {
            id: row.id.parse().unwrap(),
            organization_id: row.organization_id.parse().unwrap(),
            principal: row.principal,
            principal_kind: match row.principal_kind.as_str() {
                "user" => PrincipalKind::User,
                "client" => PrincipalKind::Client,
                "api_key" => PrincipalKind::ApiKey,
                other => panic!("principal_kind {other}"),
            },
            chat_id: row.chat_id,
            message_id: row.message_id,
            model_id: row.model_id,
            parent_model_id: row.parent_model_id,
            provider: row.provider,
            tokens: Tokens {
                input: count(row.input_tokens),
                output: count(row.output_tokens),
                reasoning: count(row.reasoning_tokens),
                cached_input: count(row.cached_input_tokens),
            },
            credits: count(row.credits),
            latency_ms: count(row.latency_ms),
            finish_reason: row.finish_reason,
            created_at: DateTime::<Utc>::from_naive_utc_and_offset(row.created_at, Utc),
            cached: row.cached,
        }
    }
}

async fn references_must_exist(backend: Backend) {
    let (stores, _db) = sql_stores(backend).await;
    let f = Fixture::new(&stores);
    let acme = f.organization("Acme").await;

    let orphan = chat(&OrganizationId::generate(), "alice");
    let refused = f.store.insert(&orphan).await;
    assert!(
        matches!(
            refused,
            Err(DomainError::Conflict {
                code: "missing_reference",
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(f.get(&orphan).await, None);

    // A message names the chat it is appended to; another chat's message is refused.
    let chat = f.chat(&acme, "alice").await;
    let other = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(10)).await);
    let stray = vec![
        message(&chat, 0, Role::User, "mine"),
        message(&other, 1, Role::User, "someone else's"),
    ];
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &turn_of(&chat, &stray, at(11)), at(11))
        .await;
    assert!(is_internal(&refused), "{refused:?}");
    assert!(f.messages(&chat).await.is_empty());
    assert!(f.messages(&other).await.is_empty());
    assert_eq!(
        f.get(&chat).await.unwrap().status,
        Some(ChatStatus::Generating)
    );
    assert!(f.recorded_usage().await.is_empty());

    // A usage record of an organization that does not exist rolls the finish back.
    let messages = vec![message(&chat, 0, Role::User, "mine")];
    let mut orphan_usage = turn_of(&chat, &messages, at(12));
    orphan_usage.usage.organization_id = OrganizationId::generate();
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &orphan_usage, at(12))
        .await;
    assert!(
        matches!(
            refused,
            Err(DomainError::Conflict {
                code: "missing_reference",
                ..
            })
        ),
        "{refused:?}"
    );
    assert!(f.messages(&chat).await.is_empty());
    assert!(f.recorded_usage().await.is_empty());
    let spent = usage_record(&chat, &MessageId::generate(), at(12));
    let refused = f
        .store
        .fail_generation(
            &acme,
            &chat.id,
            "boom",
            Some(UsageRecord {
                organization_id: OrganizationId::generate(),
                ..spent
            }),
            at(12),
        )
        .await;
    assert!(is_conflict(&refused), "{refused:?}");
    assert!(f.recorded_usage().await.is_empty());

    // An artifact names the stored message it was found in.
    let unstored = message(&chat, 5, Role::Assistant, "never stored");
    let stray_artifact = FinishedTurn {
        artifacts: vec![artifact(&chat, &unstored, "plan", 1)],
        ..turn_of(&chat, &messages, at(13))
    };
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &stray_artifact, at(13))
        .await;
    assert!(
        matches!(
            refused,
            Err(DomainError::Conflict {
                code: "missing_reference",
                ..
            })
        ),
        "{refused:?}"
    );
    assert!(f.messages(&chat).await.is_empty());
    assert!(f.recorded_usage().await.is_empty());
    assert!(f.versions(&chat).await.is_empty());
    assert_eq!(
        f.get(&chat).await.unwrap().status,
        Some(ChatStatus::Generating)
    );
}

async fn corrupt_rows_are_internal_errors(backend: Backend) {
    let (stores, _db) = sql_stores(backend).await;
    let f = Fixture::new(&stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let turn = vec![Message {
        usage: Some(usage(1, 2, 0, FinishReason::Stop)),
        ..message(&chat, 0, Role::Assistant, "fine")
    }];
    f.finish(&chat, &turn, at(10)).await;

    // Corruptions of the JSON columns (the others are guarded by check constraints).
    for (column, value) in [
        ("tool_calls", "'not json'"),
        ("tool_calls", "'{}'"),
        ("tool_calls", r#"'[{"id":"x"}]'"#),
        ("sources", "'null'"),
        ("sources", r#"'[{"id":"x"}]'"#),
        ("attachments", "'not json'"),
        ("attachments", r#"'[{"fileId":"x"}]'"#),
    ] {
        run_sql(
            &stores.database,
            &format!(
                "UPDATE chat_messages SET {column} = {value} WHERE id = '{}'",
                turn[0].id
            ),
        )
        .await;
        let read = f.store.messages(&acme, &chat.id).await;
        assert!(is_internal(&read), "{column} = {value}: {read:?}");
        run_sql(
            &stores.database,
            &format!(
                "UPDATE chat_messages SET {column} = '[]' WHERE id = '{}'",
                turn[0].id
            ),
        )
        .await;
    }
    assert_eq!(f.messages(&chat).await, turn);

    // A finish reason written by something else reads back as `Other`.
    run_sql(
        &stores.database,
        &format!(
            "UPDATE chat_messages SET finish_reason = 'eos_token' WHERE id = '{}'",
            turn[0].id
        ),
    )
    .await;
    let read = f.messages(&chat).await;
    assert_eq!(
        read[0].usage.as_ref().map(|u| &u.finish_reason),
        Some(&FinishReason::Other("eos_token".to_owned()))
    );

    // A row whose id is not a chat id (one without messages, which would refer to it).
    let bare = f.chat(&acme, "alice").await;
    run_sql(
        &stores.database,
        &format!(
            "UPDATE chats SET id = 'cht_not-a-uuid' WHERE id = '{}'",
            bare.id
        ),
    )
    .await;
    let listed = f.store.list(&live(&acme), &page(10, None)).await;
    assert!(is_internal(&listed), "{listed:?}");
    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 2);
    assert_eq!(f.get(&chat).await.map(|c| c.id), Some(chat.id.clone()));
}

tessera_store::on_both_databases!(references_must_exist, corrupt_rows_are_internal_errors);

/// PostgreSQL's group commit: writes submitted together go in one transaction, and a bad
/// write in a batch fails alone. These tests run on a single-threaded runtime, so every
/// write of a `join_all` is queued before the writer first looks at its queue.
mod group_commit {
    use futures_util::future::join_all;

    use super::*;

    /// The rollup totals: (requests, input tokens) over every row and shard.
    #[derive(diesel::QueryableByName, Debug, PartialEq)]
    struct Rollup {
        #[diesel(sql_type = BigInt)]
        requests: i64,
        #[diesel(sql_type = BigInt)]
        input_tokens: i64,
    }

    async fn rollup(database: &Database) -> Rollup {
        let Database::Postgres(pool) = database else {
            panic!("a PostgreSQL test")
        };
        let mut conn = pool.get().await.unwrap();
        diesel::sql_query(
            "SELECT COALESCE(SUM(requests), 0)::bigint AS requests, \
             COALESCE(SUM(input_tokens), 0)::bigint AS input_tokens FROM usage_hourly",
        )
        .get_result(&mut *conn)
        .await
        .unwrap()
    }

    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }

    /// How many generations hold a lease.
    async fn leases(database: &Database) -> i64 {
        let Database::Postgres(pool) = database else {
            panic!("a PostgreSQL test")
        };
        let mut conn = pool.get().await.unwrap();
        let counted: Count = diesel::sql_query("SELECT count(*) AS count FROM running_generations")
            .get_result(&mut *conn)
            .await
            .unwrap();
        counted.count
    }

    /// A user message and an answer with its usage, the turn `chat`'s first.
    fn first_turn(chat: &Chat) -> Vec<Message> {
        vec![
            message(chat, 0, Role::User, "question"),
            Message {
                usage: Some(usage(12, 3, 0, FinishReason::Stop)),
                ..message(chat, 1, Role::Assistant, "answer")
            },
        ]
    }

    #[tokio::test]
    async fn concurrent_writes_commit_together() {
        let (stores, _db) = sql_stores(Backend::Postgres).await;
        let f = Fixture::new(&stores);
        let store = SqlChatStore::new(stores.database.clone());
        let acme = f.organization("Acme").await;
        let chats: Vec<Chat> = (0..30)
            .map(|_| Chat {
                status: Some(ChatStatus::Generating),
                ..chat_of(&acme)
            })
            .collect();
        let inserted = join_all(chats.iter().map(|chat| store.insert(chat))).await;
        assert!(inserted.iter().all(Result::is_ok), "{inserted:?}");
        assert_eq!(
            leases(&stores.database).await,
            30,
            "each generation has its lease"
        );
        let mut turns: Vec<Vec<Message>> = chats.iter().map(first_turn).collect();
        let mut finished_turns: Vec<FinishedTurn> = (chats.iter().zip(&turns))
            .map(|(chat, messages)| turn_of(chat, messages, at(20)))
            .collect();
        finished_turns[7] = turn_with_artifacts(&chats[7], 0, &[("plan", 1)], at(20));
        turns[7] = finished_turns[7].messages.clone();
        let finished = join_all(
            (chats.iter().zip(&finished_turns))
                .map(|(chat, turn)| store.finish_generation(&acme, &chat.id, turn, at(20))),
        )
        .await;
        assert!(finished.iter().all(Result::is_ok), "{finished:?}");

        let stats = store.group_commit_stats().unwrap();
        assert_eq!((stats.batches, stats.batched_writes), (2, 60), "{stats:?}");
        assert_eq!(stats.retried_batches, 0);
        assert_eq!(
            leases(&stores.database).await,
            0,
            "every finished generation's lease ended"
        );
        for (chat, messages) in chats.iter().zip(&turns) {
            assert_eq!(f.get(chat).await.unwrap().updated_at, at(20));
            assert_eq!(&f.messages(chat).await, messages);
        }
        assert_eq!(f.versions(&chats[7]).await, versions(&[("plan", 1)]));
        let mut expected: Vec<UsageRecord> = finished_turns
            .iter()
            .map(|turn| turn.usage.clone())
            .collect();
        expected.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(f.recorded_usage().await, expected);
        // The rollup adds up every record, summed per batch into existing rows too.
        assert_eq!(
            rollup(&stores.database).await,
            Rollup {
                requests: 30,
                input_tokens: 30 * 1_200
            }
        );
        let second: Vec<FinishedTurn> = (chats.iter())
            .map(|chat| turn_of(chat, &[message(chat, 2, Role::User, "more")], at(30)))
            .collect();
        let finished = join_all(
            (chats.iter().zip(&second))
                .map(|(chat, turn)| store.finish_generation(&acme, &chat.id, turn, at(30))),
        )
        .await;
        assert!(finished.iter().all(Result::is_ok), "{finished:?}");
        assert_eq!(
            rollup(&stores.database).await,
            Rollup {
                requests: 60,
                input_tokens: 60 * 1_200
            }
        );
    }

    #[tokio::test]
    async fn a_bad_write_in_a_batch_fails_alone() {
        let (stores, _db) = sql_stores(Backend::Postgres).await;
        let f = Fixture::new(&stores);
        let store = SqlChatStore::new(stores.database.clone());
        let acme = f.organization("Acme").await;
        let taken = f.chat(&acme, "alice").await;
        let earlier = first_turn(&taken);
        f.finish(&taken, &earlier, at(15)).await;

        // New chats, one of them with an id that is taken.
        let mut fresh: Vec<Chat> = (0..10).map(|_| chat_of(&acme)).collect();
        fresh[4].id = taken.id.clone();
        let inserted = join_all(fresh.iter().map(|chat| store.insert(chat))).await;
        for (index, result) in inserted.iter().enumerate() {
            assert_eq!(result.is_ok(), index != 4, "insert {index}: {result:?}");
        }
        assert!(is_conflict(&inserted[4]), "{:?}", inserted[4]);

        // Turns of the chats that were stored, one of an unknown chat and one whose
        // sequence number is taken.
        let stored: Vec<&Chat> = (fresh.iter().enumerate())
            .filter(|(index, _)| *index != 4)
            .map(|(_, chat)| chat)
            .collect();
        let unknown = chat_of(&acme);
        let mut turns: Vec<(&Chat, FinishedTurn)> = (stored.iter())
            .map(|chat| (*chat, turn_of(chat, &first_turn(chat), at(20))))
            .collect();
        turns.insert(
            3,
            (&unknown, turn_of(&unknown, &first_turn(&unknown), at(20))),
        );
        turns.insert(6, (&taken, turn_of(&taken, &first_turn(&taken), at(20))));
        let finished = finish_together(&store, &acme, &turns).await;
        for (index, result) in finished.iter().enumerate() {
            match index {
                3 => assert!(is_not_found(result), "{result:?}"),
                6 => assert!(result.is_err(), "{result:?}"),
                _ => assert!(result.is_ok(), "turn {index}: {result:?}"),
            }
        }
        let stats = store.group_commit_stats().unwrap();
        assert_eq!(stats.retried_batches, 2, "{stats:?}");

        for chat in &stored {
            assert_eq!(f.messages(chat).await, given(&turns, chat));
        }
        assert_eq!(
            f.messages(&taken).await,
            earlier,
            "the taken turn left nothing"
        );
        assert_eq!(f.recorded_usage().await.len(), 1 + stored.len());
        let total = 1 + stored.len() as i64;
        assert_eq!(
            rollup(&stores.database).await,
            Rollup {
                requests: total,
                input_tokens: total * 1_200
            }
        );
    }

    #[tokio::test]
    async fn a_batch_with_a_turn_of_an_unknown_chat_changes_nothing_even_without_messages() {
        let (stores, _db) = sql_stores(Backend::Postgres).await;
        let f = Fixture::new(&stores);
        let store = SqlChatStore::new(stores.database.clone());
        let acme = f.organization("Acme").await;
        let known: Vec<Chat> = (0..3).map(|_| chat_of(&acme)).collect();
        let inserted = join_all(known.iter().map(|chat| store.insert(chat))).await;
        assert!(inserted.iter().all(Result::is_ok), "{inserted:?}");
        // No message refers to the unknown chat, so no foreign key stops its turn: only the
        // batch statement's own check of how many chats it changed does.
        let unknown = chat_of(&acme);
        let mut turns: Vec<(&Chat, FinishedTurn)> = (known.iter())
            .map(|chat| (chat, turn_of(chat, &first_turn(chat), at(20))))
            .collect();
        turns.insert(1, (&unknown, turn_of(&unknown, &[], at(20))));
        let finished = finish_together(&store, &acme, &turns).await;
        for (index, result) in finished.iter().enumerate() {
            match index {
                1 => assert!(is_not_found(result), "{result:?}"),
                _ => assert!(result.is_ok(), "turn {index}: {result:?}"),
            }
        }
        let stats = store.group_commit_stats().unwrap();
        assert_eq!(stats.retried_batches, 1, "{stats:?}");
        assert_eq!(
            f.recorded_usage().await.len(),
            known.len(),
            "the unknown chat's usage was not kept"
        );
        assert_eq!(
            rollup(&stores.database).await,
            Rollup {
                requests: 3,
                input_tokens: 3 * 1_200
            }
        );
        for chat in &known {
            assert_eq!(f.messages(chat).await, given(&turns, chat));
        }
    }

    /// Finishes every turn at once (so they share batches) and returns each outcome.
    async fn finish_together(
        store: &SqlChatStore,
        organization: &OrganizationId,
        turns: &[(&Chat, FinishedTurn)],
    ) -> Vec<Result<(), DomainError>> {
        join_all(
            (turns.iter())
                .map(|(chat, turn)| store.finish_generation(organization, &chat.id, turn, at(20))),
        )
        .await
    }

    /// The messages `turns` gave `chat`.
    fn given(turns: &[(&Chat, FinishedTurn)], chat: &Chat) -> Vec<Message> {
        (turns.iter())
            .find(|(owner, _)| owner.id == chat.id)
            .map(|(_, turn)| turn.messages.clone())
            .unwrap()
    }

    #[tokio::test]
    async fn sqlite_writes_directly() {
        let db = TestDatabase::sqlite().await;
        assert_eq!(
            SqlChatStore::new(db.database.clone()).group_commit_stats(),
            None
        );
    }
}

/// The runners' table on both databases: a lapsed runner's row outlives its failed
/// generations for ten leases (a stalled process that wakes still has it), then goes.
mod runners {
    use super::*;

    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }

    /// How many runners have a row.
    async fn runners(database: &Database) -> i64 {
        const COUNT: &str = "SELECT count(*) AS count FROM generation_runners";
        let counted: Count = match database {
            Database::Postgres(pool) => {
                let mut conn = pool.get().await.unwrap();
                diesel::sql_query(COUNT).get_result(&mut *conn).await
            }
            Database::Sqlite(pool) => {
                let mut conn = pool.get().await.unwrap();
                diesel::sql_query(COUNT).get_result(&mut *conn).await
            }
        }
        .unwrap();
        counted.count
    }

    async fn a_lapsed_runner_is_forgotten_after_ten_leases(backend: Backend) {
        let (stores, _db) = sql_stores(backend).await;
        let f = Fixture::new(&stores);
        let acme = f.organization("Acme").await;
        f.store.keep_alive(at(5)).await.unwrap();
        let chat = f.chat(&acme, "alice").await;
        assert!(f.begin(&chat, at(6)).await);
        let sweeper = f.another_runner();
        sweeper.keep_alive(at(20)).await.unwrap();
        assert_eq!(runners(&stores.database).await, 2);

        // Leases of one second: lapsed at 10, its generation failed, its row kept.
        assert_eq!(
            sweeper
                .fail_interrupted("lapsed", at(10), at(11))
                .await
                .unwrap(),
            1
        );
        assert_eq!(runners(&stores.database).await, 2);
        // Ten leases without renewal (seen at 5, the sweep at 15): kept.
        assert_eq!(
            sweeper
                .fail_interrupted("lapsed", at(14), at(15))
                .await
                .unwrap(),
            0
        );
        assert_eq!(runners(&stores.database).await, 2);
        // More than ten: forgotten; the sweeper, seen at 20, is not.
        assert_eq!(
            sweeper
                .fail_interrupted("lapsed", at(16), at(17))
                .await
                .unwrap(),
            0
        );
        assert_eq!(runners(&stores.database).await, 1);

        // A forgotten runner that renews is back.
        f.store.keep_alive(at(30)).await.unwrap();
        assert_eq!(runners(&stores.database).await, 2);
    }

    #[tokio::test]
    async fn a_lapsed_runner_is_forgotten_after_ten_leases_on_postgres() {
        a_lapsed_runner_is_forgotten_after_ten_leases(Backend::Postgres).await;
    }

    #[tokio::test]
    async fn a_lapsed_runner_is_forgotten_after_ten_leases_on_sqlite() {
        a_lapsed_runner_is_forgotten_after_ten_leases(Backend::Sqlite).await;
    }
}
