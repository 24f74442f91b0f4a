//! The `ChatStore` contract, run against every adapter: SQLite and PostgreSQL, and the
//! in-memory reference (`tessera_chats::memory`) so that the suite itself is checked against
//! the behaviour it stands for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use chrono::{DateTime, Duration, NaiveDateTime, TimeZone, Utc};
use diesel::sql_types::{BigInt, Text, Timestamp};
use diesel_async::RunQueryDsl;
use tessera_chats::{
    Artifact, ArtifactFilter, ArtifactId, ArtifactKind, ArtifactStore, Attachment, AttachmentKind,
    Chat, ChatFilter, ChatId, ChatStatus, ChatStore, FinishedTurn, GenerationLeases, Message,
    MessageId, MessageUsage, ModelSnapshot, Source, SourceLocation, memory::InMemoryChatStore,
};
use tessera_kernel::{DomainError, Limit, OrganizationId, PageRequest, PrincipalKind};
use tessera_models::{FailedAttempt, FinishReason, Role, Route, ToolCall, Usage};
use tessera_organizations::{Organization, OrganizationStore, Plan};
use tessera_prompts::SystemPromptId;
use tessera_store::{
    Backend, Database, SqlArtifactStore, SqlChatStore, SqlOrganizationStore, testing::TestDatabase,
};
use tessera_usage::{FAILED, Tokens, UsageId, UsageRecord};

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

/// A store of chats and the leases of the generations it begins, as one runner (process).
trait Runner: ChatStore + GenerationLeases {}

impl<T: ChatStore + GenerationLeases> Runner for T {}

/// A chat store and the artifact store reading what it wrote, over one empty database (or
/// one in-memory state).
struct Fixture {
    store: Arc<dyn Runner>,
    artifacts: Arc<dyn ArtifactStore>,
    memory: Option<Arc<InMemoryChatStore>>,
    db: Option<TestDatabase>,
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
            },
            credits: count(row.credits),
            latency_ms: count(row.latency_ms),
            finish_reason: row.finish_reason,
            created_at: DateTime::<Utc>::from_naive_utc_and_offset(row.created_at, Utc),
        }
    }
}

impl Fixture {
    async fn new(target: impl Into<Target>) -> Self {
        match target.into() {
            Target::Database(backend) => {
                let db = TestDatabase::of(backend).await;
                Self {
                    store: Arc::new(SqlChatStore::new(db.database.clone())),
                    artifacts: Arc::new(SqlArtifactStore::new(db.database.clone())),
                    memory: None,
                    db: Some(db),
                }
            }
            Target::Memory => {
                let memory = Arc::new(InMemoryChatStore::new());
                Self {
                    store: memory.clone(),
                    artifacts: memory.clone(),
                    memory: Some(memory),
                    db: None,
                }
            }
        }
    }

    fn database(&self) -> &Database {
        &self.db.as_ref().expect("a database-only test").database
    }

    /// A store of the same chats for another runner: what another process (replica) on the
    /// same database is.
    fn another_runner(&self) -> Arc<dyn Runner> {
        match (&self.memory, &self.db) {
            (Some(memory), _) => Arc::new(memory.another_runner()),
            (None, Some(db)) => Arc::new(SqlChatStore::new(db.database.clone())),
            (None, None) => unreachable!("a fixture has a store"),
        }
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
                .insert(&org, &[])
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

    /// Finishes a generation with `messages`, the usage of its answer and no artifacts.
    async fn finish(&self, chat: &Chat, messages: &[Message], when: DateTime<Utc>) {
        self.finish_turn(chat, &turn_of(chat, messages, when), when)
            .await;
    }

    async fn finish_turn(&self, chat: &Chat, turn: &FinishedTurn, when: DateTime<Utc>) {
        self.store
            .finish_generation(&chat.organization_id, &chat.id, turn, when)
            .await
            .unwrap();
    }

    /// Every usage record stored (by any organization), ordered by id.
    async fn recorded_usage(&self) -> Vec<UsageRecord> {
        let mut records: Vec<UsageRecord> = match (&self.memory, &self.db) {
            (Some(memory), _) => memory.usage_records(),
            (None, Some(db)) => {
                let sql = "SELECT * FROM usage_records";
                let rows: Vec<StoredUsage> = match &db.database {
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
            (None, None) => unreachable!("a fixture has a store"),
        };
        records.sort_by(|a, b| a.id.cmp(&b.id));
        records
    }

    /// Every artifact the filter shows, newest first.
    async fn all_artifacts(&self, filter: &ArtifactFilter) -> Vec<Artifact> {
        self.artifacts
            .list(filter, &PageRequest::first(Limit::new(100).unwrap()))
            .await
            .unwrap()
    }

    async fn versions(&self, chat: &Chat) -> HashMap<String, u32> {
        self.store
            .artifact_versions(&chat.organization_id, &chat.id)
            .await
            .unwrap()
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
        attachments: Vec::new(),
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
        route: None,
    }
}

/// What an answer of `chat` consumed (answer `message_id`), as the chat service records it.
fn usage_record(chat: &Chat, message_id: &MessageId, when: DateTime<Utc>) -> UsageRecord {
    let tokens = Tokens {
        input: 1_200,
        output: 345,
        reasoning: 67,
    };
    UsageRecord {
        id: UsageId::generate(),
        organization_id: chat.organization_id.clone(),
        principal: chat.owner.clone(),
        principal_kind: PrincipalKind::User,
        chat_id: chat.id.to_string(),
        message_id: message_id.to_string(),
        model_id: chat.model.model_id.clone(),
        parent_model_id: chat.model.base_model_id.clone(),
        provider: "local".to_owned(),
        credits: tokens.credits(3),
        tokens,
        latency_ms: 1_234,
        finish_reason: "stop".to_owned(),
        created_at: when,
    }
}

/// A finished turn: `messages`, the usage of its answer (the last message, or an answer
/// that was not stored when there are none), no artifacts.
fn turn_of(chat: &Chat, messages: &[Message], when: DateTime<Utc>) -> FinishedTurn {
    let answer = messages
        .last()
        .map_or_else(MessageId::generate, |m| m.id.clone());
    FinishedTurn {
        messages: messages.to_vec(),
        usage: usage_record(chat, &answer, when),
        artifacts: Vec::new(),
        error: None,
    }
}

/// Version `version` of artifact `identifier`, found in `answer` of `chat`.
fn artifact(chat: &Chat, answer: &Message, identifier: &str, version: u32) -> Artifact {
    Artifact {
        id: ArtifactId::generate(),
        organization_id: chat.organization_id.clone(),
        owner: chat.owner.clone(),
        chat_id: chat.id.clone(),
        message_id: answer.id.clone(),
        kind: ArtifactKind::Code,
        language: Some("rust".to_owned()),
        title: format!("Skript – {identifier} ✓"),
        identifier: identifier.to_owned(),
        version,
        content: format!("fn main() {{\n    println!(\"{identifier} v{version} – 你好\");\n}}\n"),
        created_at: answer.created_at + Duration::microseconds(1),
    }
}

/// A markdown artifact without a language.
fn document(chat: &Chat, answer: &Message, identifier: &str, version: u32) -> Artifact {
    Artifact {
        kind: ArtifactKind::Markdown,
        language: None,
        content: format!("# {identifier}\n\n*Version {version}* — «zitiert»"),
        ..artifact(chat, answer, identifier, version)
    }
}

/// A user message and an answer from `sequence` on, with `artifacts` (identifier, version)
/// found in the answer.
fn turn_with_artifacts(
    chat: &Chat,
    sequence: u32,
    artifacts: &[(&str, u32)],
    when: DateTime<Utc>,
) -> FinishedTurn {
    let messages = vec![
        Message {
            created_at: when,
            ..message(chat, sequence, Role::User, "Schreib mir ein Skript.")
        },
        Message {
            usage: Some(usage(100, 50, 0, FinishReason::Stop)),
            created_at: when,
            ..message(chat, sequence + 1, Role::Assistant, "Hier ist es.")
        },
    ];
    let artifacts = artifacts
        .iter()
        .enumerate()
        .map(|(i, (identifier, version))| {
            if i % 2 == 0 {
                artifact(chat, &messages[1], identifier, *version)
            } else {
                document(chat, &messages[1], identifier, *version)
            }
        })
        .collect();
    FinishedTurn {
        artifacts,
        ..turn_of(chat, &messages, when)
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
        file_name: dataset.map(|_| "Handbuch.pdf".to_owned()),
        location: dataset.map(|_| SourceLocation {
            page: Some(3),
            section: Some("Ferien › Urlaub".into()),
            char_start: 120,
            char_end: 980,
        }),
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
            attachments: vec![
                Attachment {
                    file_id: "fil_karte".to_owned(),
                    file_name: "Wetterkarte \"Süd\".png".to_owned(),
                    kind: AttachmentKind::Image,
                    media_type: "image/png".to_owned(),
                },
                Attachment {
                    file_id: "fil_bericht".to_owned(),
                    file_name: "bericht.pdf".to_owned(),
                    kind: AttachmentKind::Document,
                    media_type: "application/pdf".to_owned(),
                },
            ],
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

fn page<K: Clone>(limit: i64, after: Option<&K>) -> PageRequest<K> {
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

fn is_conflict<T: std::fmt::Debug>(result: &Result<T, DomainError>) -> bool {
    matches!(result, Err(DomainError::Conflict { .. }))
}

/// A filter of an organization's artifacts.
fn artifacts_of(
    organization: &OrganizationId,
    owner: Option<&str>,
    chat: Option<&ChatId>,
) -> ArtifactFilter {
    ArtifactFilter {
        organization: organization.clone(),
        owner: owner.map(str::to_owned),
        chat_id: chat.cloned(),
    }
}

fn newest_artifacts_first(mut artifacts: Vec<Artifact>) -> Vec<Artifact> {
    artifacts.sort_by(|a, b| b.id.cmp(&a.id));
    artifacts
}

fn versions(pairs: &[(&str, u32)]) -> HashMap<String, u32> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
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
    let finished = FinishedTurn {
        artifacts: vec![artifact(&chat, &turn[9], "plan", 1)],
        ..turn_of(&chat, &turn, at(20))
    };
    f.finish_turn(&chat, &finished, at(20)).await;
    let stored = f.get(&chat).await.unwrap();
    let theirs = artifacts_of(&globex, None, None);

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
    assert!(
        f.store
            .artifact_versions(&globex, &chat.id)
            .await
            .unwrap()
            .is_empty()
    );
    let artifact_id = &finished.artifacts[0].id;
    assert_eq!(f.artifacts.get(&globex, artifact_id).await.unwrap(), None);
    assert!(f.all_artifacts(&theirs).await.is_empty());
    assert!(
        f.all_artifacts(&artifacts_of(&globex, Some("alice"), Some(&chat.id)))
            .await
            .is_empty()
    );
    assert_eq!(f.artifacts.count(&theirs).await.unwrap(), 0);

    // Writes in another organization's name (its usage and artifacts) change nothing.
    let as_globex = Chat {
        organization_id: globex.clone(),
        ..chat.clone()
    };
    let more = vec![message(&chat, 10, Role::Assistant, "hijacked")];
    let hijack = FinishedTurn {
        artifacts: vec![artifact(&as_globex, &more[0], "plan", 2)],
        ..turn_of(&as_globex, &more, at(41))
    };
    let refused = f
        .store
        .finish_generation(&globex, &chat.id, &hijack, at(41))
        .await;
    assert!(is_not_found(&refused), "{refused:?}");
    let spent = usage_record(&as_globex, &MessageId::generate(), at(42));
    let failed = f
        .store
        .fail_generation(&globex, &chat.id, "hijacked", Some(spent.clone()), at(42))
        .await;
    assert!(is_not_found(&failed), "{failed:?}");
    let failed = f
        .store
        .fail_generation(&globex, &chat.id, "hijacked", None, at(42))
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
    assert_eq!(f.recorded_usage().await, vec![finished.usage.clone()]);
    assert_eq!(
        f.all_artifacts(&artifacts_of(&acme, None, None)).await,
        finished.artifacts
    );
    assert!(f.all_artifacts(&theirs).await.is_empty());
    assert_eq!(f.versions(&chat).await, versions(&[("plan", 1)]));
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
        .fail_generation(&acme, &chat.id, "boom", None, at(14))
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
        .fail_generation(&acme, &chat.id, "old failure", None, at(5))
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
        .fail_generation(&acme, &chat.id, "late failure", None, at(21))
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
        .finish_generation(&acme, &unknown.id, &turn_of(&unknown, &[], at(23)), at(23))
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
    let recorded = f.recorded_usage().await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].message_id, first[1].id.to_string());

    // The new messages come first, the taken number last: nothing of the batch stays.
    let colliding = vec![
        message(&chat, 2, Role::User, "three"),
        message(&chat, 3, Role::Assistant, "four"),
        message(&chat, 1, Role::Assistant, "taken"),
    ];
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &turn_of(&chat, &colliding, at(13)), at(13))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.messages(&chat).await, first, "no new messages");
    assert_eq!(
        f.get(&chat).await,
        Some(generating.clone()),
        "status and time unchanged"
    );
    assert_eq!(f.recorded_usage().await, recorded, "no usage recorded");

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
        .finish_generation(&acme, &chat.id, &turn_of(&chat, &reused, at(14)), at(14))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.messages(&chat).await, first);
    assert_eq!(f.get(&chat).await, Some(generating));
    assert_eq!(f.recorded_usage().await, recorded);

    // The generation can still finish properly.
    let next = vec![message(&chat, 2, Role::User, "three")];
    f.finish(&chat, &next, at(15)).await;
    assert_eq!(f.messages(&chat).await, [first, next].concat());
    assert_eq!(f.get(&chat).await.unwrap().status, None);
    assert_eq!(f.recorded_usage().await.len(), 2);
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
        .fail_generation(&acme, &chat.id, "provider said 500 – 错误", None, at(11))
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
    assert_eq!(
        f.recorded_usage().await.len(),
        1,
        "only the first turn's usage"
    );

    // A later failure replaces the reason.
    f.store
        .fail_generation(&acme, &chat.id, "again", None, at(12))
        .await
        .unwrap();
    assert_eq!(f.get(&chat).await.unwrap().error.as_deref(), Some("again"));

    let failed = f
        .store
        .fail_generation(&acme, &ChatId::generate(), "nobody", None, at(13))
        .await;
    assert!(is_not_found(&failed), "{failed:?}");
    assert_eq!(f.get(&untouched).await, Some(untouched));
}

async fn a_failed_turn_keeps_its_partial_answer_and_its_route(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(10)).await);
    let route = Route {
        deployment: "backup".into(),
        provider: "azure".into(),
        failed_attempts: vec![FailedAttempt {
            deployment: "primary".into(),
            error: "the model provider failed: HTTP 500".into(),
        }],
    };
    let partial = Message {
        usage: Some(MessageUsage {
            route: Some(route),
            ..usage(7, 1, 0, FinishReason::Other("error".into()))
        }),
        ..message(&chat, 1, Role::Assistant, "Hel")
    };
    let messages = vec![message(&chat, 0, Role::User, "Say hello"), partial];
    let failed = FinishedTurn {
        error: Some("the model provider did not answer in time".into()),
        ..turn_of(&chat, &messages, at(11))
    };
    f.finish_turn(&chat, &failed, at(11)).await;
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: Some(ChatStatus::Error),
            error: failed.error.clone(),
            updated_at: at(11),
            ..chat.clone()
        })
    );
    assert_eq!(
        f.messages(&chat).await,
        messages,
        "the partial answer reads back"
    );
    assert_eq!(f.recorded_usage().await.len(), 1);
    // The chat can go on.
    assert!(f.begin(&chat, at(12)).await);
}

async fn interrupted_generations_fail_in_every_organization(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    // `f.store` is the process that stops: it last renewed its lease at 5 s.
    f.store.keep_alive(at(5)).await.unwrap();
    let mut running = Vec::new();
    for organization in [&acme, &acme, &globex] {
        let chat = f.chat(organization, "alice").await;
        assert!(f.begin(&chat, at(10)).await);
        running.push(chat);
    }
    // A new chat stored generating, and one deleted while it generates: both recovered.
    for deleted_at in [None, Some(at(9))] {
        let generating = Chat {
            status: Some(ChatStatus::Generating),
            deleted_at,
            ..chat(&globex, "bob")
        };
        f.store.insert(&generating).await.unwrap();
        running.push(generating);
    }

    let idle = f.chat(&acme, "alice").await;
    let failed = f.chat(&globex, "alice").await;
    f.store
        .fail_generation(&globex, &failed.id, "earlier", None, at(11))
        .await
        .unwrap();
    let failed = f.get(&failed).await.unwrap();
    let deleted = f.deleted_chat(&acme, "alice").await;

    // A replica that is alive, generating, and the replica that sweeps, with a generation
    // of its own whose lease it never renewed.
    let live = f.another_runner();
    live.keep_alive(at(15)).await.unwrap();
    let live_chat = f.chat(&acme, "carol").await;
    assert!(
        live.begin_generation(&acme, &live_chat.id, at(16))
            .await
            .unwrap()
    );
    let sweeper = f.another_runner();
    let own_chat = f.chat(&globex, "dave").await;
    assert!(
        sweeper
            .begin_generation(&globex, &own_chat.id, at(16))
            .await
            .unwrap()
    );

    assert_eq!(
        sweeper
            .fail_interrupted("early", at(5), at(19))
            .await
            .unwrap(),
        0,
        "a lease renewed at the limit has not lapsed"
    );
    assert_eq!(
        sweeper
            .fail_interrupted("interrupted by a restart", at(12), at(20))
            .await
            .unwrap(),
        running.len() as u64
    );
    for chat in &running {
        let now = f.get(chat).await.unwrap();
        assert_eq!(now.status, Some(ChatStatus::Error), "{}", chat.id);
        assert_eq!(now.error.as_deref(), Some("interrupted by a restart"));
        assert_eq!(now.updated_at, at(20));
        assert_eq!(now.deleted_at, chat.deleted_at);
    }
    for chat in [&live_chat, &own_chat] {
        let now = f.get(chat).await.unwrap();
        assert_eq!(now.status, Some(ChatStatus::Generating), "{}", chat.owner);
    }
    assert_eq!(f.get(&idle).await, Some(idle));
    assert_eq!(f.get(&failed).await, Some(failed));
    assert_eq!(f.get(&deleted).await, Some(deleted));

    assert_eq!(
        sweeper
            .fail_interrupted("again", at(12), at(21))
            .await
            .unwrap(),
        0
    );
    assert!(
        f.begin(&running[0], at(22)).await,
        "recovered chats can start"
    );

    // A generation's end ends its lease: once every other runner has lapsed, only the
    // generation that is still running fails.
    live.fail_generation(&acme, &live_chat.id, "upstream", None, at(23))
        .await
        .unwrap();
    assert_eq!(
        sweeper
            .fail_interrupted("later", at(100), at(101))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        f.get(&running[0]).await.unwrap().error.as_deref(),
        Some("later")
    );
    assert_eq!(
        f.get(&live_chat).await.unwrap().error.as_deref(),
        Some("upstream")
    );
    assert_eq!(
        f.get(&own_chat).await.unwrap().status,
        Some(ChatStatus::Generating),
        "a runner never fails its own generations"
    );

    // A runner that never renewed its lease (the sweeper above; and one that writes a lease
    // now) is lapsed for a process's first sweep.
    let silent = f.another_runner();
    let silent_chat = f.chat(&acme, "erin").await;
    assert!(
        silent
            .begin_generation(&acme, &silent_chat.id, at(102))
            .await
            .unwrap()
    );
    assert_eq!(
        f.another_runner()
            .fail_interrupted("never renewed", at(100), at(103))
            .await
            .unwrap(),
        2
    );
    for chat in [&own_chat, &silent_chat] {
        let now = f.get(chat).await.unwrap();
        assert_eq!(now.status, Some(ChatStatus::Error), "{}", chat.owner);
        assert_eq!(now.error.as_deref(), Some("never renewed"));
    }
}

/// A process that stops cleanly retires its runner: forgotten once its generations have
/// ended, kept while it holds one (which then fails when its lease lapses, as after a crash).
async fn a_runner_retires_only_without_generations(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    // A replica whose first sweep (which adopts the leases of runners with no row) is done.
    let sweeper = f.another_runner();
    assert_eq!(
        sweeper
            .fail_interrupted("lapsed", at(0), at(1))
            .await
            .unwrap(),
        0
    );
    assert!(
        !f.store.retire().await.unwrap(),
        "a runner that never renewed has nothing to forget"
    );

    f.store.keep_alive(at(5)).await.unwrap();
    let chat = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(6)).await);
    assert!(
        !f.store.retire().await.unwrap(),
        "a runner holding a generation is kept"
    );
    f.finish(&chat, &[message(&chat, 0, Role::User, "hi")], at(7))
        .await;
    assert!(f.store.retire().await.unwrap(), "its generation has ended");
    assert!(!f.store.retire().await.unwrap(), "forgotten already");

    // A runner that stops while it holds a generation: the generation fails once the lease
    // lapses, for the replica above too (had the runner been forgotten, its lease would be
    // found only by a new process's first sweep).
    let stopping = f.another_runner();
    stopping.keep_alive(at(8)).await.unwrap();
    let held = f.chat(&acme, "bob").await;
    assert!(
        stopping
            .begin_generation(&acme, &held.id, at(9))
            .await
            .unwrap()
    );
    assert!(!stopping.retire().await.unwrap());
    assert_eq!(
        sweeper
            .fail_interrupted("interrupted", at(20), at(21))
            .await
            .unwrap(),
        1
    );
    let held = f.get(&held).await.unwrap();
    assert_eq!(held.status, Some(ChatStatus::Error));
    assert_eq!(held.error.as_deref(), Some("interrupted"));
    assert_eq!(f.get(&chat).await.unwrap().status, None);
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

// ----- usage and artifacts -----

async fn finishing_stores_the_usage_and_the_artifacts(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let chat = f.chat(&acme, "alice").await;
    let other = f.chat(&acme, "alice").await;
    assert!(f.versions(&chat).await.is_empty());

    assert!(f.begin(&chat, at(10)).await);
    let first = turn_with_artifacts(&chat, 0, &[("plan", 1), ("readme", 1)], at(11));
    f.finish_turn(&chat, &first, at(11)).await;
    assert_eq!(f.messages(&chat).await, first.messages);
    assert_eq!(f.recorded_usage().await, vec![first.usage.clone()]);
    for artifact in &first.artifacts {
        assert_eq!(
            f.artifacts.get(&acme, &artifact.id).await.unwrap().as_ref(),
            Some(artifact),
            "read back unchanged"
        );
    }
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 1), ("readme", 1)])
    );
    assert_eq!(f.get(&chat).await.unwrap().status, None);

    // The next turn revises one artifact and adds another.
    assert!(f.begin(&chat, at(12)).await);
    let second = turn_with_artifacts(&chat, 2, &[("plan", 2), ("diagram", 1)], at(13));
    f.finish_turn(&chat, &second, at(13)).await;
    assert_eq!(
        f.messages(&chat).await,
        [first.messages.clone(), second.messages.clone()].concat()
    );
    assert_eq!(
        f.recorded_usage().await,
        vec![first.usage.clone(), second.usage.clone()]
    );
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 2), ("readme", 1), ("diagram", 1)])
    );
    let of_chat = artifacts_of(&acme, None, Some(&chat.id));
    let both = newest_artifacts_first([first.artifacts.clone(), second.artifacts.clone()].concat());
    assert_eq!(f.all_artifacts(&of_chat).await, both);
    assert_eq!(f.artifacts.count(&of_chat).await.unwrap(), 4);

    // Versions are per chat and per organization.
    assert!(f.versions(&other).await.is_empty());
    assert!(
        f.store
            .artifact_versions(&globex, &chat.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(f.versions(&chat_of(&acme)).await.is_empty());
    let theirs = turn_with_artifacts(&other, 0, &[("plan", 1)], at(14));
    f.finish_turn(&other, &theirs, at(14)).await;
    assert_eq!(f.versions(&other).await, versions(&[("plan", 1)]));
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 2), ("readme", 1), ("diagram", 1)])
    );
    assert_eq!(f.recorded_usage().await.len(), 3);
    assert_eq!(
        f.all_artifacts(&artifacts_of(&acme, None, Some(&other.id)))
            .await,
        theirs.artifacts
    );
}

/// The chat is still `generating` with `before`'s messages, usage and artifacts only.
async fn assert_unchanged(f: &Fixture, generating: &Chat, before: &FinishedTurn, case: &str) {
    assert_eq!(f.get(generating).await.as_ref(), Some(generating), "{case}");
    assert_eq!(f.messages(generating).await, before.messages, "{case}");
    assert_eq!(
        f.recorded_usage().await,
        vec![before.usage.clone()],
        "{case}"
    );
    assert_eq!(
        f.all_artifacts(&artifacts_of(&generating.organization_id, None, None))
            .await,
        newest_artifacts_first(before.artifacts.clone()),
        "{case}"
    );
    assert_eq!(
        f.versions(generating).await,
        versions(&[("plan", 1)]),
        "{case}"
    );
}

async fn a_recorded_usage_or_a_taken_artifact_version_rolls_the_finish_back(
    target: impl Into<Target>,
) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let elsewhere = f.chat(&acme, "alice").await;
    let first = turn_with_artifacts(&chat, 0, &[("plan", 1)], at(11));
    f.finish_turn(&chat, &first, at(11)).await;
    assert!(f.begin(&chat, at(12)).await);
    let generating = f.get(&chat).await.unwrap();

    let mut cases = Vec::new();
    // The usage of an answer already recorded.
    let mut recorded_message = turn_with_artifacts(&chat, 2, &[("readme", 1)], at(13));
    recorded_message.usage.message_id = first.usage.message_id.clone();
    cases.push(("usage of a recorded message", recorded_message));
    // A usage record id already taken.
    let mut recorded_id = turn_with_artifacts(&chat, 2, &[("readme", 1)], at(13));
    recorded_id.usage.id = first.usage.id.clone();
    cases.push(("usage id taken", recorded_id));
    // A new artifact first, the taken version last.
    cases.push((
        "artifact version taken",
        turn_with_artifacts(&chat, 2, &[("readme", 1), ("plan", 1)], at(13)),
    ));
    // An artifact of another chat.
    let mut stray = turn_with_artifacts(&chat, 2, &[("readme", 1)], at(13));
    stray.artifacts.push(Artifact {
        chat_id: elsewhere.id.clone(),
        ..artifact(&chat, &stray.messages[1], "stray", 1)
    });
    cases.push(("artifact of another chat", stray));

    for (case, turn) in &cases {
        let refused = f
            .store
            .finish_generation(&acme, &chat.id, turn, at(13))
            .await;
        assert!(is_conflict(&refused), "{case}: {refused:?}");
        assert_unchanged(&f, &generating, &first, case).await;
    }
    assert!(f.versions(&elsewhere).await.is_empty());

    // The generation can still finish properly.
    let next = turn_with_artifacts(&chat, 2, &[("readme", 1), ("plan", 2)], at(14));
    f.finish_turn(&chat, &next, at(14)).await;
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 2), ("readme", 1)])
    );
    assert_eq!(
        f.messages(&chat).await,
        [first.messages.clone(), next.messages.clone()].concat()
    );
    assert_eq!(f.recorded_usage().await, vec![first.usage, next.usage]);
    assert_eq!(f.get(&chat).await.unwrap().status, None);
}

async fn one_turn_cannot_store_an_artifact_version_twice(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let first = turn_with_artifacts(&chat, 0, &[("plan", 1)], at(11));
    f.finish_turn(&chat, &first, at(11)).await;
    assert!(f.begin(&chat, at(12)).await);
    let generating = f.get(&chat).await.unwrap();

    let twice = turn_with_artifacts(&chat, 2, &[("readme", 1), ("readme", 1)], at(13));
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &twice, at(13))
        .await;
    assert!(is_conflict(&refused), "{refused:?}");
    assert_unchanged(&f, &generating, &first, "one version twice").await;
}

async fn failing_records_the_usage_of_a_failed_attempt(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(10)).await);
    let tokens = Tokens {
        input: 900,
        output: 12,
        reasoning: 0,
    };
    let spent = UsageRecord {
        tokens,
        credits: tokens.credits(1),
        finish_reason: FAILED.to_owned(),
        ..usage_record(&chat, &MessageId::generate(), at(11))
    };
    f.store
        .fail_generation(
            &acme,
            &chat.id,
            "provider said 500",
            Some(spent.clone()),
            at(11),
        )
        .await
        .unwrap();
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: Some(ChatStatus::Error),
            error: Some("provider said 500".to_owned()),
            updated_at: at(11),
            ..chat.clone()
        })
    );
    assert!(f.messages(&chat).await.is_empty(), "nothing is appended");
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // Without tokens spent, nothing is recorded.
    assert!(f.begin(&chat, at(12)).await);
    f.store
        .fail_generation(&acme, &chat.id, "timed out", None, at(13))
        .await
        .unwrap();
    let failed = f.get(&chat).await.unwrap();
    assert_eq!(
        (failed.status, failed.error.as_deref(), failed.updated_at),
        (Some(ChatStatus::Error), Some("timed out"), at(13))
    );
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // The same answer's usage twice is refused, and the chat keeps generating.
    assert!(f.begin(&chat, at(14)).await);
    let generating = f.get(&chat).await.unwrap();
    let twice = UsageRecord {
        id: UsageId::generate(),
        ..spent.clone()
    };
    let refused = f
        .store
        .fail_generation(&acme, &chat.id, "again", Some(twice.clone()), at(15))
        .await;
    assert!(is_conflict(&refused), "{refused:?}");
    assert_eq!(f.get(&chat).await, Some(generating));
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // An unknown chat records nothing.
    let unknown = chat_of(&acme);
    let lost = usage_record(&unknown, &MessageId::generate(), at(16));
    let refused = f
        .store
        .fail_generation(&acme, &unknown.id, "nobody", Some(lost.clone()), at(16))
        .await;
    assert!(is_not_found(&refused), "{refused:?}");
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // A later finish records its own answer's usage.
    let turn = vec![
        message(&chat, 0, Role::User, "noch einmal"),
        message(&chat, 1, Role::Assistant, "gern"),
    ];
    f.finish(&chat, &turn, at(17)).await;
    let recorded = f.recorded_usage().await;
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0], spent);
    assert_eq!(recorded[1].message_id, turn[1].id.to_string());
    assert_eq!(f.get(&chat).await.unwrap().status, None);
    assert_eq!(f.get(&untouched).await, Some(untouched));
}

async fn artifacts_are_scoped_to_the_organization_and_filtered(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let first = f.chat(&acme, "alice").await;
    let second = f.chat(&acme, "alice").await;
    let bobs = f.chat(&acme, "bob").await;
    let theirs = f.chat(&globex, "alice").await;

    // Interleaved turns: every chat's artifacts are spread over the id order.
    let mut stored: Vec<Artifact> = Vec::new();
    for round in 0..3_u32 {
        for (chat, count) in [(&first, 2), (&second, 1), (&bobs, 2), (&theirs, 1)] {
            let found: Vec<(&str, u32)> = ["plan", "readme"][..count]
                .iter()
                .map(|identifier| (*identifier, round + 1))
                .collect();
            let turn = turn_with_artifacts(chat, round * 2, &found, at(20 + i64::from(round)));
            f.finish_turn(chat, &turn, at(20 + i64::from(round))).await;
            stored.extend(turn.artifacts);
        }
    }
    let expect = |keep: &dyn Fn(&Artifact) -> bool| {
        newest_artifacts_first(stored.iter().filter(|a| keep(a)).cloned().collect())
    };

    for artifact in &stored {
        let (mine, other) = if artifact.organization_id == acme {
            (&acme, &globex)
        } else {
            (&globex, &acme)
        };
        assert_eq!(
            f.artifacts.get(mine, &artifact.id).await.unwrap().as_ref(),
            Some(artifact)
        );
        assert_eq!(f.artifacts.get(other, &artifact.id).await.unwrap(), None);
    }
    assert_eq!(
        f.artifacts
            .get(&acme, &ArtifactId::generate())
            .await
            .unwrap(),
        None
    );

    let cases: Vec<(ArtifactFilter, Vec<Artifact>, u64)> = vec![
        (
            artifacts_of(&acme, None, None),
            expect(&|a| a.organization_id == acme),
            15,
        ),
        (
            artifacts_of(&acme, Some("alice"), None),
            expect(&|a| a.chat_id == first.id || a.chat_id == second.id),
            9,
        ),
        (
            artifacts_of(&acme, Some("bob"), None),
            expect(&|a| a.chat_id == bobs.id),
            6,
        ),
        (
            artifacts_of(&acme, None, Some(&first.id)),
            expect(&|a| a.chat_id == first.id),
            6,
        ),
        (
            artifacts_of(&acme, Some("alice"), Some(&second.id)),
            expect(&|a| a.chat_id == second.id),
            3,
        ),
        (
            artifacts_of(&acme, Some("bob"), Some(&first.id)),
            Vec::new(),
            0,
        ),
        (artifacts_of(&acme, Some("carol"), None), Vec::new(), 0),
        (artifacts_of(&acme, None, Some(&theirs.id)), Vec::new(), 0),
        (
            artifacts_of(&globex, None, None),
            expect(&|a| a.chat_id == theirs.id),
            3,
        ),
        (artifacts_of(&globex, Some("bob"), None), Vec::new(), 0),
        (artifacts_of(&globex, None, Some(&first.id)), Vec::new(), 0),
        (
            artifacts_of(&OrganizationId::generate(), None, None),
            Vec::new(),
            0,
        ),
    ];
    for (filter, expected, count) in &cases {
        assert_eq!(expected.len() as u64, *count, "{filter:?}");
        assert_eq!(&f.all_artifacts(filter).await, expected, "{filter:?}");
        assert_eq!(
            f.artifacts.count(filter).await.unwrap(),
            *count,
            "{filter:?}"
        );
    }

    // A page fetches one extra row; `after` is exclusive, and a cursor of another
    // organization's artifact still pages by id.
    let everything = artifacts_of(&acme, None, None);
    let all = expect(&|a| a.organization_id == acme);
    assert_eq!(
        f.artifacts.list(&everything, &page(2, None)).await.unwrap(),
        all[..3]
    );
    assert_eq!(
        f.artifacts
            .list(&everything, &page(2, Some(&all[1].id)))
            .await
            .unwrap(),
        all[2..5]
    );
    assert!(
        f.artifacts
            .list(&everything, &page(2, Some(&all[14].id)))
            .await
            .unwrap()
            .is_empty()
    );
    let cursor = &stored.iter().find(|a| a.chat_id == theirs.id).unwrap().id;
    let after_theirs: Vec<Artifact> = all
        .iter()
        .filter(|a| &a.id < cursor)
        .take(3)
        .cloned()
        .collect();
    assert_eq!(after_theirs.len(), 3, "the cursor is not the oldest");
    assert_eq!(
        f.artifacts
            .list(&everything, &page(2, Some(cursor)))
            .await
            .unwrap(),
        after_theirs
    );
}

async fn artifact_keyset_pages_have_no_gaps_or_duplicates(target: impl Into<Target>) {
    let f = Fixture::new(target).await;
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let bobs = f.chat(&acme, "bob").await;
    let mut mine = Vec::new();
    for round in 0..5_u32 {
        let version = round + 1;
        let found = [
            ("a", version),
            ("b", version),
            ("c", version),
            ("d", version),
            ("e", version),
        ];
        let when = at(20 + i64::from(round));
        let turn = turn_with_artifacts(&chat, round * 2, &found, when);
        f.finish_turn(&chat, &turn, when).await;
        mine.extend(turn.artifacts);
        // Another owner's artifacts are skipped, not counted against a page.
        let turn = turn_with_artifacts(&bobs, round * 2, &[("x", version)], when);
        f.finish_turn(&bobs, &turn, when).await;
    }
    let expected = newest_artifacts_first(mine);
    let filter = artifacts_of(&acme, Some("alice"), None);

    let mut seen: Vec<Artifact> = Vec::new();
    let mut sizes = Vec::new();
    let mut after: Option<ArtifactId> = None;
    loop {
        let mut rows = f
            .artifacts
            .list(&filter, &page(10, after.as_ref()))
            .await
            .unwrap();
        let has_more = rows.len() > 10;
        rows.truncate(10);
        sizes.push(rows.len());
        after = rows.last().map(|a| a.id.clone());
        seen.extend(rows);
        if sizes.len() == 1 {
            // An artifact stored while paging is newer than every cursor: later pages skip it.
            let turn = turn_with_artifacts(&chat, 10, &[("late", 1)], at(30));
            f.finish_turn(&chat, &turn, at(30)).await;
        }
        if !has_more {
            break;
        }
    }
    assert_eq!(sizes, [10, 10, 5]);
    let unique: HashSet<&ArtifactId> = seen.iter().map(|a| &a.id).collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates");
    assert_eq!(seen, expected, "no gaps, newest first");
    assert_eq!(f.artifacts.count(&filter).await.unwrap(), 26);
    assert_eq!(
        f.artifacts
            .count(&artifacts_of(&acme, None, None))
            .await
            .unwrap(),
        31
    );
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
        ("attachments", "'not json'"),
        ("attachments", r#"'[{"fileId":"x"}]'"#),
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
    a_failed_turn_keeps_its_partial_answer_and_its_route,
    interrupted_generations_fail_in_every_organization,
    a_runner_retires_only_without_generations,
    update_saves_title_deletion_and_time_only,
    concurrent_starts_have_one_winner,
    finishing_stores_the_usage_and_the_artifacts,
    a_recorded_usage_or_a_taken_artifact_version_rolls_the_finish_back,
    one_turn_cannot_store_an_artifact_version_twice,
    failing_records_the_usage_of_a_failed_attempt,
    artifacts_are_scoped_to_the_organization_and_filtered,
    artifact_keyset_pages_have_no_gaps_or_duplicates,
    references_must_exist,
    corrupt_rows_are_internal_errors,
);

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

    async fn rollup(f: &Fixture) -> Rollup {
        let Database::Postgres(pool) = f.database() else {
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
    async fn leases(f: &Fixture) -> i64 {
        let Database::Postgres(pool) = f.database() else {
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
        let f = Fixture::new(Backend::Postgres).await;
        let store = SqlChatStore::new(f.database().clone());
        let acme = f.organization("Acme").await;
        let chats: Vec<Chat> = (0..30)
            .map(|_| Chat {
                status: Some(ChatStatus::Generating),
                ..chat_of(&acme)
            })
            .collect();
        let inserted = join_all(chats.iter().map(|chat| store.insert(chat))).await;
        assert!(inserted.iter().all(Result::is_ok), "{inserted:?}");
        assert_eq!(leases(&f).await, 30, "each generation has its lease");
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
            leases(&f).await,
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
            rollup(&f).await,
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
            rollup(&f).await,
            Rollup {
                requests: 60,
                input_tokens: 60 * 1_200
            }
        );
    }

    #[tokio::test]
    async fn a_bad_write_in_a_batch_fails_alone() {
        let f = Fixture::new(Backend::Postgres).await;
        let store = SqlChatStore::new(f.database().clone());
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
            rollup(&f).await,
            Rollup {
                requests: total,
                input_tokens: total * 1_200
            }
        );
    }

    #[tokio::test]
    async fn a_batch_with_a_turn_of_an_unknown_chat_changes_nothing_even_without_messages() {
        let f = Fixture::new(Backend::Postgres).await;
        let store = SqlChatStore::new(f.database().clone());
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
            rollup(&f).await,
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
    async fn runners(f: &Fixture) -> i64 {
        const COUNT: &str = "SELECT count(*) AS count FROM generation_runners";
        let counted: Count = match f.database() {
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
        let f = Fixture::new(backend).await;
        let acme = f.organization("Acme").await;
        f.store.keep_alive(at(5)).await.unwrap();
        let chat = f.chat(&acme, "alice").await;
        assert!(f.begin(&chat, at(6)).await);
        let sweeper = f.another_runner();
        sweeper.keep_alive(at(20)).await.unwrap();
        assert_eq!(runners(&f).await, 2);

        // Leases of one second: lapsed at 10, its generation failed, its row kept.
        assert_eq!(
            sweeper
                .fail_interrupted("lapsed", at(10), at(11))
                .await
                .unwrap(),
            1
        );
        assert_eq!(runners(&f).await, 2);
        // Ten leases without renewal (seen at 5, the sweep at 15): kept.
        assert_eq!(
            sweeper
                .fail_interrupted("lapsed", at(14), at(15))
                .await
                .unwrap(),
            0
        );
        assert_eq!(runners(&f).await, 2);
        // More than ten: forgotten; the sweeper, seen at 20, is not.
        assert_eq!(
            sweeper
                .fail_interrupted("lapsed", at(16), at(17))
                .await
                .unwrap(),
            0
        );
        assert_eq!(runners(&f).await, 1);

        // A forgotten runner that renews is back.
        f.store.keep_alive(at(30)).await.unwrap();
        assert_eq!(runners(&f).await, 2);
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
        a_runner_retires_only_without_generations,
        update_saves_title_deletion_and_time_only,
        concurrent_starts_have_one_winner,
        finishing_stores_the_usage_and_the_artifacts,
        a_recorded_usage_or_a_taken_artifact_version_rolls_the_finish_back,
        one_turn_cannot_store_an_artifact_version_twice,
        failing_records_the_usage_of_a_failed_attempt,
        artifacts_are_scoped_to_the_organization_and_filtered,
        artifact_keyset_pages_have_no_gaps_or_duplicates,
    );
}
