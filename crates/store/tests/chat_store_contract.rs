//! The `ChatStore` contract, run against every adapter: SQLite and PostgreSQL, and the
//! in-memory reference (`tessera_chats::memory`) so that the suite itself is checked against
//! the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{collections::HashSet, sync::Arc};

use chrono::{DateTime, Duration, TimeZone, Utc};
use diesel_async::RunQueryDsl;
use tessera_chats::{
    Chat, ChatFilter, ChatId, ChatStatus, ChatStore, Message, MessageId, MessageUsage,
    ModelSnapshot, Source, memory::InMemoryChatStore,
};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest};
use tessera_models::{FinishReason, Role, ToolCall, Usage};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_prompts::SystemPromptId;
use tessera_store::{Backend, Database, SqlChatStore, SqlOrganizationStore, testing::TestDatabase};

// ----- fixture -----

/// Where a contract test runs.
enum Target {
    Database(Backend),
    Memory,
}

impl From<Backend> for Target {
    fn from(backend: Backend) -> Self {
        Target::Database(backend)
    }
}

/// A chat store over one empty database (or one in-memory state).
struct Fixture {
    store: Arc<dyn ChatStore>,
    db: Option<TestDatabase>,
}

impl Fixture {
    async fn new(target: impl Into<Target>) -> Self {
        match target.into() {
            Target::Database(backend) => {
                let db = TestDatabase::of(backend).await;
                Self {
                    store: Arc::new(SqlChatStore::new(db.database.clone())),
                    db: Some(db),
                }
            }
            Target::Memory => Self {
                store: Arc::new(InMemoryChatStore::new()),
                db: None,
            },
        }
    }

    fn database(&self) -> &Database {
        &self.db.as_ref().expect("a database-only test").database
    }

    /// A fresh organization (stored first where chats refer to it).
    async fn organization(&self, name: &str) -> OrganizationId {
        let org = Organization {
            id: OrganizationId::generate(),
            name: name.to_owned(),
            plan: Plan::Pro,
            created_at: at(0),
            updated_at: at(0),
        };
        if let Some(db) = &self.db {
            SqlOrganizationStore::new(db.database.clone())
                .insert(&org)
                .await
                .unwrap();
        }
        org.id
    }

    /// Stores a plain, idle chat of `owner`.
    async fn chat(&self, organization: &OrganizationId, owner: &str) -> Chat {
        let chat = chat(organization, owner);
        self.store.insert(&chat).await.unwrap();
        chat
    }

    /// Stores a chat and soft-deletes it.
    async fn deleted_chat(&self, organization: &OrganizationId, owner: &str) -> Chat {
        let mut chat = self.chat(organization, owner).await;
        chat.deleted_at = Some(at(30));
        chat.updated_at = at(30);
        assert!(self.store.update(&chat).await.unwrap());
        chat
    }

    async fn get(&self, chat: &Chat) -> Option<Chat> {
        self.store
            .get(&chat.organization_id, &chat.id)
            .await
            .unwrap()
    }

    async fn messages(&self, chat: &Chat) -> Vec<Message> {
        self.store
            .messages(&chat.organization_id, &chat.id)
            .await
            .unwrap()
    }

    async fn begin(&self, chat: &Chat, when: DateTime<Utc>) -> bool {
        self.store
            .begin_generation(&chat.organization_id, &chat.id, when)
            .await
            .unwrap()
    }

    async fn finish(&self, chat: &Chat, messages: &[Message], when: DateTime<Utc>) {
        self.store
            .finish_generation(&chat.organization_id, &chat.id, messages, when)
            .await
            .unwrap();
    }

    /// Every chat of the filter, newest first.
    async fn all(&self, filter: &ChatFilter) -> Vec<Chat> {
        self.store
            .list(filter, &PageRequest::first(Limit::new(100).unwrap()))
            .await
            .unwrap()
    }

    /// Runs one SQL statement as is (to plant rows the store would never write).
    async fn run_sql(&self, sql: &str) {
        match self.database() {
            Database::Postgres(pool) => {
                let mut conn = pool.get().await.unwrap();
                diesel::sql_query(sql).execute(&mut *conn).await.unwrap();
            }
            Database::Sqlite(pool) => {
                let mut conn = pool.get().await.unwrap();
                diesel::sql_query(sql).execute(&mut *conn).await.unwrap();
            }
        };
    }
}

// ----- records -----

/// Microsecond precision, as the domain's clock produces; `at(s)` is `s` seconds later.
fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap()
        + Duration::microseconds(123_456)
        + Duration::seconds(seconds)
}

/// A plain chat: no system prompt, no title, idle, live.
fn chat(organization: &OrganizationId, owner: &str) -> Chat {
    Chat {
        id: ChatId::generate(),
        organization_id: organization.clone(),
        owner: owner.to_owned(),
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

/// A chat with every optional field set and unicode text.
fn rich_chat(organization: &OrganizationId) -> Chat {
    Chat {
        model: ModelSnapshot {
            model_id: "mdl_0192b2c1d2e37f00a1b2c3d4e5f60718".to_owned(),
            base_model_id: "openai/gpt-4o-mini".to_owned(),
            system_prompt: Some(
                "Du bist ein hilfreicher Assistent. 你好 — \"knapp\"\n\t✓".to_owned(),
            ),
            system_prompt_id: Some(SystemPromptId::generate()),
        },
        title: Some("Ünïcode – 研究 ✓ 🚀 'quoted'".to_owned()),
        status: Some(ChatStatus::Error),
        error: Some("upstream timed out – 超时".to_owned()),
        deleted_at: Some(at(5) + Duration::microseconds(1)),
        created_at: at(1) + Duration::microseconds(999_999),
        updated_at: at(6) + Duration::microseconds(654_321),
        ..chat(organization, "user|auth0|Ünïcode 42")
    }
}

/// A plain message of `chat`.
fn message(chat: &Chat, sequence: u32, role: Role, content: &str) -> Message {
    Message {
        id: MessageId::generate(),
        chat_id: chat.id.clone(),
        sequence,
        role,
        content: content.to_owned(),
        reasoning: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        sources: Vec::new(),
        usage: None,
        created_at: at(10),
    }
}

fn usage(input: u32, output: u32, reasoning: u32, finish_reason: FinishReason) -> MessageUsage {
    MessageUsage {
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            reasoning_tokens: reasoning,
        },
        finish_reason,
    }
}

fn source(id: &str, dataset: Option<&str>, score: f32) -> Source {
    Source {
        id: id.to_owned(),
        file_id: format!("fil_{id}"),
        dataset_id: dataset.map(str::to_owned),
        title: dataset.map(|d| format!("Handbuch – {d} ✓")),
        text: "Passage «quoted» – 段落\nsecond line".to_owned(),
        score,
    }
}

/// One turn with every kind of message and every field set somewhere, from `sequence` on.
fn rich_turn(chat: &Chat, sequence: u32) -> Vec<Message> {
    let when = at(20) + Duration::microseconds(7);
    vec![
        Message {
            created_at: when,
            ..message(chat, sequence, Role::System, "Antworte knapp. 简洁")
        },
        Message {
            created_at: when,
            ..message(chat, sequence + 1, Role::User, "Wie wird das Wetter? ☀️🌧")
        },
        Message {
            reasoning: Some("The user asks about weather; call the tool.".to_owned()),
            tool_calls: vec![
                ToolCall {
                    id: "call_1".to_owned(),
                    name: "weather".to_owned(),
                    arguments: r#"{"city":"Zürich","days":[1,2]}"#.to_owned(),
                },
                ToolCall {
                    id: "call_2".to_owned(),
                    name: "time".to_owned(),
                    arguments: "{}".to_owned(),
                },
            ],
            usage: Some(usage(1200, 45, 30, FinishReason::ToolCalls)),
            created_at: when + Duration::microseconds(1),
            ..message(chat, sequence + 2, Role::Assistant, "")
        },
        Message {
            tool_call_id: Some("call_1".to_owned()),
            created_at: when + Duration::microseconds(2),
            ..message(
                chat,
                sequence + 3,
                Role::Tool,
                r#"{"temp":21.5,"sky":"klar"}"#,
            )
        },
        Message {
            tool_call_id: Some("call_2".to_owned()),
            created_at: when + Duration::microseconds(2),
            ..message(chat, sequence + 4, Role::Tool, "12:00")
        },
        Message {
            reasoning: Some(String::new()),
            sources: vec![
                source("chk_1", Some("dst_wetter"), 0.875),
                source("chk_2", None, 0.1),
            ],
            usage: Some(usage(u32::MAX, 0, 0, FinishReason::Other("x".to_owned()))),
            created_at: when + Duration::microseconds(3),
            ..message(chat, sequence + 5, Role::Assistant, "Sonnig, 21,5 °C. ✓")
        },
        Message {
            usage: Some(usage(10, 20, 0, FinishReason::Stop)),
            ..message(chat, sequence + 6, Role::Assistant, "stop")
        },
        Message {
            usage: Some(usage(10, 4096, 0, FinishReason::Length)),
            ..message(chat, sequence + 7, Role::Assistant, "length")
        },
        Message {
            usage: Some(usage(10, 0, 0, FinishReason::ContentFilter)),
            ..message(chat, sequence + 8, Role::Assistant, "")
        },
        Message {
            usage: Some(usage(1, 2, 3, FinishReason::Other(String::new()))),
            ..message(chat, sequence + 9, Role::Assistant, "empty reason")
        },
    ]
}

/// A filter of an organization's live chats, of every owner.
fn live(organization: &OrganizationId) -> ChatFilter {
    ChatFilter {
        organization: organization.clone(),
        owner: None,
        include_deleted: false,
    }
}

fn owned_by(organization: &OrganizationId, owner: &str) -> ChatFilter {
    ChatFilter {
        owner: Some(owner.to_owned()),
        ..live(organization)
    }
}

fn with_deleted(filter: ChatFilter) -> ChatFilter {
    ChatFilter {
        include_deleted: true,
        ..filter
    }
}

fn page(limit: i64, after: Option<&ChatId>) -> PageRequest<ChatId> {
    PageRequest {
        limit: Limit::new(limit).unwrap(),
        after: after.cloned(),
    }
}

/// Newest first: by id, descending.
fn newest_first(mut chats: Vec<Chat>) -> Vec<Chat> {
    chats.sort_by(|a, b| b.id.cmp(&a.id));
    chats
}

fn is_not_found<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::NotFound { .. }))
}

fn is_internal<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::Internal { .. }))
}

// ----- chats -----

async fn chats_read_back_unchanged(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;

    let rich = rich_chat(&acme);
    f.store.insert(&rich).await.unwrap();
    assert_eq!(f.get(&rich).await, Some(rich.clone()), "deleted or not");

    let plain = f.chat(&acme, "alice").await;
    assert_eq!(f.get(&plain).await, Some(plain.clone()));

    // A new chat may be stored already generating (its first turn starts with it).
    let generating = Chat {
        status: Some(ChatStatus::Generating),
        title: Some("é".repeat(500)),
        ..chat(&acme, "bob")
    };
    f.store.insert(&generating).await.unwrap();
    assert_eq!(f.get(&generating).await, Some(generating.clone()));

    assert_eq!(f.store.get(&acme, &ChatId::generate()).await.unwrap(), None);
    assert!(f.messages(&plain).await.is_empty());
    assert!(
        f.store
            .messages(&acme, &ChatId::generate())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 2);
    assert_eq!(f.store.count(&with_deleted(live(&acme))).await.unwrap(), 3);
}

async fn duplicate_chat_ids_are_refused(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let original = f.chat(&acme, "alice").await;
    let again = Chat {
        title: Some("again".to_owned()),
        owner: "mallory".to_owned(),
        ..original.clone()
    };
    let refused = f.store.insert(&again).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.get(&original).await, Some(original));
    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 1);
}

async fn another_organization_cannot_reach_a_chat(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let chat = f.chat(&acme, "alice").await;
    let turn = rich_turn(&chat, 0);
    f.finish(&chat, &turn, at(20)).await;
    let stored = f.get(&chat).await.unwrap();

    assert_eq!(f.store.get(&globex, &chat.id).await.unwrap(), None);
    assert!(
        f.store
            .messages(&globex, &chat.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(f.all(&with_deleted(live(&globex))).await.is_empty());
    assert!(
        f.all(&with_deleted(owned_by(&globex, "alice")))
            .await
            .is_empty()
    );
    assert_eq!(
        f.store.count(&with_deleted(live(&globex))).await.unwrap(),
        0
    );
    assert!(
        !f.store
            .begin_generation(&globex, &chat.id, at(40))
            .await
            .unwrap()
    );
    let more = vec![message(&chat, 10, Role::User, "hijacked")];
    let finished = f
        .store
        .finish_generation(&globex, &chat.id, &more, at(41))
        .await;
    assert!(is_not_found(&finished), "{finished:?}");
    let failed = f
        .store
        .fail_generation(&globex, &chat.id, "hijacked", at(42))
        .await;
    assert!(is_not_found(&failed), "{failed:?}");
    let hijacked = Chat {
        organization_id: globex.clone(),
        title: Some("hijacked".to_owned()),
        deleted_at: Some(at(43)),
        updated_at: at(43),
        ..stored.clone()
    };
    assert!(!f.store.update(&hijacked).await.unwrap());

    assert_eq!(
        f.get(&chat).await,
        Some(stored.clone()),
        "the owner's chat is untouched"
    );
    assert_eq!(f.messages(&chat).await, turn);
    assert_eq!(f.all(&live(&acme)).await, vec![stored]);
}

async fn lists_are_newest_first_and_filtered(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let mut alice = Vec::new();
    let mut bob = Vec::new();
    let mut deleted = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..12 {
        let owner = if i % 2 == 0 { "alice" } else { "bob" };
        if i % 4 == 3 {
            deleted.push(f.deleted_chat(&acme, owner).await);
        } else if owner == "alice" {
            alice.push(f.chat(&acme, owner).await);
        } else {
            bob.push(f.chat(&acme, owner).await);
        }
        // Interleaved chats of another organization, of the same owner names, never show up.
        if i % 3 == 0 {
            theirs.push(f.chat(&globex, owner).await);
        }
    }
    let live_all = newest_first([alice.clone(), bob.clone()].concat());
    let every = newest_first([live_all.clone(), deleted.clone()].concat());
    let alice_all = newest_first(
        [
            alice.clone(),
            deleted
                .iter()
                .filter(|c| c.owner == "alice")
                .cloned()
                .collect(),
        ]
        .concat(),
    );

    assert_eq!(f.all(&live(&acme)).await, live_all);
    assert_eq!(
        f.all(&owned_by(&acme, "alice")).await,
        newest_first(alice.clone())
    );
    assert_eq!(
        f.all(&owned_by(&acme, "bob")).await,
        newest_first(bob.clone())
    );
    assert_eq!(f.all(&with_deleted(live(&acme))).await, every);
    assert_eq!(
        f.all(&with_deleted(owned_by(&acme, "alice"))).await,
        alice_all
    );
    assert!(f.all(&owned_by(&acme, "carol")).await.is_empty());
    assert_eq!(f.all(&live(&globex)).await, newest_first(theirs.clone()));

    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 9);
    assert_eq!(f.store.count(&with_deleted(live(&acme))).await.unwrap(), 12);
    assert_eq!(f.store.count(&owned_by(&acme, "alice")).await.unwrap(), 6);
    assert_eq!(
        f.store
            .count(&with_deleted(owned_by(&acme, "bob")))
            .await
            .unwrap(),
        6
    );
    assert_eq!(f.store.count(&owned_by(&acme, "carol")).await.unwrap(), 0);
    assert_eq!(f.store.count(&live(&globex)).await.unwrap(), 4);
    assert_eq!(
        f.store
            .count(&live(&OrganizationId::generate()))
            .await
            .unwrap(),
        0
    );

    // A page fetches one extra row to tell whether more exist; `after` is exclusive.
    let store = &f.store;
    assert_eq!(
        store.list(&live(&acme), &page(2, None)).await.unwrap(),
        live_all[..3]
    );
    assert_eq!(
        store
            .list(&live(&acme), &page(2, Some(&live_all[1].id)))
            .await
            .unwrap(),
        live_all[2..5]
    );
    assert!(
        store
            .list(&live(&acme), &page(2, Some(&live_all[8].id)))
            .await
            .unwrap()
            .is_empty()
    );
    // A cursor naming a deleted chat, or another organization's, still pages by id.
    for cursor in [&deleted[1].id, &theirs[2].id] {
        let expected: Vec<Chat> = live_all
            .iter()
            .filter(|c| &c.id < cursor)
            .take(3)
            .cloned()
            .collect();
        assert_eq!(
            store
                .list(&live(&acme), &page(2, Some(cursor)))
                .await
                .unwrap(),
            expected
        );
    }
    assert!(
        store
            .list(&live(&OrganizationId::generate()), &page(10, None))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn keyset_pages_have_no_gaps_or_duplicates(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let mut mine = Vec::new();
    for i in 0..25 {
        mine.push(f.chat(&acme, "alice").await);
        // Chats of another owner and deleted ones are skipped, not counted against a page.
        if i % 5 == 0 {
            f.chat(&acme, "bob").await;
            f.deleted_chat(&acme, "alice").await;
        }
    }
    let expected = newest_first(mine);
    let filter = owned_by(&acme, "alice");

    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut after: Option<ChatId> = None;
    loop {
        let mut rows = f
            .store
            .list(&filter, &page(10, after.as_ref()))
            .await
            .unwrap();
        let has_more = rows.len() > 10;
        rows.truncate(10);
        sizes.push(rows.len());
        after = rows.last().map(|c| c.id.clone());
        seen.extend(rows);
        if sizes.len() == 1 {
            // A chat created while paging is newer than every cursor: later pages skip it.
            f.chat(&acme, "alice").await;
        }
        if !has_more {
            break;
        }
    }
    assert_eq!(sizes, [10, 10, 5]);
    let unique: HashSet<&ChatId> = seen.iter().map(|c| &c.id).collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates");
    assert_eq!(seen, expected, "no gaps, newest first");
    assert_eq!(f.store.count(&filter).await.unwrap(), 26);
}

// ----- messages and generations -----

async fn messages_read_back_unchanged_in_sequence_order(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let other = f.chat(&acme, "alice").await;

    let first = rich_turn(&chat, 0);
    f.finish(&chat, &first, at(20)).await;
    assert_eq!(f.messages(&chat).await, first);

    let second = vec![
        message(&chat, 10, Role::User, "Danke!"),
        Message {
            usage: Some(usage(5, 6, 0, FinishReason::Stop)),
            ..message(&chat, 11, Role::Assistant, "Gern geschehen.")
        },
    ];
    f.finish(&chat, &second, at(21)).await;
    assert_eq!(f.messages(&chat).await, [first, second].concat());

    // Another chat numbers its messages from 0 too.
    let theirs = vec![message(&other, 0, Role::User, "hello")];
    f.finish(&other, &theirs, at(22)).await;
    assert_eq!(f.messages(&other).await, theirs);
    assert_eq!(f.messages(&chat).await.len(), 12);
}

async fn messages_of_one_turn_come_back_in_sequence_order(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let turn = rich_turn(&chat, 0);
    let mut shuffled = turn.clone();
    shuffled.reverse();
    shuffled.swap(0, 4);
    f.finish(&chat, &shuffled, at(20)).await;
    assert_eq!(f.messages(&chat).await, turn);
}

async fn one_generation_runs_at_a_time(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;

    assert!(f.begin(&chat, at(10)).await);
    let generating = Chat {
        status: Some(ChatStatus::Generating),
        updated_at: at(10),
        ..chat.clone()
    };
    assert_eq!(f.get(&chat).await, Some(generating.clone()));
    assert!(!f.begin(&chat, at(11)).await, "already generating");
    assert_eq!(
        f.get(&chat).await,
        Some(generating),
        "a refused start changes nothing"
    );

    f.finish(&chat, &[], at(12)).await;
    assert!(f.begin(&chat, at(13)).await, "finished: may start again");

    // A failed generation may be retried; the new start clears the error.
    f.store
        .fail_generation(&acme, &chat.id, "boom", at(14))
        .await
        .unwrap();
    assert!(f.begin(&chat, at(15)).await);
    let retried = f.get(&chat).await.unwrap();
    assert_eq!(retried.status, Some(ChatStatus::Generating));
    assert_eq!(retried.error, None);
    assert_eq!(retried.updated_at, at(15));

    // Deleted chats and unknown ones never start.
    let deleted = f.deleted_chat(&acme, "alice").await;
    assert!(!f.begin(&deleted, at(16)).await);
    assert_eq!(f.get(&deleted).await, Some(deleted.clone()));
    let unknown = chat_of(&acme);
    assert!(!f.begin(&unknown, at(16)).await);
    assert_eq!(f.get(&unknown).await, None);

    assert_eq!(f.get(&untouched).await, Some(untouched));
}

fn chat_of(organization: &OrganizationId) -> Chat {
    chat(organization, "alice")
}

async fn finishing_appends_messages_and_clears_the_status(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    f.store
        .fail_generation(&acme, &chat.id, "old failure", at(5))
        .await
        .unwrap();
    assert!(f.begin(&chat, at(10)).await);
    let turn = rich_turn(&chat, 0);
    f.finish(&chat, &turn, at(20)).await;
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: None,
            error: None,
            updated_at: at(20),
            ..chat.clone()
        })
    );
    assert_eq!(f.messages(&chat).await, turn);

    // Finishing also clears a failure (whatever the status was).
    f.store
        .fail_generation(&acme, &chat.id, "late failure", at(21))
        .await
        .unwrap();
    f.finish(&chat, &[], at(22)).await;
    let idle = f.get(&chat).await.unwrap();
    assert_eq!(
        (idle.status, idle.error, idle.updated_at),
        (None, None, at(22))
    );

    let unknown = chat_of(&acme);
    let finished = f
        .store
        .finish_generation(&acme, &unknown.id, &[], at(23))
        .await;
    assert!(is_not_found(&finished), "{finished:?}");
}

async fn a_taken_sequence_number_rolls_the_whole_finish_back(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(10)).await);
    let first = vec![
        message(&chat, 0, Role::User, "one"),
        message(&chat, 1, Role::Assistant, "two"),
    ];
    f.finish(&chat, &first, at(11)).await;
    assert!(f.begin(&chat, at(12)).await);
    let generating = f.get(&chat).await.unwrap();

    // The new messages come first, the taken number last: nothing of the batch stays.
    let colliding = vec![
        message(&chat, 2, Role::User, "three"),
        message(&chat, 3, Role::Assistant, "four"),
        message(&chat, 1, Role::Assistant, "taken"),
    ];
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &colliding, at(13))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.messages(&chat).await, first, "no new messages");
    assert_eq!(
        f.get(&chat).await,
        Some(generating.clone()),
        "status and time unchanged"
    );

    // A message id that is taken is refused the same way.
    let reused = vec![
        message(&chat, 2, Role::User, "three"),
        Message {
            id: first[0].id.clone(),
            ..message(&chat, 3, Role::Assistant, "four")
        },
    ];
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &reused, at(14))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.messages(&chat).await, first);
    assert_eq!(f.get(&chat).await, Some(generating));

    // The generation can still finish properly.
    let next = vec![message(&chat, 2, Role::User, "three")];
    f.finish(&chat, &next, at(15)).await;
    assert_eq!(f.messages(&chat).await, [first, next].concat());
    assert_eq!(f.get(&chat).await.unwrap().status, None);
}

async fn failing_records_the_error(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;
    f.finish(&chat, &[message(&chat, 0, Role::User, "hi")], at(5))
        .await;
    let before = f.messages(&chat).await;
    assert!(f.begin(&chat, at(10)).await);
    f.store
        .fail_generation(&acme, &chat.id, "provider said 500 – 错误", at(11))
        .await
        .unwrap();
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: Some(ChatStatus::Error),
            error: Some("provider said 500 – 错误".to_owned()),
            updated_at: at(11),
            ..chat.clone()
        })
    );
    assert_eq!(f.messages(&chat).await, before, "nothing is appended");

    // A later failure replaces the reason.
    f.store
        .fail_generation(&acme, &chat.id, "again", at(12))
        .await
        .unwrap();
    assert_eq!(f.get(&chat).await.unwrap().error.as_deref(), Some("again"));

    let failed = f
        .store
        .fail_generation(&acme, &ChatId::generate(), "nobody", at(13))
        .await;
    assert!(is_not_found(&failed), "{failed:?}");
    assert_eq!(f.get(&untouched).await, Some(untouched));
}

async fn interrupted_generations_fail_in_every_organization(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let mut running = Vec::new();
    for organization in [&acme, &acme, &globex] {
        let chat = f.chat(organization, "alice").await;
        assert!(f.begin(&chat, at(10)).await);
        running.push(chat);
    }
    // A chat deleted while it generates is still recovered.
    let deleted_running = Chat {
        status: Some(ChatStatus::Generating),
        deleted_at: Some(at(9)),
        ..chat(&globex, "bob")
    };
    f.store.insert(&deleted_running).await.unwrap();
    running.push(deleted_running);

    let idle = f.chat(&acme, "alice").await;
    let failed = f.chat(&globex, "alice").await;
    f.store
        .fail_generation(&globex, &failed.id, "earlier", at(11))
        .await
        .unwrap();
    let failed = f.get(&failed).await.unwrap();
    let deleted = f.deleted_chat(&acme, "alice").await;

    assert_eq!(
        f.store
            .fail_interrupted("interrupted by a restart", at(20))
            .await
            .unwrap(),
        4
    );
    for chat in &running {
        let now = f.get(chat).await.unwrap();
        assert_eq!(now.status, Some(ChatStatus::Error), "{}", chat.id);
        assert_eq!(now.error.as_deref(), Some("interrupted by a restart"));
        assert_eq!(now.updated_at, at(20));
        assert_eq!(now.deleted_at, chat.deleted_at);
    }
    assert_eq!(f.get(&idle).await, Some(idle));
    assert_eq!(f.get(&failed).await, Some(failed));
    assert_eq!(f.get(&deleted).await, Some(deleted));

    assert_eq!(f.store.fail_interrupted("again", at(21)).await.unwrap(), 0);
    assert!(
        f.begin(&running[0], at(22)).await,
        "recovered chats can start"
    );
}

async fn update_saves_title_deletion_and_time_only(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(5)).await);
    let stored = f.get(&chat).await.unwrap();

    // Everything else in the record is ignored.
    let attempt = Chat {
        title: Some("Neuer Titel – 新标题".to_owned()),
        deleted_at: Some(at(10) + Duration::microseconds(5)),
        updated_at: at(10) + Duration::microseconds(5),
        owner: "mallory".to_owned(),
        model: ModelSnapshot {
            model_id: "other".to_owned(),
            base_model_id: "other".to_owned(),
            system_prompt: Some("other".to_owned()),
            system_prompt_id: Some(SystemPromptId::generate()),
        },
        status: Some(ChatStatus::Error),
        error: Some("other".to_owned()),
        created_at: at(99),
        ..stored.clone()
    };
    assert!(f.store.update(&attempt).await.unwrap());
    let saved = Chat {
        title: attempt.title.clone(),
        deleted_at: attempt.deleted_at,
        updated_at: attempt.updated_at,
        ..stored.clone()
    };
    assert_eq!(f.get(&chat).await, Some(saved.clone()));
    assert!(f.all(&live(&acme)).await.iter().all(|c| c.id != chat.id));

    // Cleared and restored.
    let restored = Chat {
        title: None,
        deleted_at: None,
        updated_at: at(11),
        ..saved
    };
    assert!(f.store.update(&restored).await.unwrap());
    assert_eq!(f.get(&chat).await, Some(restored.clone()));
    assert!(f.all(&live(&acme)).await.contains(&restored));

    assert!(!f.store.update(&chat_of(&acme)).await.unwrap());
    assert_eq!(f.get(&untouched).await, Some(untouched));
    assert_eq!(f.store.count(&with_deleted(live(&acme))).await.unwrap(), 2);
}

async fn concurrent_starts_have_one_winner(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    for round in 0..5 {
        let barrier = Arc::new(tokio::sync::Barrier::new(10));
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let (store, barrier) = (f.store.clone(), barrier.clone());
                let (organization, id) = (acme.clone(), chat.id.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .begin_generation(&organization, &id, at(100 + i))
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut started = 0;
        for task in tasks {
            if task.await.unwrap() {
                started += 1;
            }
        }
        assert_eq!(started, 1, "round {round}");
        assert_eq!(
            f.get(&chat).await.unwrap().status,
            Some(ChatStatus::Generating)
        );
        let turn = vec![message(&chat, round * 2, Role::User, "go")];
        f.finish(&chat, &turn, at(200)).await;
    }
    assert_eq!(f.messages(&chat).await.len(), 5);
}

// ----- database only -----

async fn references_must_exist(backend: Backend) {
    let f = Fixture::new(backend).await;
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
        .finish_generation(&acme, &chat.id, &stray, at(11))
        .await;
    assert!(is_internal(&refused), "{refused:?}");
    assert!(f.messages(&chat).await.is_empty());
    assert!(f.messages(&other).await.is_empty());
    assert_eq!(
        f.get(&chat).await.unwrap().status,
        Some(ChatStatus::Generating)
    );
}

async fn corrupt_rows_are_internal_errors(backend: Backend) {
    let f = Fixture::new(backend).await;
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
    ] {
        f.run_sql(&format!(
            "UPDATE chat_messages SET {column} = {value} WHERE id = '{}'",
            turn[0].id
        ))
        .await;
        let read = f.store.messages(&acme, &chat.id).await;
        assert!(is_internal(&read), "{column} = {value}: {read:?}");
        f.run_sql(&format!(
            "UPDATE chat_messages SET {column} = '[]' WHERE id = '{}'",
            turn[0].id
        ))
        .await;
    }
    assert_eq!(f.messages(&chat).await, turn);

    // A finish reason written by something else reads back as `Other`.
    f.run_sql(&format!(
        "UPDATE chat_messages SET finish_reason = 'eos_token' WHERE id = '{}'",
        turn[0].id
    ))
    .await;
    let read = f.messages(&chat).await;
    assert_eq!(
        read[0].usage.as_ref().map(|u| &u.finish_reason),
        Some(&FinishReason::Other("eos_token".to_owned()))
    );

    // A row whose id is not a chat id (one without messages, which would refer to it).
    let bare = f.chat(&acme, "alice").await;
    f.run_sql(&format!(
        "UPDATE chats SET id = 'cht_not-a-uuid' WHERE id = '{}'",
        bare.id
    ))
    .await;
    let listed = f.store.list(&live(&acme), &page(10, None)).await;
    assert!(is_internal(&listed), "{listed:?}");
    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 2);
    assert_eq!(f.get(&chat).await.map(|c| c.id), Some(chat.id.clone()));
}

tessera_store::on_both_databases!(
    chats_read_back_unchanged,
    duplicate_chat_ids_are_refused,
    another_organization_cannot_reach_a_chat,
    lists_are_newest_first_and_filtered,
    keyset_pages_have_no_gaps_or_duplicates,
    messages_read_back_unchanged_in_sequence_order,
    messages_of_one_turn_come_back_in_sequence_order,
    one_generation_runs_at_a_time,
    finishing_appends_messages_and_clears_the_status,
    a_taken_sequence_number_rolls_the_whole_finish_back,
    failing_records_the_error,
    interrupted_generations_fail_in_every_organization,
    update_saves_title_deletion_and_time_only,
    concurrent_starts_have_one_winner,
    references_must_exist,
    corrupt_rows_are_internal_errors,
);

/// The same contract on the in-memory reference store (without the database-only tests).
mod memory {
    macro_rules! on_memory {
        ($($test:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() { super::$test(super::Target::Memory).await }
            )*
        };
    }

    on_memory!(
        chats_read_back_unchanged,
        duplicate_chat_ids_are_refused,
        another_organization_cannot_reach_a_chat,
        lists_are_newest_first_and_filtered,
        keyset_pages_have_no_gaps_or_duplicates,
        messages_read_back_unchanged_in_sequence_order,
        messages_of_one_turn_come_back_in_sequence_order,
        one_generation_runs_at_a_time,
        finishing_appends_messages_and_clears_the_status,
        a_taken_sequence_number_rolls_the_whole_finish_back,
        failing_records_the_error,
        interrupted_generations_fail_in_every_organization,
        update_saves_title_deletion_and_time_only,
        concurrent_starts_have_one_winner,
    );
}
