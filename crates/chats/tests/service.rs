//! Completion orchestration over the in-memory stores, the real prompt and model services,
//! and a scripted model that records what it was asked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use chrono::{TimeZone, Utc};
use futures_channel::oneshot;
use futures_util::{FutureExt, StreamExt, stream};
use serde_json::json;
use tessera_chats::{
    AnswerCancellation, Attachment, AttachmentContent, AttachmentError, AttachmentKind,
    AttachmentSource, Chat, ChatError, ChatFilter, ChatId, ChatPorts, ChatService, ChatStatus,
    ChatStore, ChatStored, CompletionRequest, EventStream, FinishedTurn, FixedPlan,
    GenerationEvent, Message, NewMessage, NoAttachments, NoRetrieval, ResolvedAttachment, Started,
    memory::InMemoryChatStore,
};
use tessera_kernel::{
    Caller, CursorCodec, DomainError, FieldError, Limit, ManualClock, OrganizationId, PageRequest,
    Principal, PrincipalKind, ScopeSet,
};
use tessera_models::memory::WordCounter;
use tessera_models::{
    Capabilities, Catalog, ChatEvent, ChatModel, ChatRequest, ChatStream, FailedAttempt,
    FinishReason, JsonSchemaFormat, ModelChanges, ModelService, NewUserModel, ProviderError,
    Providers, Role, Route, ToolCall, ToolSpec, Usage, memory::InMemoryModelStore,
};
use tessera_organizations::Plan;
use tessera_prompts::{Name, PromptService, TokenCounter, memory::InMemoryPromptStore};
use tessera_usage::memory::InMemoryUsageStore;

/// Answers every request with `reply` (or an error), after `gate` opens when one is set.
#[derive(Default)]
struct Scripted {
    requests: Mutex<Vec<ChatRequest>>,
    reply: Mutex<Vec<Result<ChatEvent, ProviderError>>>,
    /// Replies used first, one per request, before `reply`.
    queued: Mutex<std::collections::VecDeque<Vec<Result<ChatEvent, ProviderError>>>>,
    gate: Mutex<Option<oneshot::Receiver<()>>>,
}

impl Scripted {
    fn answer(&self, text: &str) {
        *self.reply.lock().unwrap() = vec![
            Ok(ChatEvent::TextDelta(text[..text.len() / 2].into())),
            Ok(ChatEvent::TextDelta(text[text.len() / 2..].into())),
            Ok(finish(FinishReason::Stop)),
        ];
    }

    fn hold(&self) -> oneshot::Sender<()> {
        let (open, gate) = oneshot::channel();
        *self.gate.lock().unwrap() = Some(gate);
        open
    }

    fn last_request(&self) -> ChatRequest {
        self.requests.lock().unwrap().last().cloned().unwrap()
    }
}

fn finish(reason: FinishReason) -> ChatEvent {
    ChatEvent::Finish {
        reason,
        usage: Usage {
            input_tokens: 7,
            output_tokens: 3,
            reasoning_tokens: 0,
            cached_input_tokens: 5,
        },
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        Arc::new(WordCounter)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        self.requests.lock().unwrap().push(request);
        let queued = self.queued.lock().unwrap().pop_front();
        let events = queued.unwrap_or_else(|| self.reply.lock().unwrap().clone());
        let gate = self.gate.lock().unwrap().take();
        let wait = stream::once(async move {
            if let Some(gate) = gate {
                let _ = gate.await;
            }
        })
        .filter_map(|()| async { None });
        Ok(Box::pin(wait.chain(stream::iter(events))))
    }
}

/// Files by id, as the knowledge domain would resolve them.
#[derive(Default)]
struct Files(Mutex<HashMap<String, ResolvedAttachment>>);

impl Files {
    fn add(&self, id: &str, name: &str, content: AttachmentContent) {
        let (kind, media_type) = match &content {
            AttachmentContent::Text(_) => (AttachmentKind::Document, "text/plain".to_owned()),
            AttachmentContent::Image(image) => (AttachmentKind::Image, image.media_type.clone()),
        };
        let attachment = Attachment {
            file_id: id.into(),
            file_name: name.into(),
            kind,
            media_type,
        };
        self.0.lock().unwrap().insert(
            id.into(),
            ResolvedAttachment {
                attachment,
                content,
            },
        );
    }
}

#[async_trait]
impl AttachmentSource for Files {
    async fn resolve(
        &self,
        _: &OrganizationId,
        file_id: &str,
        _: usize,
    ) -> Result<ResolvedAttachment, AttachmentError> {
        self.0
            .lock()
            .unwrap()
            .get(file_id)
            .cloned()
            .ok_or_else(|| AttachmentError::NotFound(file_id.into()))
    }
}

const CATALOG: &str = r#"
[providers.local]
kind = "local"
[[models]]
id = "local/small"
display_name = "Small"
provider = "local"
model_name = "small.gguf"
context_window = 64
max_tokens_per_request = 16
capabilities = { streaming = true, tools = true, json_schema = true }
[[models]]
id = "local/plain"
display_name = "Plain"
provider = "local"
model_name = "plain.gguf"
context_window = 4096
credit_multiplier = 3
[[models]]
id = "local/eyes"
display_name = "Eyes"
provider = "local"
model_name = "eyes.gguf"
context_window = 4096
capabilities = { streaming = true, vision = true }
"#;

struct Fixture {
    chats: ChatService,
    store: Arc<InMemoryChatStore>,
    usage: Arc<InMemoryUsageStore>,
    models: ModelService,
    prompts: PromptService,
    model: Arc<Scripted>,
    files: Arc<Files>,
    clock: Arc<ManualClock>,
    alice: Caller,
}

fn fixture() -> Fixture {
    fixture_over(|store| store)
}

/// The fixture, its service over the store `wrap` makes of the in-memory one.
fn fixture_over(wrap: impl FnOnce(Arc<InMemoryChatStore>) -> Arc<dyn ChatStore>) -> Fixture {
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap(),
    ));
    let prompt_store = Arc::new(InMemoryPromptStore::new());
    let prompts = PromptService::new(
        prompt_store.clone(),
        prompt_store,
        Arc::new(WordCounter),
        clock.clone(),
        CursorCodec::new([1; 32]),
    );
    let model = Arc::new(Scripted::default());
    model.answer("Hello there");
    let mut providers = Providers::default();
    providers.insert("local/small", model.clone());
    providers.insert("local/plain", model.clone());
    providers.insert("local/eyes", model.clone());
    let models = ModelService::new(
        Arc::new(InMemoryModelStore::new()),
        Arc::new(Catalog::parse(CATALOG, |_| None).unwrap()),
        prompts.clone(),
        clock.clone(),
        CursorCodec::new([2; 32]),
    )
    .with_providers(providers);
    let store = Arc::new(InMemoryChatStore::new());
    let files = Arc::new(Files::default());
    let usage = Arc::new(InMemoryUsageStore::new());
    let chats = ChatService::new(ChatPorts {
        usage: usage.clone(),
        leases: store.clone(),
        ..ports(
            wrap(store.clone()),
            &models,
            &prompts,
            files.clone(),
            clock.clone(),
        )
    });
    Fixture {
        chats,
        store,
        usage,
        models,
        prompts,
        model,
        files,
        clock,
        alice: caller(
            &OrganizationId::generate(),
            "alice",
            "chats:invoke chats:write chats:read chats:delete files:read",
        ),
    }
}

/// The ports of a chat service on the free plan, without retrieval.
impl Fixture {
    /// The fixture's ports, for a service that replaces some of them.
    fn ports(&self) -> ChatPorts {
        ports(
            self.store.clone() as Arc<dyn ChatStore>,
            &self.models,
            &self.prompts,
            self.files.clone(),
            self.clock.clone(),
        )
    }
}

fn ports(
    store: Arc<dyn ChatStore>,
    models: &ModelService,
    prompts: &PromptService,
    attachments: Arc<dyn AttachmentSource>,
    clock: Arc<dyn tessera_kernel::Clock>,
) -> ChatPorts {
    ChatPorts {
        store,
        // A runner of its own: tests of the leases give the store's.
        leases: Arc::new(InMemoryChatStore::new()),
        models: Arc::new(models.clone()),
        prompts: Arc::new(prompts.clone()),
        retriever: Arc::new(NoRetrieval),
        attachments,
        server_tools: Arc::new(tessera_chats::NoServerTools),
        admission: Arc::new(FixedPlan(Plan::Free)),
        usage: Arc::new(InMemoryUsageStore::new()),
        clock,
        cursors: CursorCodec::new([3; 32]),
    }
}

fn user(text: &str) -> NewMessage {
    NewMessage {
        role: Role::User,
        content: text.into(),
        tool_calls: Vec::new(),
        tool_call_id: None,
        attachments: Vec::new(),
        images: Vec::new(),
    }
}

fn ask(model: &str, text: &str) -> CompletionRequest {
    CompletionRequest {
        model_id: Some(model.into()),
        messages: vec![user(text)],
        ..Default::default()
    }
}

fn follow_up(chat: &ChatId, text: &str) -> CompletionRequest {
    CompletionRequest {
        chat_id: Some(chat.clone()),
        messages: vec![user(text)],
        ..Default::default()
    }
}

/// Runs the generation to its end and returns what a listener saw.
async fn run(started: Started) -> Vec<GenerationEvent> {
    started.generation.await;
    started.events.map(|event| (*event).clone()).collect().await
}

fn invalid_locs(error: ChatError) -> Vec<String> {
    let ChatError::Invalid(errors) = error else {
        panic!("expected a validation error, got {error:?}");
    };
    errors.iter().map(|e| e.to_string()).collect()
}

#[tokio::test]
async fn a_completion_streams_then_stores_both_messages() {
    let f = fixture();
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "Hi  there\nfriend"))
        .await
        .unwrap();
    assert!(started.created);
    assert_eq!(started.chat.status, Some(ChatStatus::Generating));
    assert_eq!(started.chat.title.as_deref(), Some("Hi there friend"));
    let id = started.chat.id.clone();
    let message_id = started.message_id.clone();
    let events = run(started).await;
    assert_eq!(
        events[..2],
        [
            GenerationEvent::Delta(ChatEvent::TextDelta("Hello".into())),
            GenerationEvent::Delta(ChatEvent::TextDelta(" there".into())),
        ]
    );
    let GenerationEvent::Finished(answer) = &events[2] else {
        panic!("{events:?}")
    };
    assert_eq!(answer.content, "Hello there");
    assert_eq!(answer.id, message_id);
    assert_eq!(answer.usage.as_ref().unwrap().usage.total_tokens(), 10);

    let record = f.chats.get(&f.alice, &id).await.unwrap();
    assert_eq!(record.chat.status, None);
    let stored: Vec<_> = record
        .messages
        .iter()
        .map(|m| (m.sequence, m.role, m.content.as_str()))
        .collect();
    assert_eq!(
        stored,
        [
            (0, Role::User, "Hi  there\nfriend"),
            (1, Role::Assistant, "Hello there")
        ]
    );
    // The base model's own name reaches the provider.
    assert_eq!(f.model.last_request().model, "plain.gguf");
}

#[tokio::test]
async fn a_continuation_sends_the_history_and_keeps_the_model_snapshot() {
    let f = fixture();
    let created = f
        .models
        .create(
            f.alice.organization(),
            NewUserModel {
                parent_model_id: "local/plain".into(),
                display_name: Name::parse("Helper").unwrap(),
                description: None,
                system_prompt_id: None,
                system_prompt: Some("Be terse.".into()),
                metadata: Default::default(),
            },
        )
        .await
        .unwrap();
    let model_id = created.model.id.to_string();
    let first = f
        .chats
        .start(&f.alice, ask(&model_id, "one"))
        .await
        .unwrap();
    let chat = first.chat.id.clone();
    run(first).await;
    assert_eq!(f.model.last_request().messages[0].content, "Be terse.");

    // Changing the model affects new chats only.
    f.models
        .update(
            f.alice.organization(),
            &created.model.id,
            ModelChanges {
                system_prompt: Some(Some("Be verbose.".into())),
                parent_model_id: Some("local/small".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    run(f
        .chats
        .start(&f.alice, follow_up(&chat, "two"))
        .await
        .unwrap())
    .await;
    let request = f.model.last_request();
    let sent: Vec<_> = request
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(sent, ["Be terse.", "one", "Hello there", "two"]);
    assert_eq!(request.model, "plain.gguf");
    assert_eq!(
        f.chats.get(&f.alice, &chat).await.unwrap().messages.len(),
        4
    );

    // A different model on an existing chat is refused.
    let mut other = follow_up(&chat, "three");
    other.model_id = Some("local/small".into());
    assert_eq!(
        invalid_locs(f.chats.start(&f.alice, other).await.err().unwrap()),
        [format!(
            "body.modelId: chat {chat} uses model {model_id}; a chat keeps the model it was created with"
        )]
    );
}

#[tokio::test]
async fn a_composed_system_prompt_is_frozen_at_creation() {
    let f = fixture();
    let particle = f
        .prompts
        .create_particle(
            f.alice.organization(),
            tessera_prompts::NewParticle {
                name: Name::parse("role").unwrap(),
                category: tessera_prompts::Category::Role,
                content: tessera_prompts::Content::parse("You are a pirate.").unwrap(),
                description: tessera_prompts::Description::parse("").unwrap(),
            },
        )
        .await
        .unwrap();
    let prompt = f
        .prompts
        .create_system_prompt(
            f.alice.organization(),
            tessera_prompts::NewSystemPrompt {
                name: Name::parse("pirate").unwrap(),
                description: tessera_prompts::Description::parse("").unwrap(),
                enabled: true,
                particles: vec![tessera_prompts::NewAssociation {
                    particle_id: particle.id.clone(),
                    order: 0,
                    pin: None,
                }],
            },
        )
        .await
        .unwrap();
    let created = f
        .models
        .create(
            f.alice.organization(),
            NewUserModel {
                parent_model_id: "local/plain".into(),
                display_name: Name::parse("Pirate").unwrap(),
                description: None,
                system_prompt_id: Some(prompt.prompt.id.clone()),
                system_prompt: None,
                metadata: Default::default(),
            },
        )
        .await
        .unwrap();
    let started = f
        .chats
        .start(&f.alice, ask(created.model.id.as_str(), "ahoy"))
        .await
        .unwrap();
    assert_eq!(
        started.chat.model.system_prompt_id.as_ref(),
        Some(&prompt.prompt.id)
    );
    let chat = started.chat.id.clone();
    run(started).await;
    assert_eq!(
        f.model.last_request().messages[0].content,
        "You are a pirate."
    );

    f.prompts
        .update_content(
            f.alice.organization(),
            &particle.id,
            tessera_prompts::Content::parse("You are a robot.").unwrap(),
        )
        .await
        .unwrap();
    run(f
        .chats
        .start(&f.alice, follow_up(&chat, "again"))
        .await
        .unwrap())
    .await;
    assert_eq!(
        f.model.last_request().messages[0].content,
        "You are a pirate."
    );
}

#[tokio::test]
async fn one_generation_at_a_time_per_chat_and_it_outlives_its_listeners() {
    let f = fixture();
    let first = f
        .chats
        .start(&f.alice, ask("local/plain", "one"))
        .await
        .unwrap();
    let chat = first.chat.id.clone();
    run(first).await;

    let open = f.model.hold();
    let second = f
        .chats
        .start(&f.alice, follow_up(&chat, "two"))
        .await
        .unwrap();
    // The client went away: nobody listens any more.
    drop(second.events);
    let generation = tokio::spawn(second.generation);
    assert_eq!(
        f.chats
            .start(&f.alice, follow_up(&chat, "three"))
            .await
            .err(),
        Some(ChatError::Generating(chat.clone()))
    );
    let attached = f
        .chats
        .attach(&f.alice, &chat)
        .await
        .unwrap()
        .unwrap()
        .events;
    open.send(()).unwrap();
    generation.await.unwrap();
    let seen: Vec<_> = attached.collect().await;
    assert!(matches!(
        *seen[seen.len() - 1],
        GenerationEvent::Finished(_)
    ));
    assert!(f.chats.attach(&f.alice, &chat).await.unwrap().is_none());
    let record = f.chats.get(&f.alice, &chat).await.unwrap();
    assert_eq!(record.chat.status, None);
    assert_eq!(record.messages.len(), 4);
}

#[tokio::test]
async fn an_answer_is_cancelled_only_where_and_while_it_generates() {
    let f = fixture();
    let open = f.model.hold();
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "long question"))
        .await
        .unwrap();
    let (chat, answer) = (started.chat.id.clone(), started.message_id.clone());
    let generation = tokio::spawn(started.generation);

    // Another instance over the same chats cannot stop it: the generation is not its own.
    let other = ChatService::new(ports(
        f.store.clone(),
        &f.models,
        &f.prompts,
        f.files.clone(),
        f.clock.clone(),
    ));
    assert!(matches!(
        other.cancel_answer(&f.alice, &chat, &answer).await,
        Ok(AnswerCancellation::Elsewhere)
    ));
    // Another answer of the chat is not the one generating.
    let earlier = tessera_chats::MessageId::generate();
    assert!(matches!(
        f.chats.cancel_answer(&f.alice, &chat, &earlier).await,
        Ok(AnswerCancellation::Elsewhere)
    ));
    // Someone else's chat is not found.
    let bob = caller(
        f.alice.organization(),
        "bob",
        "chats:invoke chats:read files:read",
    );
    assert_eq!(
        f.chats.cancel_answer(&bob, &chat, &answer).await.err(),
        Some(ChatError::NotFound(chat.clone()))
    );

    let Ok(AnswerCancellation::Cancelled(record)) =
        f.chats.cancel_answer(&f.alice, &chat, &answer).await
    else {
        panic!("the running answer is cancelled here");
    };
    assert_eq!(record.chat.status, Some(ChatStatus::Error));
    assert_eq!(record.chat.error.as_deref(), Some(tessera_chats::CANCELLED));
    drop(open);
    generation.await.unwrap();

    // Ended: nothing left to cancel, and the chat says why.
    let Ok(AnswerCancellation::NotRunning(record)) =
        f.chats.cancel_answer(&f.alice, &chat, &answer).await
    else {
        panic!("an ended answer is not running");
    };
    assert_eq!(record.chat.status, Some(ChatStatus::Error));

    // A deleted chat is not found.
    f.chats.delete(&f.alice, &chat).await.unwrap();
    assert_eq!(
        f.chats.cancel_answer(&f.alice, &chat, &answer).await.err(),
        Some(ChatError::NotFound(chat))
    );
}

#[tokio::test]
async fn a_failure_keeps_the_partial_answer_and_is_recorded() {
    let f = fixture();
    *f.model.reply.lock().unwrap() = vec![
        Ok(ChatEvent::TextDelta("partial".into())),
        Err(ProviderError::Timeout),
    ];
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "q"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let events = run(started).await;
    assert_eq!(
        events.last(),
        Some(&GenerationEvent::Failed(ChatError::Provider(
            ProviderError::Timeout
        )))
    );
    let record = f.chats.get(&f.alice, &chat).await.unwrap();
    assert_eq!(record.chat.status, Some(ChatStatus::Error));
    assert!(
        record
            .chat
            .error
            .unwrap()
            .contains("did not answer in time")
    );
    // The turn is stored with what the model produced, marked as failed.
    assert_eq!(record.messages.len(), 2);
    assert_eq!(record.messages[0].content, "q");
    let partial = &record.messages[1];
    assert_eq!(partial.content, "partial");
    assert_eq!(
        partial.usage.as_ref().unwrap().finish_reason,
        FinishReason::Other("error".into())
    );

    // A failure before anything was produced stores nothing.
    *f.model.reply.lock().unwrap() = vec![Err(ProviderError::Timeout)];
    let started = f
        .chats
        .start(&f.alice, follow_up(&chat, "again"))
        .await
        .unwrap();
    run(started).await;
    let record = f.chats.get(&f.alice, &chat).await.unwrap();
    assert_eq!(record.chat.status, Some(ChatStatus::Error));
    assert_eq!(record.messages.len(), 2);

    // The chat can be continued after a failure.
    f.model.answer("ok");
    run(f
        .chats
        .start(&f.alice, follow_up(&chat, "again"))
        .await
        .unwrap())
    .await;
    assert_eq!(
        f.chats.get(&f.alice, &chat).await.unwrap().chat.status,
        None
    );
}

#[tokio::test]
async fn a_panicking_provider_fails_the_generation() {
    struct Panicking;

    #[async_trait]
    impl ChatModel for Panicking {
        fn capabilities(&self) -> Capabilities {
            Capabilities::default()
        }

        fn tokenizer(&self) -> Arc<dyn TokenCounter> {
            Arc::new(WordCounter)
        }

        async fn stream(&self, _: ChatRequest) -> Result<ChatStream, ProviderError> {
            Ok(Box::pin(stream::once(async {
                panic!("engine bug");
            })))
        }
    }

    let f = fixture();
    let mut providers = Providers::default();
    providers.insert("local/plain", Arc::new(Panicking));
    let models = f.models.clone().with_providers(providers);
    let chats = ChatService::new(ports(
        Arc::new(InMemoryChatStore::new()),
        &models,
        &f.prompts,
        Arc::new(NoAttachments),
        Arc::new(ManualClock::new(Utc::now())),
    ));
    let started = chats
        .start(&f.alice, ask("local/plain", "q"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let events = run(started).await;
    assert!(matches!(
        events.last(),
        Some(GenerationEvent::Failed(ChatError::Domain(_)))
    ));
    let record = chats.get(&f.alice, &chat).await.unwrap();
    assert_eq!(record.chat.status, Some(ChatStatus::Error));
    // The chat is usable again.
    assert!(
        chats
            .start(&f.alice, follow_up(&chat, "again"))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn strict_structured_output_is_validated() {
    let f = fixture();
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"]
    });
    let request = |strict: bool| CompletionRequest {
        response_format: Some(JsonSchemaFormat {
            name: "result".into(),
            strict,
            schema: schema.clone(),
        }),
        ..ask("local/small", "q")
    };
    f.model.answer("{\"answer\": \"many\"}");
    let events = run(f.chats.start(&f.alice, request(true)).await.unwrap()).await;
    let Some(GenerationEvent::Failed(ChatError::SchemaMismatch(violations))) = events.last() else {
        panic!("{events:?}")
    };
    assert!(violations[0].starts_with("/answer:"), "{violations:?}");

    // Not strict: stored as answered.
    let events = run(f.chats.start(&f.alice, request(false)).await.unwrap()).await;
    assert!(matches!(events.last(), Some(GenerationEvent::Finished(_))));

    f.model.answer("{\"answer\": 42}");
    let events = run(f.chats.start(&f.alice, request(true)).await.unwrap()).await;
    assert!(matches!(events.last(), Some(GenerationEvent::Finished(_))));

    let mut invalid = request(true);
    invalid.response_format.as_mut().unwrap().schema = json!({"type": 12});
    assert_eq!(
        invalid_locs(f.chats.start(&f.alice, invalid).await.err().unwrap()).len(),
        1
    );
}

#[tokio::test]
async fn the_context_window_drops_the_oldest_turns() {
    let f = fixture();
    // local/small: 64-token window, 16 reserved for the answer → 48 for the prompt.
    f.model.answer("a b c d e f g h");
    let first = f
        .chats
        .start(&f.alice, ask("local/small", "w w w w w w w w w w"))
        .await
        .unwrap();
    assert_eq!(first.truncated_messages, 0);
    let chat = first.chat.id.clone();
    run(first).await;
    let second = f
        .chats
        .start(&f.alice, follow_up(&chat, "x x x x"))
        .await
        .unwrap();
    // 3 + (4+10) + (4+8) + (4+4) = 37 ≤ 48: everything fits.
    assert_eq!(second.truncated_messages, 0);
    run(second).await;
    let third = f
        .chats
        .start(&f.alice, follow_up(&chat, "y y y y"))
        .await
        .unwrap();
    // 3 + 8 (turn) + 12 + 8 + 12 + 14 = 57 > 48: the first question goes.
    assert_eq!(third.truncated_messages, 1);
    run(third).await;
    let sent = f.model.last_request();
    assert_eq!(sent.messages[0].content, "a b c d e f g h");
    assert_eq!(sent.max_tokens, Some(16));

    let too_long = "z ".repeat(60);
    assert_eq!(
        invalid_locs(
            f.chats
                .start(&f.alice, follow_up(&chat, &too_long))
                .await
                .err()
                .unwrap()
        )
        .len(),
        1
    );
}

#[tokio::test]
async fn tools_round_trip_and_capabilities_are_checked() {
    let f = fixture();
    *f.model.reply.lock().unwrap() = vec![
        Ok(ChatEvent::ToolCallStart {
            index: 0,
            id: "call_1".into(),
            name: "weather".into(),
        }),
        Ok(ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            delta: "{\"city\":\"Oslo\"}".into(),
        }),
        Ok(ChatEvent::ToolCallEnd { index: 0 }),
        Ok(finish(FinishReason::ToolCalls)),
    ];
    let tools = vec![ToolSpec {
        name: "weather".into(),
        description: None,
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    let started = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                tools: tools.clone(),
                ..ask("local/small", "weather?")
            },
        )
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let events = run(started).await;
    let Some(GenerationEvent::Finished(answer)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(answer.tool_calls[0].id, "call_1");

    // The client answers the call; the model continues.
    f.model.answer("It is sunny");
    let result = NewMessage {
        role: Role::Tool,
        content: "sunny".into(),
        tool_calls: Vec::new(),
        tool_call_id: Some("call_1".into()),
        attachments: Vec::new(),
        images: Vec::new(),
    };
    let mut wrong = result.clone();
    wrong.tool_call_id = Some("call_9".into());
    let next = |message: NewMessage| CompletionRequest {
        chat_id: Some(chat.clone()),
        messages: vec![message],
        tools: tools.clone(),
        ..Default::default()
    };
    assert_eq!(
        invalid_locs(f.chats.start(&f.alice, next(wrong)).await.err().unwrap()),
        [
            "body.messages.0.toolCallId: `call_9` does not match a tool call of an earlier assistant message"
        ]
    );
    run(f.chats.start(&f.alice, next(result)).await.unwrap()).await;
    let sent = f.model.last_request();
    assert_eq!(
        sent.messages[1].tool_calls,
        [ToolCall {
            id: "call_1".into(),
            name: "weather".into(),
            arguments: "{\"city\":\"Oslo\"}".into()
        }]
    );
    assert_eq!(sent.messages[2].tool_call_id.as_deref(), Some("call_1"));

    // Models without tools or reasoning refuse them.
    let refused = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                tools,
                enable_reasoning: true,
                ..ask("local/plain", "q")
            },
        )
        .await
        .err()
        .unwrap();
    assert_eq!(
        invalid_locs(refused),
        [
            "body.tools: model local/plain does not support tools",
            "body.enableReasoning: model local/plain does not support reasoning"
        ]
    );
}

#[tokio::test]
async fn chats_are_private_listed_newest_first_deleted_and_restored() {
    let f = fixture();
    let mut ids = Vec::new();
    for n in 0..3 {
        let started = f
            .chats
            .start(&f.alice, ask("local/plain", &format!("q{n}")))
            .await
            .unwrap();
        ids.push(started.chat.id.clone());
        run(started).await;
    }
    let bob = caller(
        f.alice.organization(),
        "bob",
        "chats:invoke chats:read files:read",
    );
    assert_eq!(
        f.chats.get(&bob, &ids[0]).await.err(),
        Some(ChatError::NotFound(ids[0].clone()))
    );
    assert_eq!(
        f.chats
            .list(&bob, false, Limit::DEFAULT, None)
            .await
            .unwrap()
            .total_count,
        Some(0)
    );
    let admin = caller(f.alice.organization(), "bob", "chats:admin files:read");
    assert!(f.chats.get(&admin, &ids[0]).await.is_ok());

    let page = f
        .chats
        .list(&f.alice, false, Limit::new(2).unwrap(), None)
        .await
        .unwrap();
    assert_eq!(page.items[0].id, ids[2]);
    assert_eq!(page.total_count, Some(3));
    let rest = f
        .chats
        .list(
            &f.alice,
            false,
            Limit::new(2).unwrap(),
            page.next_cursor.as_ref().map(|c| c.as_str()),
        )
        .await
        .unwrap();
    assert_eq!(
        rest.items.iter().map(|c| &c.id).collect::<Vec<_>>(),
        [&ids[0]]
    );

    let deleted = f.chats.delete(&f.alice, &ids[1]).await.unwrap();
    assert!(deleted.deleted_at.is_some());
    assert_eq!(
        f.chats
            .list(&f.alice, false, Limit::DEFAULT, None)
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    assert_eq!(
        f.chats
            .list(&f.alice, true, Limit::DEFAULT, None)
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    assert_eq!(
        f.chats
            .start(&f.alice, follow_up(&ids[1], "more"))
            .await
            .err(),
        Some(ChatError::Deleted(ids[1].clone()))
    );
    let restored = f.chats.restore(&f.alice, &ids[1]).await.unwrap();
    assert_eq!(restored.deleted_at, None);
    assert!(
        f.chats
            .start(&f.alice, follow_up(&ids[1], "more"))
            .await
            .is_ok()
    );

    let renamed = f
        .chats
        .rename(&f.alice, &ids[0], Some("Trip".into()))
        .await
        .unwrap();
    assert_eq!(renamed.title.as_deref(), Some("Trip"));
    assert_eq!(
        invalid_locs(
            f.chats
                .rename(&f.alice, &ids[0], Some("x".repeat(501)))
                .await
                .err()
                .unwrap()
        ),
        ["body.title: must be at most 500 characters"]
    );
}

#[tokio::test]
async fn generations_of_a_stopped_process_fail_once_its_lease_lapses() {
    let f = fixture();
    let lease = std::time::Duration::from_secs(30);
    assert_eq!(f.chats.recover_interrupted(lease).await.unwrap(), 0);
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "q"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    drop(started); // the process died before the generation ran
    // Another replica on the same database.
    let runner = Arc::new(f.store.another_runner());
    let replica = ChatService::new(ChatPorts {
        leases: runner.clone(),
        ..ports(
            runner,
            &f.models,
            &f.prompts,
            f.files.clone(),
            f.clock.clone(),
        )
    });
    assert_eq!(
        replica.recover_interrupted(lease).await.unwrap(),
        0,
        "the first process's lease is fresh"
    );
    f.clock.advance(chrono::Duration::seconds(31));
    assert_eq!(
        f.chats.recover_interrupted(lease).await.unwrap(),
        0,
        "a process never fails its own generations, even after its lease lapsed"
    );
    f.clock.advance(chrono::Duration::seconds(29));
    assert_eq!(replica.recover_interrupted(lease).await.unwrap(), 0);
    let record = f.chats.get(&f.alice, &chat).await.unwrap();
    assert_eq!(record.chat.status, Some(ChatStatus::Generating));
    f.clock.advance(chrono::Duration::seconds(2));
    assert_eq!(
        replica.recover_interrupted(lease).await.unwrap(),
        1,
        "the first process stopped renewing its lease 31 s ago"
    );
    let record = f.chats.get(&f.alice, &chat).await.unwrap();
    assert_eq!(record.chat.status, Some(ChatStatus::Error));
    assert_eq!(
        record.chat.error.as_deref(),
        Some(tessera_chats::INTERRUPTED)
    );
}

#[tokio::test]
async fn unknown_models_and_new_chats_without_a_model_are_refused() {
    let f = fixture();
    assert!(matches!(
        f.chats.start(&f.alice, ask("local/none", "q")).await.err(),
        Some(ChatError::Model(
            tessera_models::ModelError::UnknownBaseModel(_)
        ))
    ));
    let request = CompletionRequest {
        messages: vec![user("q")],
        ..Default::default()
    };
    assert_eq!(
        invalid_locs(f.chats.start(&f.alice, request).await.err().unwrap()),
        ["body.modelId: a new chat needs a modelId (or give chatId to continue a chat)"]
    );
    assert_eq!(
        f.chats
            .start(&f.alice, follow_up(&ChatId::generate(), "q"))
            .await
            .err()
            .map(|e| matches!(e, ChatError::NotFound(_))),
        Some(true)
    );
}

#[tokio::test]
async fn a_routed_answer_keeps_its_route_and_bills_the_provider_that_answered() {
    let f = fixture();
    let route = Route {
        deployment: "backup".into(),
        provider: "azure".into(),
        failed_attempts: vec![FailedAttempt {
            deployment: "primary".into(),
            error: "the model provider failed: boom".into(),
        }],
    };
    f.model.queued.lock().unwrap().push_back(vec![
        Ok(ChatEvent::Routed(route.clone())),
        Ok(ChatEvent::TextDelta("Hi".into())),
        Ok(finish(FinishReason::Stop)),
    ]);
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "Hi there"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    run(started).await;
    let records = f.store.usage_records();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].provider, "azure",
        "not the catalog's first provider"
    );
    let record = f.chats.get(&f.alice, &chat).await.unwrap();
    let answer = record.messages.last().unwrap();
    assert_eq!(answer.content, "Hi");
    assert_eq!(answer.usage.as_ref().unwrap().route.as_ref(), Some(&route));
}

#[tokio::test]
async fn every_completion_writes_one_usage_record_with_its_answer() {
    let f = fixture();
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "Hi there"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let answer_id = started.message_id.clone();
    run(started).await;
    let records = f.store.usage_records();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(&record.organization_id, f.alice.organization());
    assert_eq!(record.principal, "alice");
    assert_eq!(record.principal_kind, PrincipalKind::User);
    assert_eq!(record.chat_id, chat.to_string());
    assert_eq!(record.message_id, answer_id.to_string());
    assert_eq!(record.model_id, "local/plain");
    assert_eq!(record.parent_model_id, "local/plain");
    assert_eq!(record.provider, "local");
    assert_eq!((record.tokens.input, record.tokens.output), (7, 3));
    assert_eq!(record.tokens.cached_input, 5, "the provider's cache reads");
    // (7 + 3) tokens × the catalog's credit multiplier of 3.
    assert_eq!(record.credits, 30);
    assert_eq!(record.finish_reason, "stop");
    // The manual clock does not move: no time passed between acceptance and storage.
    assert_eq!(record.latency_ms, 0);

    // A user model is recorded under its own id, with its base model as the parent.
    let model = f
        .models
        .create(
            f.alice.organization(),
            NewUserModel {
                parent_model_id: "local/plain".into(),
                display_name: Name::parse("Bot").unwrap(),
                description: None,
                system_prompt_id: None,
                system_prompt: None,
                metadata: Default::default(),
            },
        )
        .await
        .unwrap()
        .model;
    run(f
        .chats
        .start(&f.alice, ask(model.id.as_str(), "Hi"))
        .await
        .unwrap())
    .await;
    let records = f.store.usage_records();
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].model_id, model.id.to_string());
    assert_eq!(records[1].parent_model_id, "local/plain");
}

#[tokio::test]
async fn failed_attempts_are_billed_only_when_they_consumed_tokens() {
    let f = fixture();
    // Refused before producing anything: nothing to bill.
    *f.model.reply.lock().unwrap() = vec![Err(ProviderError::Timeout)];
    run(f
        .chats
        .start(&f.alice, ask("local/plain", "one two three"))
        .await
        .unwrap())
    .await;
    assert!(f.store.usage_records().is_empty());

    // Failed mid-answer without a usage report: the prompt as counted and the output so
    // far, counted by the model's tokenizer (here: words).
    *f.model.reply.lock().unwrap() = vec![
        Ok(ChatEvent::TextDelta("four five".into())),
        Err(ProviderError::Timeout),
    ];
    run(f
        .chats
        .start(&f.alice, ask("local/plain", "one two three"))
        .await
        .unwrap())
    .await;
    let records = f.store.usage_records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].finish_reason, "error");
    assert_eq!(records[0].tokens.output, 2);
    assert!(records[0].tokens.input >= 3, "{:?}", records[0].tokens);
    assert_eq!(records[0].credits, records[0].tokens.total() * 3);

    // A strict-schema mismatch consumed everything the provider reports.
    f.model.answer("{\"answer\": \"many\"}");
    let strict = CompletionRequest {
        response_format: Some(JsonSchemaFormat {
            name: "result".into(),
            strict: true,
            schema: json!({"type": "object", "properties": {"answer": {"type": "integer"}}}),
        }),
        ..ask("local/small", "q")
    };
    run(f.chats.start(&f.alice, strict).await.unwrap()).await;
    let records = f.store.usage_records();
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].finish_reason, "error");
    assert_eq!((records[1].tokens.input, records[1].tokens.output), (7, 3));
}

#[tokio::test]
async fn an_answer_without_reported_usage_is_counted_and_says_so() {
    let f = fixture();
    *f.model.reply.lock().unwrap() = vec![
        Ok(ChatEvent::TextDelta("one two three four".into())),
        Ok(ChatEvent::Finish {
            reason: FinishReason::Stop,
            usage: Usage::default(),
        }),
    ];
    let events = run(f
        .chats
        .start(&f.alice, ask("local/plain", "a b"))
        .await
        .unwrap())
    .await;
    let GenerationEvent::Finished(answer) = events.last().unwrap() else {
        panic!("{events:?}")
    };
    let usage = answer.usage.as_ref().unwrap().usage;
    assert_eq!(usage.output_tokens, 4);
    assert!(usage.input_tokens >= 2);
    let record = &f.store.usage_records()[0];
    assert_eq!(
        (record.tokens.input, record.tokens.output),
        (
            u64::from(usage.input_tokens),
            u64::from(usage.output_tokens)
        )
    );
}

#[tokio::test]
async fn answers_yield_artifacts_and_revisions_add_versions() {
    use tessera_chats::{ArtifactKind, ArtifactService};

    let f = fixture();
    f.model.answer(
        "## Parser\n\n```rust\nfn parse() {}\n```\n\n```mermaid\nsequenceDiagram\n  A->>B: hi\n```\n",
    );
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "Write it"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let first_answer = started.message_id.clone();
    run(started).await;
    f.model
        .answer("Revised:\n\n## Parser\n\n```rust\nfn parse() -> u8 { 1 }\n```\n");
    run(f
        .chats
        .start(&f.alice, follow_up(&chat, "Return a number"))
        .await
        .unwrap())
    .await;

    let artifacts =
        ArtifactService::new(f.store.clone(), f.store.clone(), CursorCodec::new([4; 32]));
    let page = artifacts
        .list(&f.alice, Some(chat.clone()), Limit::DEFAULT, None)
        .await
        .unwrap();
    let found: Vec<(ArtifactKind, &str, u32, &str)> = page
        .items
        .iter()
        .map(|a| (a.kind, a.identifier.as_str(), a.version, a.content.as_str()))
        .collect();
    // Newest first.
    assert_eq!(
        found,
        [
            (ArtifactKind::Code, "parser", 2, "fn parse() -> u8 { 1 }"),
            (
                ArtifactKind::Mermaid,
                "sequence-diagram",
                1,
                "sequenceDiagram\n  A->>B: hi"
            ),
            (ArtifactKind::Code, "parser", 1, "fn parse() {}"),
        ]
    );
    assert_eq!(page.items[2].message_id, first_answer);
    assert_eq!(page.items[0].language.as_deref(), Some("rust"));
    assert_eq!(page.total_count, Some(3));

    // Another principal does not see them; the chat's admin does.
    let bob = caller(
        f.alice.organization(),
        "bob",
        "chats:invoke chats:read files:read",
    );
    assert!(artifacts.get(&bob, &page.items[0].id).await.is_err());
    let bobs = artifacts
        .list(&bob, None, Limit::DEFAULT, None)
        .await
        .unwrap();
    assert_eq!(bobs.total_count, Some(0));
    // Nor may they list alice's chat's: it is not found for them.
    let unseen = artifacts
        .list(&bob, Some(chat.clone()), Limit::DEFAULT, None)
        .await
        .unwrap_err();
    assert!(matches!(unseen, DomainError::NotFound { .. }), "{unseen:?}");
    let admin = caller(f.alice.organization(), "bob", "chats:admin files:read");
    assert!(artifacts.get(&admin, &page.items[0].id).await.is_ok());
    // Another organization's admin sees nothing.
    let stranger = caller(&OrganizationId::generate(), "bob", "chats:admin files:read");
    assert!(artifacts.get(&stranger, &page.items[0].id).await.is_err());
}

/// A user of `organization` holding `scopes`.
fn caller(organization: &OrganizationId, subject: &str, scopes: &str) -> Caller {
    Caller::of(Principal {
        organization_id: organization.clone(),
        subject: subject.into(),
        kind: PrincipalKind::User,
        scopes: ScopeSet::parse_list(scopes).unwrap(),
        origin: None,
    })
}

/// `loc` as dotted text, with the error type.
fn places(errors: &[FieldError]) -> Vec<(String, String)> {
    errors
        .iter()
        .map(|e| {
            let shown = e.to_string();
            let (loc, _) = shown.split_once(": ").unwrap();
            (loc.to_owned(), e.kind.clone())
        })
        .collect()
}

/// Where each validation error points.
fn located(error: ChatError) -> Vec<String> {
    invalid_locs(error)
        .iter()
        .map(|shown| shown.split(':').next().unwrap_or_default().to_owned())
        .collect()
}

fn attaching(text: &str, files: &[&str]) -> NewMessage {
    NewMessage {
        attachments: files.iter().map(|id| (*id).to_owned()).collect(),
        ..user(text)
    }
}

#[tokio::test]
async fn attachments_inline_documents_send_images_and_stay_with_the_chat() {
    let f = fixture();
    f.files.add(
        "fil_doc",
        "vault.txt",
        AttachmentContent::Text("The vault code is 4711.\n".into()),
    );
    let png = tessera_chats::image("image/png", vec![0x89, b'P', b'N', b'G']);
    f.files
        .add("fil_img", "door.png", AttachmentContent::Image(png.clone()));

    // A model without vision takes documents but no images; unknown files are named.
    let refused = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                model_id: Some("local/plain".into()),
                messages: vec![attaching("Code?", &["fil_doc", "fil_img", "fil_gone"])],
                ..Default::default()
            },
        )
        .await;
    let Err(ChatError::Invalid(errors)) = refused else {
        panic!("{:?}", refused.map(|s| s.chat));
    };
    assert_eq!(
        places(&errors),
        [
            (
                "body.messages.0.attachments.1.fileId".to_owned(),
                "vision_unsupported".to_owned()
            ),
            (
                "body.messages.0.attachments.2.fileId".to_owned(),
                "not_found".to_owned()
            ),
        ]
    );

    // A vision model gets the document inlined before the question and the image with it.
    let started = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                model_id: Some("local/eyes".into()),
                messages: vec![attaching("What is the code?", &["fil_doc", "fil_img"])],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    run(started).await;
    let sent = f.model.last_request().messages;
    let question = sent.last().unwrap();
    assert_eq!(
        question.content,
        "<attachment name=\"vault.txt\">\nThe vault code is 4711.\n</attachment>\n\n\
         What is the code?"
    );
    assert_eq!(question.images, vec![png.clone()]);
    // The message is stored as written, with its attachments.
    let record = f.chats.get(&f.alice, &chat).await.unwrap();
    assert_eq!(record.messages[0].content, "What is the code?");
    let kept: Vec<_> = record.messages[0]
        .attachments
        .iter()
        .map(|a| (a.file_id.as_str(), a.file_name.as_str(), a.kind))
        .collect();
    assert_eq!(
        kept,
        [
            ("fil_doc", "vault.txt", AttachmentKind::Document),
            ("fil_img", "door.png", AttachmentKind::Image)
        ]
    );

    // Continuing sends them again; a file deleted meanwhile becomes a note.
    f.files.0.lock().unwrap().remove("fil_doc");
    run(f
        .chats
        .start(&f.alice, follow_up(&chat, "And the door?"))
        .await
        .unwrap())
    .await;
    let sent = f.model.last_request().messages;
    assert!(
        sent[0].content.starts_with("<attachment name=\"vault.txt\">\n(The attached file is no longer available: file fil_doc does not exist.)"),
        "{}",
        sent[0].content
    );
    assert_eq!(sent[0].images, vec![png]);
    assert!(sent[2].images.is_empty());
}

#[tokio::test]
async fn only_user_messages_attach_files_and_a_few_at_most() {
    let f = fixture();
    f.files
        .add("fil_doc", "a.txt", AttachmentContent::Text("a".into()));
    let mut assistant = attaching("I attach", &["fil_doc"]);
    assistant.role = Role::Assistant;
    let many: Vec<&str> = vec!["fil_doc"; 11];
    let refused = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                model_id: Some("local/plain".into()),
                messages: vec![assistant, attaching("q", &many)],
                ..Default::default()
            },
        )
        .await;
    let Err(ChatError::Invalid(errors)) = refused else {
        panic!("{:?}", refused.map(|s| s.chat));
    };
    assert_eq!(
        places(&errors),
        [
            (
                "body.messages.0.attachments".to_owned(),
                "value_error".to_owned()
            ),
            (
                "body.messages.1.attachments".to_owned(),
                "too_long".to_owned()
            ),
        ]
    );
    assert!(f.model.requests.lock().unwrap().is_empty());
}

/// The in-memory store, whose next new chat is stored only once `release` says how that
/// write ends: a database commit that takes its time, or fails.
struct HeldInsert {
    inner: Arc<InMemoryChatStore>,
    release: Mutex<Option<oneshot::Receiver<Result<(), DomainError>>>>,
}

impl HeldInsert {
    fn over(
        inner: Arc<InMemoryChatStore>,
    ) -> (Arc<Self>, oneshot::Sender<Result<(), DomainError>>) {
        let (release, held) = oneshot::channel();
        let store = Self {
            inner,
            release: Mutex::new(Some(held)),
        };
        (Arc::new(store), release)
    }
}

#[async_trait]
impl ChatStore for HeldInsert {
    async fn insert(&self, chat: &Chat) -> Result<(), DomainError> {
        let held = self.release.lock().unwrap().take();
        if let Some(held) = held {
            held.await.expect("the test releases the insert")?;
        }
        self.inner.insert(chat).await
    }

    async fn get(&self, org: &OrganizationId, id: &ChatId) -> Result<Option<Chat>, DomainError> {
        self.inner.get(org, id).await
    }

    async fn messages(
        &self,
        org: &OrganizationId,
        id: &ChatId,
    ) -> Result<Vec<Message>, DomainError> {
        self.inner.messages(org, id).await
    }

    async fn list(
        &self,
        filter: &ChatFilter,
        page: &PageRequest<ChatId>,
    ) -> Result<Vec<Chat>, DomainError> {
        self.inner.list(filter, page).await
    }

    async fn count(&self, filter: &ChatFilter) -> Result<u64, DomainError> {
        self.inner.count(filter).await
    }

    async fn begin_generation(
        &self,
        org: &OrganizationId,
        id: &ChatId,
        at: chrono::DateTime<Utc>,
    ) -> Result<bool, DomainError> {
        self.inner.begin_generation(org, id, at).await
    }

    async fn finish_generation(
        &self,
        org: &OrganizationId,
        id: &ChatId,
        turn: &FinishedTurn,
        at: chrono::DateTime<Utc>,
    ) -> Result<(), DomainError> {
        self.inner.finish_generation(org, id, turn, at).await
    }

    async fn fail_generation(
        &self,
        org: &OrganizationId,
        id: &ChatId,
        error: &str,
        usage: Option<tessera_usage::UsageRecord>,
        at: chrono::DateTime<Utc>,
    ) -> Result<(), DomainError> {
        self.inner.fail_generation(org, id, error, usage, at).await
    }

    async fn artifact_versions(
        &self,
        org: &OrganizationId,
        id: &ChatId,
    ) -> Result<HashMap<String, u32>, DomainError> {
        self.inner.artifact_versions(org, id).await
    }

    async fn update(&self, chat: &Chat) -> Result<bool, DomainError> {
        self.inner.update(chat).await
    }
}

/// A fixture whose store holds the next new chat's write until the sender says how it ends.
fn fixture_holding_insert() -> (Fixture, oneshot::Sender<Result<(), DomainError>>) {
    let mut release = None;
    let f = fixture_over(|store| {
        let (held, releases) = HeldInsert::over(store);
        release = Some(releases);
        held
    });
    (f, release.expect("the fixture wraps its store"))
}

/// A new chat's generation, running, whose model has been asked.
struct Asked {
    id: ChatId,
    generation: tokio::task::JoinHandle<()>,
    events: EventStream,
    stored: ChatStored,
}

async fn start_until_asked(f: &Fixture) -> Asked {
    let started = f
        .chats
        .start(&f.alice, ask("local/plain", "hello"))
        .await
        .unwrap();
    let generation = tokio::spawn(started.generation);
    while f.model.requests.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    Asked {
        id: started.chat.id,
        generation,
        events: started.events,
        stored: started.stored,
    }
}

#[tokio::test]
async fn a_new_chats_model_is_asked_while_its_row_is_being_stored() {
    let (f, release) = fixture_holding_insert();
    let Asked {
        id,
        generation,
        mut events,
        stored,
    } = start_until_asked(&f).await;
    // The model answers while the chat's write is still held.
    let first = events.next().await.unwrap();
    assert_eq!(
        *first,
        GenerationEvent::Delta(ChatEvent::TextDelta("Hello".into()))
    );
    assert!(stored.clone().now_or_never().is_none());
    let unstored = f.store.get(f.alice.organization(), &id).await.unwrap();
    assert!(unstored.is_none());

    release.send(Ok(())).unwrap();
    stored.await.unwrap();
    generation.await.unwrap();
    let last = events.collect::<Vec<_>>().await.pop().unwrap();
    assert!(matches!(*last, GenerationEvent::Finished(_)), "{last:?}");
    let record = f.chats.get(&f.alice, &id).await.unwrap();
    assert_eq!(record.chat.status, None);
    assert_eq!(record.messages.len(), 2);
}

#[tokio::test]
async fn a_chat_that_cannot_be_stored_stops_its_generation_and_stores_nothing() {
    let (f, release) = fixture_holding_insert();
    // The model is mid-answer (held) when the chat's write fails.
    let _model_held = f.model.hold();
    let asked = start_until_asked(&f).await;
    let down = DomainError::Unavailable {
        message: "database unavailable".into(),
    };
    release.send(Err(down.clone())).unwrap();

    assert_eq!(asked.stored.await, Err(ChatError::Domain(down.clone())));
    // The generation ends without waiting for the model, and says why.
    asked.generation.await.unwrap();
    let events: Vec<_> = asked.events.collect().await;
    assert_eq!(
        events
            .iter()
            .map(|event| (**event).clone())
            .collect::<Vec<_>>(),
        [GenerationEvent::Failed(ChatError::Domain(down))]
    );
    let unstored = f
        .store
        .get(f.alice.organization(), &asked.id)
        .await
        .unwrap();
    assert!(unstored.is_none());
    assert!(f.store.usage_records().is_empty());
}

#[tokio::test]
async fn a_chat_the_store_refuses_at_once_is_refused_by_start() {
    let f = fixture_over(|store| {
        let (held, release) = HeldInsert::over(store);
        let taken = DomainError::Conflict {
            code: "already_exists",
            message: "taken".into(),
        };
        release.send(Err(taken)).unwrap();
        held
    });
    let refused = f.chats.start(&f.alice, ask("local/plain", "hello")).await;
    assert!(
        matches!(
            refused,
            Err(ChatError::Domain(DomainError::Conflict { .. }))
        ),
        "{:?}",
        refused.err()
    );
    assert!(f.model.requests.lock().unwrap().is_empty());
}

#[tokio::test]
async fn stateless_completions_keep_only_their_usage() {
    let f = fixture();
    let request = CompletionRequest {
        stateless: true,
        instructions: Some("Answer in French.".into()),
        stop: vec!["END".into()],
        top_p: Some(0.5),
        ..ask("local/small", "Hello")
    };
    let started = f.chats.start(&f.alice, request).await.unwrap();
    assert!(!started.created);
    let chat = started.chat.id.clone();
    let events = run(started).await;
    let Some(GenerationEvent::Finished(answer)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(answer.content, "Hello there");
    assert!(
        f.chats.get(&f.alice, &chat).await.is_err(),
        "no chat was stored"
    );
    let records = f.usage.all();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].chat_id, chat.to_string());
    assert_eq!(records[0].message_id, answer.id.to_string());
    assert_eq!(records[0].principal, "alice");
    assert!(records[0].tokens.output > 0);
    let asked = f.model.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(asked.messages[0].role, Role::System);
    assert!(asked.messages[0].content.ends_with("Answer in French."));
    assert_eq!(asked.stop, vec!["END".to_owned()]);
    assert_eq!(asked.top_p, Some(0.5));
}

#[tokio::test]
async fn a_stateless_completion_cannot_continue_a_chat_and_images_need_vision() {
    let f = fixture();
    let started = f
        .chats
        .start(&f.alice, ask("local/small", "Hello"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    run(started).await;
    let error = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                stateless: true,
                ..follow_up(&chat, "again")
            },
        )
        .await
        .err()
        .unwrap();
    assert_eq!(located(error), vec!["body.chatId".to_owned()]);

    let with_image = NewMessage {
        images: vec![tessera_chats::image("image/png", vec![1, 2, 3])],
        ..user("what is this?")
    };
    let error = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                model_id: Some("local/plain".into()),
                messages: vec![with_image],
                stateless: true,
                ..Default::default()
            },
        )
        .await
        .err()
        .unwrap();
    assert_eq!(located(error), vec!["body.messages.0.content".to_owned()]);
}

/// OpenAI's Responses clients send a conversation's instructions with every turn: the same
/// ones continue the chat (composed once, after the model's prompt), other ones are refused.
#[tokio::test]
async fn a_continued_chat_accepts_its_own_instructions_only() {
    let f = fixture();
    let started = f
        .chats
        .start(
            &f.alice,
            CompletionRequest {
                instructions: Some("Answer in French.".into()),
                ..ask("local/small", "Hello")
            },
        )
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    run(started).await;
    let again = CompletionRequest {
        instructions: Some("Answer in French.".into()),
        ..follow_up(&chat, "again")
    };
    run(f.chats.start(&f.alice, again).await.unwrap()).await;
    let asked = f.model.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(asked.messages[0].role, Role::System);
    assert!(asked.messages[0].content.ends_with("Answer in French."));
    assert_eq!(
        asked.messages[0]
            .content
            .matches("Answer in French.")
            .count(),
        1
    );

    let other = CompletionRequest {
        instructions: Some("Answer in German.".into()),
        ..follow_up(&chat, "once more")
    };
    let error = f.chats.start(&f.alice, other).await.err().unwrap();
    assert_eq!(located(error), vec!["body.chatId".to_owned()]);
}

#[tokio::test]
async fn a_spent_budget_refuses_before_the_model_is_asked() {
    let f = fixture();
    let mut admission = tessera_chats::MockAdmission::new();
    admission.expect_admit().returning(|_, _| {
        Err(ChatError::BudgetSpent(tessera_chats::BudgetSpent {
            monthly_credits: 10,
            used_credits: 12,
            resets_at: Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).unwrap(),
        }))
    });
    let chats = ChatService::new(ChatPorts {
        admission: Arc::new(admission),
        ..ports(
            Arc::new(InMemoryChatStore::new()),
            &f.models,
            &f.prompts,
            f.files.clone(),
            f.clock.clone(),
        )
    });
    let error = chats
        .start(&f.alice, ask("local/small", "Hello"))
        .await
        .err()
        .unwrap();
    assert!(matches!(error, ChatError::BudgetSpent(_)), "{error:?}");
    assert!(f.model.requests.lock().unwrap().is_empty());
}

/// Tools Tessera would run itself: `weather` answers, `broken` fails.
struct WeatherTools;

#[async_trait]
impl tessera_chats::ServerToolbox for WeatherTools {
    fn specs(&self) -> Vec<ToolSpec> {
        ["weather", "broken"]
            .map(|name| ToolSpec {
                name: name.into(),
                description: None,
                parameters: json!({"type": "object"}),
            })
            .to_vec()
    }

    async fn run(&self, call: &ToolCall) -> tessera_chats::ToolRun {
        tessera_chats::ToolRun {
            content: format!("{} says {}", call.name, call.arguments),
            is_error: call.name == "broken",
        }
    }
}

struct Weather;

#[async_trait]
impl tessera_chats::ServerTools for Weather {
    async fn toolbox(
        &self,
        _: &OrganizationId,
        _: &str,
    ) -> Result<Option<Arc<dyn tessera_chats::ServerToolbox>>, DomainError> {
        Ok(Some(Arc::new(WeatherTools)))
    }
}

fn calls(calls: &[(&str, &str)]) -> Vec<Result<ChatEvent, ProviderError>> {
    let mut events = Vec::new();
    for (index, (id, name)) in calls.iter().enumerate() {
        let index = index as u32;
        events.push(Ok(ChatEvent::ToolCallStart {
            index,
            id: (*id).into(),
            name: (*name).into(),
        }));
        events.push(Ok(ChatEvent::ToolCallArgumentsDelta {
            index,
            delta: "{\"city\":\"Oslo\"}".into(),
        }));
        events.push(Ok(ChatEvent::ToolCallEnd { index }));
    }
    events.push(Ok(finish(FinishReason::ToolCalls)));
    events
}

#[tokio::test]
async fn server_tools_run_in_steps_each_stored_and_billed() {
    let f = fixture();
    let chats = ChatService::new(ChatPorts {
        server_tools: Arc::new(Weather),
        usage: f.usage.clone(),
        ..f.ports()
    });
    f.model
        .queued
        .lock()
        .unwrap()
        .extend([calls(&[("c1", "weather")]), calls(&[("c2", "broken")])]);
    f.model.answer("Sunny");
    let started = chats
        .start(&f.alice, ask("local/small", "weather?"))
        .await
        .unwrap();
    let chat = started.chat.id.clone();
    let events = run(started).await;
    let results: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            GenerationEvent::ToolResult(result) => Some((result.name.as_str(), result.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results, [("weather", false), ("broken", true)]);
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == GenerationEvent::StepStarted)
            .count(),
        2
    );
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, GenerationEvent::Delta(ChatEvent::ToolCallStart { .. })))
    );
    let Some(GenerationEvent::Finished(answer)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(answer.content, "Sunny");

    let stored: Vec<_> = (f.chats.get(&f.alice, &chat).await.unwrap().messages)
        .into_iter()
        .map(|m| {
            (
                m.sequence,
                m.role,
                m.tool_call_id,
                m.tool_calls.len(),
                m.content,
            )
        })
        .collect();
    assert_eq!(
        stored,
        [
            (0, Role::User, None, 0, "weather?".to_owned()),
            (1, Role::Assistant, None, 1, String::new()),
            (
                2,
                Role::Tool,
                Some("c1".into()),
                0,
                "weather says {\"city\":\"Oslo\"}".into()
            ),
            (3, Role::Assistant, None, 1, String::new()),
            (
                4,
                Role::Tool,
                Some("c2".into()),
                0,
                "broken says {\"city\":\"Oslo\"}".into()
            ),
            (5, Role::Assistant, None, 0, "Sunny".into()),
        ]
    );
    // Each tool step's model call is billed as it ends; the answer's with the turn.
    let billed = f
        .usage
        .all()
        .into_iter()
        .filter(|record| record.finish_reason == "tool_calls")
        .count();
    assert_eq!(billed, 2);
    // The last request carried both steps, and the tools again.
    let last = f.model.last_request();
    assert_eq!(last.messages.len(), 5);
    assert_eq!(last.tools.len(), 2);
}

#[tokio::test]
async fn tool_steps_are_bounded_and_names_may_not_clash() {
    let f = fixture();
    let chats = ChatService::new(ChatPorts {
        server_tools: Arc::new(Weather),
        ..f.ports()
    });
    let error = chats
        .start(
            &f.alice,
            CompletionRequest {
                max_tool_steps: Some(33),
                ..ask("local/small", "weather?")
            },
        )
        .await
        .err()
        .unwrap();
    assert_eq!(invalid_locs(error), ["body.maxToolSteps: at most 32"]);
    let clash = chats
        .start(
            &f.alice,
            CompletionRequest {
                tools: vec![ToolSpec {
                    name: "weather".into(),
                    description: None,
                    parameters: json!({"type": "object"}),
                }],
                ..ask("local/small", "weather?")
            },
        )
        .await
        .err()
        .unwrap();
    assert_eq!(invalid_locs(clash).len(), 1);

    // After its last step the model is asked without the server's tools.
    f.model
        .queued
        .lock()
        .unwrap()
        .extend([calls(&[("c1", "weather")])]);
    f.model.answer("Done");
    let started = chats
        .start(
            &f.alice,
            CompletionRequest {
                max_tool_steps: Some(1),
                ..ask("local/small", "weather?")
            },
        )
        .await
        .unwrap();
    let events = run(started).await;
    assert!(matches!(events.last(), Some(GenerationEvent::Finished(_))));
    assert!(f.model.last_request().tools.is_empty());
}

#[tokio::test]
async fn retrieval_is_asked_the_question_and_its_best_passages_within_their_share_reach_the_model()
{
    let f = fixture();
    let passage = |id: &str, score: f32, text: &str| tessera_chats::Source {
        id: id.into(),
        file_id: format!("file_{id}"),
        dataset_id: Some("ds".into()),
        title: Some(format!("{id}.md")),
        text: text.into(),
        score,
        file_name: Some(format!("{id}.md")),
        location: None,
    };
    let mut retriever = tessera_chats::MockRetriever::new();
    let retrieved = tessera_chats::Retrieved {
        whole: vec![passage("handbook", 1.0, "Always be kind.")],
        candidates: vec![
            passage("weak", 0.2, "Lunch is at noon."),
            passage("best", 0.9, "Refunds take 14 days."),
            // 4096 tokens of window leave 819 for passages: this one (1000) never fits.
            passage("huge", 0.5, &"long ".repeat(800)),
        ],
    };
    retriever
        .expect_retrieve()
        .withf(|_, query| {
            *query
                == tessera_chats::RetrievalQuery {
                    model_id: "local/plain".into(),
                    question: "How long do refunds take?".into(),
                    context_window: 4096,
                    passages: tessera_chats::RAG_PASSAGES,
                    datasets: Vec::new(),
                    files: None,
                }
        })
        .times(1)
        .return_once(move |_, _| Ok(retrieved));
    let chats = ChatService::new(ChatPorts {
        retriever: Arc::new(retriever),
        ..f.ports()
    });
    let started = chats
        .start(&f.alice, ask("local/plain", "How long do refunds take?"))
        .await
        .unwrap();
    let events = run(started).await;
    let Some(GenerationEvent::Finished(answer)) = events.last() else {
        panic!("{events:?}")
    };
    let cited: Vec<&str> = answer.sources.iter().map(|s| s.id.as_str()).collect();
    // Whole documents first, then the best passage; the huge one ends the list.
    assert_eq!(cited, ["handbook", "best"]);
    let system = &f.model.last_request().messages[0];
    assert_eq!(system.role, Role::System);
    assert!(system.content.contains("[1] handbook.md\nAlways be kind."));
    assert!(
        system
            .content
            .contains("[2] best.md\nRefunds take 14 days.")
    );
    assert!(!system.content.contains("Lunch"), "{}", system.content);
}

#[tokio::test]
async fn a_requests_own_file_search_names_its_datasets_and_how_many_passages_the_model_reads() {
    let f = fixture();
    let passage = |id: &str, score: f32| tessera_chats::Source {
        id: id.into(),
        file_id: format!("file_{id}"),
        dataset_id: Some("ds_asked".into()),
        title: Some(format!("{id}.md")),
        text: format!("{id} says something short."),
        score,
        file_name: Some(format!("{id}.md")),
        location: None,
    };
    let candidates: Vec<_> = (0..9)
        .map(|i| passage(&format!("p{i}"), i as f32 / 10.0))
        .collect();
    let mut retriever = tessera_chats::MockRetriever::new();
    retriever
        .expect_retrieve()
        .withf(|_, query| {
            query.datasets == ["ds_asked", "ds_other"]
                && query.passages == 7
                && query.files == Some(vec!["file_p1".to_owned()])
        })
        .times(1)
        .return_once(move |_, _| {
            Ok(tessera_chats::Retrieved {
                whole: Vec::new(),
                candidates,
            })
        });
    let chats = ChatService::new(ChatPorts {
        retriever: Arc::new(retriever),
        ..f.ports()
    });
    let request = CompletionRequest {
        file_search: Some(tessera_chats::FileSearch {
            datasets: vec!["ds_asked".into(), "ds_other".into()],
            max_results: 7,
            files: Some(vec!["file_p1".into()]),
        }),
        ..ask("local/plain", "What do the files say?")
    };
    let started = chats.start(&f.alice, request).await.unwrap();
    let events = run(started).await;
    let Some(GenerationEvent::Finished(answer)) = events.last() else {
        panic!("{events:?}")
    };
    let cited: Vec<&str> = answer.sources.iter().map(|s| s.id.as_str()).collect();
    // Seven passages, more than the model's own knowledge gives, best first.
    assert_eq!(cited, ["p8", "p7", "p6", "p5", "p4", "p3", "p2"]);
    assert!(matches!(events.first(), Some(GenerationEvent::Sources(s)) if s.len() == 7));
}

#[path = "service/guardrails.rs"]
mod guardrails;
