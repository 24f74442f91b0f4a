use std::{collections::HashSet, future::Future, panic::AssertUnwindSafe, pin::pin, sync::Arc};

use chrono::{DateTime, Utc};
use futures_util::{
    FutureExt, StreamExt,
    future::{self, BoxFuture, Either, Shared},
};
use tessera_guardrails::GuardrailRecord;
use tessera_kernel::{
    Caller, Clock, CursorCodec, DomainError, FieldError, Limit, LocSegment, OrganizationId, Page,
    PageRequest, PrincipalKind,
};
use tessera_models::{
    ChatEvent, ChatMessage, ChatModel, ChatRequest, Completion, JsonSchemaFormat, ProviderError,
    ReasoningEffort, Role, Route, ToolCall, ToolChoice, ToolSpec, Usability, Usage,
};
use tessera_prompts::TokenCounter;
use tessera_usage::{FAILED, Tokens, UsageId, UsageRecord, UsageStore};

use crate::{
    Admission, Artifact, ArtifactId, Attached, Attachment, AttachmentSource, CacheDirectives,
    CacheStatus, Chat, ChatError, ChatFilter, ChatId, ChatRecord, ChatStore, EventStream,
    FileSearch, FinishedTurn, GenerationEvent, GenerationHub, GenerationLeases, GuardrailSource,
    INTERRUPTED, MAX_ATTACHMENTS, MAX_TITLE_CHARS, Message, MessageId, MessageUsage, ModelResolver,
    NewMessage, NoGuardrails, ResponseCache, Retriever, ServerToolbox, ServerTools, Source,
    SystemPromptSource, ToolResult,
    artifact::versioned,
    context::ContextOverflow,
    extract_artifacts,
    guardrails::AnswerGuard,
    hub::Publisher,
    response_cache::{CachePlan, CacheRun},
    validate::conformance_errors,
};
mod cancel;
mod start;

pub use cancel::AnswerCancellation;

const CHAT_LIST: &str = "chats";

impl From<&Message> for ChatMessage {
    fn from(message: &Message) -> Self {
        ChatMessage {
            role: message.role,
            content: message.content.clone(),
            tool_calls: message.tool_calls.clone(),
            tool_call_id: message.tool_call_id.clone(),
            images: Vec::new(),
        }
    }
}

/// A request for a completion: a new chat (`model_id`) or the next turn of one (`chat_id`).
#[derive(Debug, Clone, Default)]
pub struct CompletionRequest {
    pub model_id: Option<String>,
    pub chat_id: Option<ChatId>,
    pub messages: Vec<NewMessage>,
    pub tools: Vec<ToolSpec>,
    /// Whether the model must call a tool (of `tools` or of the MCP servers linked to the
    /// model): `Required` or a named function force the first call of the answer; the steps
    /// after a server-run call are the model's choice again (`None` stays `None`).
    pub tool_choice: ToolChoice,
    pub response_format: Option<JsonSchemaFormat>,
    pub enable_reasoning: bool,
    /// With `enable_reasoning`: think only if the model can (Anthropic's adaptive
    /// thinking); a model without reasoning then answers without it instead of refusing.
    pub reasoning_if_supported: bool,
    pub reasoning_budget: Option<u32>,
    /// With `enable_reasoning`: how hard the model should think.
    pub reasoning_effort: Option<ReasoningEffort>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    /// Generation stops before any of these.
    pub stop: Vec<String>,
    /// The caller's own instructions, appended to the model's system prompt.
    pub instructions: Option<String>,
    /// Keep nothing but the usage record: no chat, no messages, no artifacts (an
    /// OpenAI-style completion). Only for new conversations.
    pub stateless: bool,
    /// How many rounds of server-run tool calls (MCP tools linked to the model) the answer
    /// may take before the model must answer without them; at most [`MAX_TOOL_STEPS`],
    /// [`DEFAULT_TOOL_STEPS`] when not given.
    pub max_tool_steps: Option<u32>,
    /// Datasets the request asks to search by itself, besides the model's knowledge.
    pub file_search: Option<FileSearch>,
    /// What the request asks of the response cache (of models opted in).
    pub cache: CacheDirectives,
}

/// The write of a new chat's row, under way while its generation starts; any number of
/// clones wait for the same write. Ready at once for a continued chat (its row exists).
pub type ChatStored = Shared<BoxFuture<'static, Result<(), ChatError>>>;

/// A generation that has begun: the chat is `generating` and `events` will carry
/// everything it produces. The caller must run `generation` (it owns no runtime here);
/// it stores the answer and ends the events whether or not anyone still listens.
pub struct Started {
    pub chat: Chat,
    pub created: bool,
    /// Resolves once the chat is stored. A new chat's row commits while its generation
    /// already asks the model (one commit less before the first token): answer nothing that
    /// names the chat before it resolves, and report its error if it fails (the generation
    /// then stops and stores nothing).
    pub stored: ChatStored,
    /// The id the answer will be stored under.
    pub message_id: MessageId,
    /// Earlier messages left out to fit the context window.
    pub truncated_messages: usize,
    pub usability: Usability,
    /// For a model opted in to the response cache: whether the answer is a replay.
    pub cache: Option<CacheStatus>,
    pub events: EventStream,
    pub generation: BoxFuture<'static, ()>,
}

/// What the chat service is built from.
pub struct ChatPorts {
    pub store: Arc<dyn ChatStore>,
    /// Which process runs each generation (usually the chat store's own runner).
    pub leases: Arc<dyn GenerationLeases>,
    /// The models completions name (Tessera's: `tessera_models::ModelService`).
    pub models: Arc<dyn ModelResolver>,
    /// The text of system prompts models name by id (Tessera's: `PromptService`).
    pub prompts: Arc<dyn SystemPromptSource>,
    pub retriever: Arc<dyn Retriever>,
    pub attachments: Arc<dyn AttachmentSource>,
    /// Tools Tessera runs itself (MCP servers linked to models).
    pub server_tools: Arc<dyn ServerTools>,
    /// Plans and credit budgets.
    pub admission: Arc<dyn Admission>,
    /// Where stateless completions record their usage, and every completion the usage of
    /// its tool steps (a chat's answer records its own with the turn, through `store`).
    pub usage: Arc<dyn UsageStore>,
    pub clock: Arc<dyn Clock>,
    pub cursors: CursorCodec,
}

/// Chats and completions.
#[derive(Clone)]
pub struct ChatService {
    store: Arc<dyn ChatStore>,
    leases: Arc<dyn GenerationLeases>,
    models: Arc<dyn ModelResolver>,
    prompts: Arc<dyn SystemPromptSource>,
    retriever: Arc<dyn Retriever>,
    attachments: Arc<dyn AttachmentSource>,
    server_tools: Arc<dyn ServerTools>,
    admission: Arc<dyn Admission>,
    usage: Arc<dyn UsageStore>,
    guardrails: Arc<dyn GuardrailSource>,
    response_cache: Option<Arc<dyn ResponseCache>>,
    hub: GenerationHub,
    clock: Arc<dyn Clock>,
    cursors: CursorCodec,
}

impl ChatService {
    pub fn new(ports: ChatPorts) -> Self {
        let ChatPorts {
            store,
            leases,
            models,
            prompts,
            retriever,
            attachments,
            server_tools,
            admission,
            usage,
            clock,
            cursors,
        } = ports;
        Self {
            store,
            leases,
            models,
            prompts,
            retriever,
            attachments,
            server_tools,
            admission,
            usage,
            guardrails: Arc::new(NoGuardrails),
            response_cache: None,
            hub: GenerationHub::new(),
            clock,
            cursors,
        }
    }

    /// The service with guardrails on every completion (none by default).
    pub fn with_guardrails(mut self, guardrails: Arc<dyn GuardrailSource>) -> Self {
        self.guardrails = guardrails;
        self
    }

    /// The service with a response cache for the models organizations opt in (none by
    /// default).
    pub fn with_response_cache(mut self, cache: Arc<dyn ResponseCache>) -> Self {
        self.response_cache = Some(cache);
        self
    }

    pub fn hub(&self) -> &GenerationHub {
        &self.hub
    }

    /// Renews this process's generation lease, then fails (`error`, [`INTERRUPTED`]) the
    /// chats left `generating` by processes that have not renewed theirs for `lease`: they
    /// stopped mid-answer. Run it before serving and then well within `lease` (a third of
    /// it, say), on every replica; returns how many chats it failed.
    pub async fn recover_interrupted(&self, lease: std::time::Duration) -> Result<u64, ChatError> {
        let now = self.clock.now();
        self.leases.keep_alive(now).await?;
        let lapsed_before = chrono::Duration::from_std(lease)
            .ok()
            .and_then(|lease| now.checked_sub_signed(lease))
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        Ok(self
            .leases
            .fail_interrupted(INTERRUPTED, lapsed_before, now)
            .await?)
    }

    /// Forgets this process's generation runner as it stops cleanly, once it begins no more
    /// generations (see [`GenerationLeases::retire`]); false when it still holds one.
    pub async fn retire(&self) -> Result<bool, ChatError> {
        Ok(self.leases.retire().await?)
    }

    /// A chat the caller may see (deleted ones included).
    pub async fn visible(&self, caller: &Caller, id: &ChatId) -> Result<Chat, ChatError> {
        self.store
            .get(caller.organization(), id)
            .await?
            .filter(|chat| crate::caller::sees_owner(caller, &chat.owner))
            .ok_or_else(|| ChatError::NotFound(id.clone()))
    }

    /// The chat with its messages.
    pub async fn get(&self, caller: &Caller, id: &ChatId) -> Result<ChatRecord, ChatError> {
        let chat = self.visible(caller, id).await?;
        let messages = self.store.messages(caller.organization(), id).await?;
        Ok(ChatRecord { chat, messages })
    }

    /// The caller's chats (every chat of the organization for `sees_all`), newest first.
    pub async fn list(
        &self,
        caller: &Caller,
        include_deleted: bool,
        limit: Limit,
        cursor: Option<&str>,
    ) -> Result<Page<Chat>, ChatError> {
        let after = cursor
            .map(|c| {
                self.cursors
                    .decode::<ChatId>(CHAT_LIST, caller.organization().as_str(), c)
            })
            .transpose()
            .map_err(DomainError::from)?;
        let filter = ChatFilter {
            organization: caller.organization().clone(),
            owner: crate::caller::listed_owner(caller),
            include_deleted,
        };
        let rows = self
            .store
            .list(&filter, &PageRequest { limit, after })
            .await?;
        let total = self.store.count(&filter).await?;
        Ok(Page::from_overfetch(rows, limit, Some(total), |chat| {
            self.cursors
                .encode(CHAT_LIST, caller.organization().as_str(), &chat.id)
        }))
    }

    /// Sets or clears the title (at most 500 characters).
    pub async fn rename(
        &self,
        caller: &Caller,
        id: &ChatId,
        title: Option<String>,
    ) -> Result<Chat, ChatError> {
        if let Some(title) = &title
            && title.chars().count() > MAX_TITLE_CHARS
        {
            return Err(ChatError::invalid(FieldError::new(
                ["body".into(), "title".into()],
                format!("must be at most {MAX_TITLE_CHARS} characters"),
                "string_too_long",
            )));
        }
        self.save(caller, id, |chat| chat.title = title).await
    }

    /// Soft-deletes: the chat leaves lists (unless asked for) and can be restored.
    pub async fn delete(&self, caller: &Caller, id: &ChatId) -> Result<Chat, ChatError> {
        let now = self.clock.now();
        self.save(caller, id, |chat| {
            chat.deleted_at.get_or_insert(now);
        })
        .await
    }

    pub async fn restore(&self, caller: &Caller, id: &ChatId) -> Result<Chat, ChatError> {
        self.save(caller, id, |chat| chat.deleted_at = None).await
    }

    /// Stops the chat's generation running in this process; `false` when none runs here
    /// (it may run on another instance). The generation ends as failed with [`crate::CANCELLED`].
    pub async fn cancel(&self, caller: &Caller, id: &ChatId) -> Result<bool, ChatError> {
        self.visible(caller, id).await?;
        Ok(self.hub.cancel(id))
    }

    /// Re-attaches to the chat's running generation; `None` when none runs.
    pub async fn attach(
        &self,
        caller: &Caller,
        id: &ChatId,
    ) -> Result<Option<Attached>, ChatError> {
        self.visible(caller, id).await?;
        Ok(self.hub.subscribe(id))
    }

    async fn save(
        &self,
        caller: &Caller,
        id: &ChatId,
        change: impl FnOnce(&mut Chat),
    ) -> Result<Chat, ChatError> {
        let mut chat = self.visible(caller, id).await?;
        change(&mut chat);
        chat.updated_at = self.clock.now();
        if !self.store.update(&chat).await? {
            return Err(ChatError::NotFound(id.clone()));
        }
        Ok(chat)
    }
}

fn context_error(overflow: ContextOverflow, window: u32) -> ChatError {
    ChatError::invalid(FieldError::new(
        ["body".into(), "messages".into()],
        format!(
            "the system prompt and this turn need {} tokens, but the model's context window \
             ({window} tokens) leaves {} beside the answer",
            overflow.needed, overflow.available
        ),
        "context_window_exceeded",
    ))
}

/// A completion's span, with the OpenTelemetry GenAI attributes filled in as they become
/// known (exporters read them; logs show them as the span's fields).
fn completion_span(request: &CompletionRequest) -> tracing::Span {
    use tracing::field::Empty;
    // Named before the model is resolved (a span's name is fixed once it starts): after the
    // model asked for, or the chat continued.
    let name = match (&request.model_id, &request.chat_id) {
        (Some(model), _) => format!("chat {model}"),
        (None, Some(chat)) => format!("chat {chat}"),
        (None, None) => "chat".to_owned(),
    };
    tracing::info_span!(
        "completion",
        "otel.name" = name.as_str(),
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = Empty,
        "gen_ai.request.model" = request.model_id.as_deref(),
        "gen_ai.response.model" = Empty,
        "gen_ai.conversation.id" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "error.type" = Empty,
        "tessera.guardrails" = Empty,
        "tessera.cache" = Empty,
    )
}

/// Records on `span` what a completion's guardrails did (rule, direction, effect and
/// count, never a value), as `rule:direction:effect×count` joined by commas.
fn record_guardrails(span: &tracing::Span, record: &GuardrailRecord) {
    if record.is_empty() {
        return;
    }
    let outcomes: Vec<String> = (record.outcomes().iter())
        .map(|outcome| {
            format!(
                "{}:{}:{}×{}",
                outcome.rule,
                outcome.direction,
                outcome.effect.as_str(),
                outcome.count
            )
        })
        .collect();
    span.record("tessera.guardrails", outcomes.join(",").as_str());
}

/// Records on the current (completion) span what the generation consumed and how it ended.
fn record_outcome(completion: &Completion, outcome: &Result<Message, ChatError>) {
    let span = tracing::Span::current();
    let usage = match outcome {
        Ok(message) => message.usage.as_ref().map(|usage| usage.usage),
        Err(_) => Some(completion.usage),
    };
    if let Some(usage) = usage {
        span.record("gen_ai.usage.input_tokens", i64::from(usage.input_tokens));
        span.record("gen_ai.usage.output_tokens", i64::from(usage.output_tokens));
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            i64::from(usage.cached_input_tokens),
        );
    }
    if let Some(reason) = &completion.finish_reason {
        // Exported as a string array (decision 0044): the reason's name, not a formatted list.
        span.record("gen_ai.response.finish_reasons", reason.as_str());
    }
    if let Err(error) = outcome {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", error.kind());
    }
}

/// What a completion's usage record is made of, besides its tokens.
struct Billing {
    principal: String,
    principal_kind: PrincipalKind,
    model_id: String,
    parent_model_id: String,
    provider: String,
    credit_multiplier: u32,
    accepted_at: DateTime<Utc>,
    /// The prompt as counted for the context window.
    prompt_tokens: u32,
    counter: Arc<dyn TokenCounter>,
}

impl Billing {
    /// What a completion consumed: the provider's figures when it reported any, else the
    /// prompt as counted and the output counted by the model's tokenizer. `None` for an
    /// attempt that produced nothing and reported nothing (it failed before generating).
    fn consumed(&self, completion: &Completion, failed: bool) -> Option<Usage> {
        if completion.usage.total_tokens() > 0 {
            return Some(completion.usage);
        }
        let count = |text: &str| self.counter.count(text);
        let reasoning = count(&completion.reasoning);
        let output = count(&completion.content)
            + reasoning
            + completion
                .tool_calls
                .iter()
                .map(|call| count(&call.name) + count(&call.arguments))
                .sum::<u32>();
        if failed && output == 0 {
            return None;
        }
        Some(Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: output,
            reasoning_tokens: reasoning,
            // Counted here, not reported: nothing says what a cache served.
            cached_input_tokens: 0,
        })
    }

    #[allow(clippy::too_many_arguments)] // the record's fields, one by one
    fn record(
        &self,
        organization: &OrganizationId,
        chat: &ChatId,
        message: &MessageId,
        usage: Usage,
        finish_reason: &str,
        route: Option<&Route>,
        cached: bool,
        at: DateTime<Utc>,
    ) -> UsageRecord {
        let tokens = Tokens {
            input: usage.input_tokens.into(),
            output: usage.output_tokens.into(),
            reasoning: usage.reasoning_tokens.into(),
            cached_input: usage.cached_input_tokens.into(),
        };
        UsageRecord {
            id: UsageId::generate(),
            organization_id: organization.clone(),
            principal: self.principal.clone(),
            principal_kind: self.principal_kind,
            chat_id: chat.to_string(),
            message_id: message.to_string(),
            model_id: self.model_id.clone(),
            parent_model_id: self.parent_model_id.clone(),
            // The provider that answered, when the model is routed.
            provider: route
                .map(|route| route.provider.as_str())
                .filter(|provider| !provider.is_empty())
                .unwrap_or(&self.provider)
                .to_owned(),
            // A replay costs no provider anything.
            credits: if cached {
                0
            } else {
                tokens.credits(self.credit_multiplier)
            },
            tokens,
            latency_ms: u64::try_from((at - self.accepted_at).num_milliseconds()).unwrap_or(0),
            finish_reason: finish_reason.to_owned(),
            created_at: at,
            cached,
        }
    }
}

/// Only user messages attach files, at most [`MAX_ATTACHMENTS`] each.
fn check_attachments(messages: &[NewMessage]) -> Vec<FieldError> {
    let loc = |index: usize| {
        [
            LocSegment::from("body"),
            LocSegment::from("messages"),
            LocSegment::Index(index),
            LocSegment::from("attachments"),
        ]
    };
    let mut invalid = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if message.attachments.is_empty() {
            continue;
        }
        if message.role != Role::User {
            invalid.push(FieldError::new(
                loc(index),
                format!(
                    "only user messages attach files, not {} messages",
                    message.role.as_str()
                ),
                "value_error",
            ));
        } else if message.attachments.len() > MAX_ATTACHMENTS {
            invalid.push(FieldError::new(
                loc(index),
                format!(
                    "a message attaches at most {MAX_ATTACHMENTS} files, not {}",
                    message.attachments.len()
                ),
                "too_long",
            ));
        }
    }
    invalid
}

/// Inline images go to vision models only, and only in stateless completions (a chat keeps
/// uploaded files, which `attachments` name).
fn check_images(messages: &[NewMessage], vision: bool, stateless: bool) -> Vec<FieldError> {
    let mut invalid = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if message.images.is_empty() {
            continue;
        }
        let refusal = if message.role != Role::User {
            "only user messages carry images"
        } else if !vision {
            "this model does not accept images (it lacks supportsVision)"
        } else if !stateless {
            "a stored chat keeps images as uploaded files: upload the image and attach it"
        } else {
            continue;
        };
        invalid.push(FieldError::new(
            [
                LocSegment::from("body"),
                LocSegment::from("messages"),
                LocSegment::Index(index),
                LocSegment::from("content"),
            ],
            refusal,
            "value_error",
        ));
    }
    invalid
}

/// Runs `generating` while the chat's row is being stored, and waits for both: `Err` when
/// the chat could not be stored (the generation is then dropped: its answer would have
/// nowhere to go), else what the generation returned.
async fn alongside(
    stored: ChatStored,
    generating: impl Future<Output = Result<(), ChatError>>,
) -> Result<Result<(), ChatError>, ChatError> {
    match future::select(stored, pin!(generating)).await {
        Either::Left((Err(unstored), _)) => Err(unstored),
        Either::Left((Ok(()), generating)) => Ok(generating.await),
        Either::Right((generated, stored)) => stored.await.map(|()| generated),
    }
}

/// Everything a background generation needs, owned.
struct Generation {
    answer_id: MessageId,
    store: Arc<dyn ChatStore>,
    clock: Arc<dyn Clock>,
    organization: OrganizationId,
    chat: ChatId,
    /// The chat's owner, whom its artifacts belong to.
    owner: String,
    billing: Billing,
    turn: Vec<NewMessage>,
    /// What each message of `turn` attached.
    turn_attachments: Vec<Vec<Attachment>>,
    next_sequence: u32,
    sources: Vec<Source>,
    strict_schema: Option<serde_json::Value>,
    /// Stateless: the usage record is all that is kept, here (no chat row exists).
    usage_only: Option<Arc<dyn UsageStore>>,
    /// Where each tool step's usage is recorded as the step ends.
    usage_store: Arc<dyn UsageStore>,
    model: Arc<dyn ChatModel>,
    tools: ToolPlan,
    request: ChatRequest,
    /// The completion's guardrails, if a policy applies (`run` takes them).
    guard: Option<AnswerGuard>,
    guardrails: Arc<dyn GuardrailSource>,
    /// What the guardrails did, once the model has answered (stored with the answer).
    guardrail_record: GuardrailRecord,
    /// The response cache's part (`run` takes it): a hit to replay or a miss to store.
    cache: Option<CacheRun>,
    /// Whether the model's first call was replayed from the cache (set once it ran).
    served_from_cache: bool,
}

/// Which tools a generation offers, and which of them Tessera runs itself.
struct ToolPlan {
    server: Option<Arc<dyn ServerToolbox>>,
    server_specs: Vec<ToolSpec>,
    client: Vec<ToolSpec>,
    choice: ToolChoice,
    max_steps: u32,
}

impl ToolPlan {
    fn new(
        server: Option<Arc<dyn ServerToolbox>>,
        client: &[ToolSpec],
        choice: ToolChoice,
        max_steps: u32,
    ) -> Self {
        Self {
            server_specs: server.as_ref().map(|s| s.specs()).unwrap_or_default(),
            server,
            client: client.to_vec(),
            choice,
            max_steps,
        }
    }

    /// The tool choice after `steps` tool steps: the request's for the first call; a forced
    /// call was made by then, so the model decides again (it would call forever otherwise).
    fn choice(&self, steps: u32) -> ToolChoice {
        match &self.choice {
            ToolChoice::Required | ToolChoice::Function(_) if steps > 0 => ToolChoice::Auto,
            choice => choice.clone(),
        }
    }

    /// The tools offered after `steps` tool steps: the server's only while steps remain.
    fn offered(&self, steps: u32) -> Vec<ToolSpec> {
        let mut tools = self.client.clone();
        if steps < self.max_steps {
            tools.extend(self.server_specs.iter().cloned());
        }
        tools
    }

    /// Whether Tessera runs `name` after `steps` tool steps.
    fn runs(&self, name: &str, steps: u32) -> bool {
        steps < self.max_steps && self.server_specs.iter().any(|spec| spec.name == name)
    }
}

/// The messages a generation produces besides its answer: tool steps before it (assistant
/// messages with server-run calls, then their results) and, when the answer itself calls
/// client and server tools together, the server calls' results after it.
#[derive(Default)]
struct Transcript {
    before: Vec<Message>,
    after: Vec<Message>,
}

impl Generation {
    async fn run(mut self, publisher: Publisher, stored: ChatStored) {
        if !self.sources.is_empty() {
            publisher.publish(GenerationEvent::Sources(self.sources.clone()));
        }
        // A panic in a provider must not leave the chat `generating` for good: it fails the
        // generation like any other error.
        let mut completion = Completion::default();
        let mut transcript = Transcript::default();
        let mut guard = self.guard.take();
        let mut cache = self.cache.take();
        let generating = AssertUnwindSafe(self.generate(
            &publisher,
            &mut completion,
            &mut transcript,
            guard.as_mut(),
            cache.as_mut(),
        ))
        .catch_unwind()
        .map(|caught| {
            caught.unwrap_or_else(|_| {
                Err(DomainError::internal("the model provider panicked while generating").into())
            })
        });
        // Cancelling drops the generation where it waits (the provider's stream, a tool),
        // then ends like a failure: what the model used is billed, the chat records why.
        let generating = publisher
            .abortable(generating)
            .map(|aborted| aborted.unwrap_or(Err(ChatError::Cancelled)));
        let generated = match alongside(stored, generating).await {
            Ok(generated) => generated,
            Err(unstored) => {
                // No chat to record the failure on: the caller reports the store's error.
                tracing::error!(chat = %self.chat, error = %unstored, "could not store a new chat; its generation stopped");
                publisher.publish(GenerationEvent::Failed(unstored));
                return;
            }
        };
        if let Some(guard) = &guard {
            self.guardrail_record = guard.record().clone();
            record_guardrails(&tracing::Span::current(), guard.record());
            self.guardrails.report(guard.record());
        }
        self.served_from_cache = cache.as_ref().is_some_and(|cache| cache.served);
        if let (Some(cache), Ok(())) = (cache, &generated) {
            cache.store(self.clock.now()).await;
        }
        // A provider failure after part of the answer was produced keeps that part.
        let mut failure_stored = false;
        let outcome = match (generated, &self.usage_only) {
            (Ok(()), None) => self.store_answer(&completion, transcript, None).await,
            (Err(error @ ChatError::Provider(_)), None) if completion.has_output() => {
                match self
                    .store_answer(&completion, transcript, Some(&error))
                    .await
                {
                    Ok(_) => failure_stored = true,
                    Err(store) => {
                        tracing::error!(chat = %self.chat, error = %store, "could not store a partial answer");
                    }
                }
                Err(error)
            }
            (Ok(()), Some(usage)) => {
                let (answer, record) = self.answer(&completion, 0, self.clock.now());
                usage
                    .record(&record)
                    .await
                    .map(|()| answer)
                    .map_err(ChatError::from)
            }
            (Err(error), _) => Err(error),
        };
        record_outcome(&completion, &outcome);
        let event = match outcome {
            Ok(message) => GenerationEvent::Finished(Box::new(message)),
            Err(error) if failure_stored => GenerationEvent::Failed(error),
            Err(error) => {
                let at = self.clock.now();
                let usage = self.billing.consumed(&completion, true).map(|usage| {
                    self.billing.record(
                        &self.organization,
                        &self.chat,
                        &self.answer_id,
                        usage,
                        FAILED,
                        completion.route.as_ref(),
                        false,
                        at,
                    )
                });
                let recorded = match (&self.usage_only, usage) {
                    (Some(_), None) => Ok(()),
                    (Some(store), Some(usage)) => store.record(&usage).await,
                    // The chat stays `generating` on an error until this process stops and
                    // its lease lapses.
                    (None, usage) => {
                        self.store
                            .fail_generation(
                                &self.organization,
                                &self.chat,
                                &error.to_string(),
                                usage,
                                at,
                            )
                            .await
                    }
                };
                if let Err(store) = recorded {
                    tracing::error!(chat = %self.chat, error = %store, "could not record a failed generation");
                }
                GenerationEvent::Failed(error)
            }
        };
        publisher.publish(event);
    }

    /// Streams the answer into `completion` (which keeps what was produced when it fails).
    /// When the model calls tools Tessera runs, runs them, keeps the step in `transcript`,
    /// records its usage, and asks the model again, until it answers without them.
    /// With guardrails, `completion` holds each call's output as the client may see it
    /// (checked, placeholders restored) while the provider goes on reading its own.
    async fn generate(
        &self,
        publisher: &Publisher,
        completion: &mut Completion,
        transcript: &mut Transcript,
        mut guard: Option<&mut AnswerGuard>,
        mut cache: Option<&mut CacheRun>,
    ) -> Result<(), ChatError> {
        let mut request = self.request.clone();
        let mut steps = 0;
        loop {
            request.tools = self.tools.offered(steps);
            request.tool_choice = self.tools.choice(steps);
            // The cache answers the first call only: later ones read tools' fresh results.
            let cached = cache.as_deref_mut().filter(|_| steps == 0);
            let served = cached.as_ref().is_some_and(|cache| cache.will_replay());
            let called = (self.call(
                &request,
                steps,
                publisher,
                completion,
                guard.as_deref_mut(),
                cached,
            ))
            .await;
            let said = match guard.as_deref_mut() {
                Some(guard) => Some(reveal(guard, publisher, completion).await),
                None => None,
            };
            called?;
            if matches!(
                completion.finish_reason,
                Some(
                    tessera_models::FinishReason::Length
                        | tessera_models::FinishReason::ContentFilter
                )
            ) {
                // Cut off by the token limit (finish reason `length`, as OpenAI reports it) or
                // withheld by a filter, the answer is what it is: not checked against a schema
                // it could not finish, and an unfinished call of a server tool is not run.
                return Ok(());
            }
            let (server, client): (Vec<ToolCall>, Vec<ToolCall>) = (completion.tool_calls.iter())
                .cloned()
                .partition(|call| self.tools.runs(&call.name, steps));
            if server.is_empty() {
                if let Some(schema) = &self.strict_schema
                    && completion.tool_calls.is_empty()
                {
                    let violations = conformance_errors(schema, &completion.content);
                    if !violations.is_empty() {
                        return Err(ChatError::SchemaMismatch(violations));
                    }
                }
                return Ok(());
            }
            let (results, sent_results) = self
                .run_tools(&server, publisher, guard.as_deref_mut())
                .await;
            if !client.is_empty() {
                // The client's calls end the turn; the server's results follow the answer.
                transcript.after = results;
                return Ok(());
            }
            let at = self.clock.now();
            let usage = self.billing.consumed(completion, false).unwrap_or_default();
            let step = Message {
                content: completion.content.clone(),
                reasoning: Some(completion.reasoning.clone()).filter(|r| !r.is_empty()),
                tool_calls: completion.tool_calls.clone(),
                usage: Some(MessageUsage {
                    usage,
                    finish_reason: tessera_models::FinishReason::ToolCalls,
                    route: completion.route.clone(),
                    guardrails: GuardrailRecord::default(),
                }),
                ..self.blank(0, Role::Assistant, at)
            };
            let record = self.billing.record(
                &self.organization,
                &self.chat,
                &step.id,
                usage,
                tessera_models::FinishReason::ToolCalls.as_str(),
                completion.route.as_ref(),
                served,
                at,
            );
            self.usage_store.record(&record).await?;
            // The provider reads its own words back (placeholders, not the values).
            let mut sent = ChatMessage::from(&step);
            if let Some(said) = said {
                sent.content = said.content;
                sent.tool_calls = said.tool_calls;
            }
            request.messages.push(sent);
            request.messages.extend(sent_results);
            transcript.before.push(step);
            transcript.before.extend(results);
            steps += 1;
            *completion = Completion::default();
            publisher.publish(GenerationEvent::StepStarted);
        }
    }

    /// One call of the model, streamed into `completion`; the deltas of calls of tools
    /// Tessera runs are published as such.
    /// With guardrails, the client is sent what the guard lets through as it streams.
    async fn call(
        &self,
        request: &ChatRequest,
        steps: u32,
        publisher: &Publisher,
        completion: &mut Completion,
        mut guard: Option<&mut AnswerGuard>,
        mut cache: Option<&mut CacheRun>,
    ) -> Result<(), ChatError> {
        let mut server_calls = HashSet::new();
        let mut stream = match cache.as_deref_mut().and_then(CacheRun::replay) {
            Some(replay) => replay,
            None => self.model.stream(request.clone()).await?,
        };
        while let Some(event) = stream.next().await {
            let event = event?;
            if let Some(cache) = cache.as_deref_mut() {
                cache.heard(&event);
            }
            let server = match &event {
                ChatEvent::ToolCallStart { index, name, .. } => {
                    self.tools.runs(name, steps) && server_calls.insert(*index)
                }
                ChatEvent::ToolCallArgumentsDelta { index, .. }
                | ChatEvent::ToolCallEnd { index } => server_calls.contains(index),
                _ => false,
            };
            let shown = match guard.as_deref_mut() {
                Some(guard) => guard.events(event.clone()),
                None => vec![event.clone()],
            };
            for shown in shown {
                if server {
                    publisher.publish(GenerationEvent::ServerToolDelta(shown));
                } else if !matches!(shown, ChatEvent::Finish { .. } | ChatEvent::Routed(_)) {
                    publisher.publish(GenerationEvent::Delta(shown));
                }
            }
            completion.apply(event);
        }
        if completion.finish_reason.is_none() {
            return Err(ProviderError::Upstream {
                status: None,
                message: "the answer ended without a finish event".into(),
            }
            .into());
        }
        Ok(())
    }

    /// Runs the calls one after another; each result is published and becomes a `tool`
    /// message. Returns the messages stored and what the provider reads of them (with
    /// guardrails, each result checked as input is).
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        publisher: &Publisher,
        mut guard: Option<&mut AnswerGuard>,
    ) -> (Vec<Message>, Vec<ChatMessage>) {
        let Some(toolbox) = &self.tools.server else {
            return (Vec::new(), Vec::new());
        };
        let mut results = Vec::with_capacity(calls.len());
        let mut sent = Vec::with_capacity(calls.len());
        for call in calls {
            let run = toolbox.run(call).await;
            let (content, read) = match guard.as_deref_mut() {
                Some(guard) => {
                    let read = guard.tool_result(&run.content);
                    (guard.stored(&read), read)
                }
                None => (run.content.clone(), run.content),
            };
            publisher.publish(GenerationEvent::ToolResult(ToolResult {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content: content.clone(),
                is_error: run.is_error,
            }));
            let result = Message {
                content,
                tool_call_id: Some(call.id.clone()),
                ..self.blank(0, Role::Tool, self.clock.now())
            };
            sent.push(ChatMessage {
                content: read,
                ..ChatMessage::from(&result)
            });
            results.push(result);
        }
        (results, sent)
    }

    /// A message of this chat with nothing in it yet.
    fn blank(&self, sequence: u32, role: Role, created_at: DateTime<Utc>) -> Message {
        Message {
            id: MessageId::generate(),
            chat_id: self.chat.clone(),
            sequence,
            role,
            content: String::new(),
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            sources: Vec::new(),
            attachments: Vec::new(),
            usage: None,
            created_at,
        }
    }

    /// The answer message of a finished completion (after `steps` messages of tool steps)
    /// and its usage record.
    fn answer(
        &self,
        completion: &Completion,
        steps: usize,
        at: DateTime<Utc>,
    ) -> (Message, UsageRecord) {
        let sequence = self.next_sequence + (self.turn.len() + steps) as u32;
        let usage = self.billing.consumed(completion, false).unwrap_or_default();
        let finish_reason = completion
            .finish_reason
            .clone()
            .unwrap_or(tessera_models::FinishReason::Stop);
        let record = self.billing.record(
            &self.organization,
            &self.chat,
            &self.answer_id,
            usage,
            finish_reason.as_str(),
            completion.route.as_ref(),
            self.served_from_cache && steps == 0,
            at,
        );
        let answer = Message {
            content: completion.content.clone(),
            reasoning: Some(completion.reasoning.clone()).filter(|r| !r.is_empty()),
            tool_calls: completion.tool_calls.clone(),
            sources: self.sources.clone(),
            usage: Some(MessageUsage {
                usage,
                finish_reason,
                route: completion.route.clone(),
                guardrails: self.guardrail_record.clone(),
            }),
            id: self.answer_id.clone(),
            ..self.blank(sequence, Role::Assistant, at)
        };
        (answer, record)
    }

    /// Stores the turn with its answer. With `failure`, the answer is what was produced
    /// before the provider failed: kept with the finish reason `error`, no artifacts taken
    /// from it, and the chat ends in `error`.
    async fn store_answer(
        &self,
        completion: &Completion,
        transcript: Transcript,
        failure: Option<&ChatError>,
    ) -> Result<Message, ChatError> {
        let at = self.clock.now();
        let mut messages: Vec<Message> = self
            .turn
            .iter()
            .zip(&self.turn_attachments)
            .zip(self.next_sequence..)
            .map(|((new, attachments), sequence)| Message {
                content: new.content.clone(),
                tool_calls: new.tool_calls.clone(),
                tool_call_id: new.tool_call_id.clone(),
                attachments: attachments.clone(),
                ..self.blank(sequence, new.role, at)
            })
            .collect();
        let (mut answer, mut usage) = self.answer(completion, transcript.before.len(), at);
        if failure.is_some() {
            usage.finish_reason = FAILED.to_owned();
            if let Some(message_usage) = &mut answer.usage {
                message_usage.finish_reason = tessera_models::FinishReason::Other(FAILED.into());
            }
        }
        messages.extend(transcript.before);
        messages.push(answer.clone());
        messages.extend(transcript.after);
        for (message, sequence) in messages.iter_mut().zip(self.next_sequence..) {
            message.sequence = sequence;
        }
        let artifacts = match failure {
            None => self.artifacts(&answer).await?,
            Some(_) => Vec::new(),
        };
        let turn = FinishedTurn {
            messages,
            usage,
            artifacts,
            error: failure.map(ToString::to_string),
        };
        self.store
            .finish_generation(&self.organization, &self.chat, &turn, at)
            .await?;
        Ok(answer)
    }

    /// The answer's artifacts, numbered after the chat's earlier versions. No other
    /// generation runs on the chat meanwhile, so the versions read here stay the latest.
    async fn artifacts(&self, answer: &Message) -> Result<Vec<Artifact>, ChatError> {
        let extracted = extract_artifacts(&answer.content);
        if extracted.is_empty() {
            return Ok(Vec::new());
        }
        let latest = self
            .store
            .artifact_versions(&self.organization, &self.chat)
            .await?;
        let template = Artifact {
            id: ArtifactId::generate(),
            organization_id: self.organization.clone(),
            owner: self.owner.clone(),
            chat_id: self.chat.clone(),
            message_id: answer.id.clone(),
            kind: crate::ArtifactKind::Markdown,
            language: None,
            title: String::new(),
            identifier: String::new(),
            version: 1,
            content: String::new(),
            created_at: answer.created_at,
        };
        Ok(versioned(extracted, &latest, &template))
    }
}

/// Ends one guarded model call: sends the client what the guard still held (the whole
/// text when answers are checked), puts the visible output in `completion`, and returns
/// the model's own, which the provider reads back in a later call.
async fn reveal(
    guard: &mut AnswerGuard,
    publisher: &Publisher,
    completion: &mut Completion,
) -> Completion {
    let (visible, events) = guard.end_call(completion).await;
    for event in events {
        publisher.publish(GenerationEvent::Delta(event));
    }
    let shown = visible.apply_to(completion);
    std::mem::replace(completion, shown)
}
