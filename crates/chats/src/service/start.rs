//! [`ChatService::start`], one step per method: admit the organization, find the chat and
//! its model, read the conversation and check the turn, retrieve knowledge, fit the
//! context window, then begin the generation (storing a new chat while it already runs).

use std::{collections::HashSet, sync::Arc};

use futures_util::{FutureExt, future};
use tessera_guardrails::{GuardedRequest, GuardrailRecord};
use tessera_kernel::{Caller, DomainError, FieldError, LocSegment, PrincipalKind};
use tessera_models::{ChatMessage, ChatRequest, ResolvedModel, Role, ToolSpec};
use tessera_prompts::TokenCounter;
use tracing::Instrument;

use super::{
    Billing, CachePlan, ChatService, ChatStored, CompletionRequest, Generation, Started, ToolPlan,
    check_attachments, check_images, completion_span, context_error, record_guardrails,
};
use crate::{
    Admitted, CHARS_PER_TOKEN_BOUND, Chat, ChatError, ChatId, ChatStatus, DEFAULT_TOOL_STEPS,
    MAX_TOOL_STEPS, Message, MessageId, ModelSnapshot, RAG_PASSAGES, ResolvedAttachment,
    RetrievalQuery, ServerToolbox, Source, Spends,
    attachment::{attach, records, resolve_stored, resolve_turn},
    context::{Fitted, fit},
    derive_title,
    guardrails::{self, AnswerGuard, InputAt, check_message, consult_hook},
    retriever::{select, with_sources},
    validate::{Requirements, check_messages, check_requirements, check_tool_choice},
};

/// The conversation a completion continues or begins, as the model will read it before
/// the context window is fitted.
struct Conversation {
    /// Earlier messages, their attachments resolved again.
    history: Vec<ChatMessage>,
    /// The turn's messages with their attachments.
    turn: Vec<ChatMessage>,
    /// What each of the turn's messages attaches (kept with the stored messages).
    attached: Vec<Vec<ResolvedAttachment>>,
    /// The sequence number of the turn's first message.
    next_sequence: u32,
    /// With guardrails, what each of the turn's messages stores of its texts.
    stored_turn: Vec<StoredTexts>,
}

/// What a turn's message stores of its texts once checked (see `guardrails::stored`).
struct StoredTexts {
    content: String,
    arguments: Vec<String>,
}

/// Why a completion is prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// To run it: every check, the guardrail hook included.
    Completion,
    /// To count its prompt's tokens: the hook is not asked.
    Count,
}

/// A completion ready to begin: everything [`ChatService::start`] decides before the
/// generation runs.
struct Prepared {
    /// The chat it continues (none for a new one).
    existing: Option<Chat>,
    resolved: ResolvedModel,
    snapshot: ModelSnapshot,
    sources: Vec<Source>,
    server_tools: Option<Arc<dyn ServerToolbox>>,
    /// What each of the turn's messages attaches.
    attached: Vec<Vec<ResolvedAttachment>>,
    next_sequence: u32,
    counter: Arc<dyn TokenCounter>,
    fitted: Fitted,
    max_tokens: u32,
    max_tool_steps: u32,
    /// Whose kind of principal the completion's usage is recorded under.
    principal_kind: PrincipalKind,
    /// The completion's guardrails, with what its input checks did.
    guard: Option<GuardedRequest>,
    stored_turn: Vec<StoredTexts>,
}

/// The chat a generation runs on, as it begins.
struct Begun {
    chat: Chat,
    created: bool,
    stored: ChatStored,
}

impl ChatService {
    /// Validates a completion request, builds its context and begins the generation.
    pub async fn start(
        &self,
        caller: &Caller,
        request: CompletionRequest,
    ) -> Result<Started, ChatError> {
        let span = completion_span(&request);
        self.start_in(caller, request, span.clone())
            .instrument(span)
            .await
    }

    /// What a completion's prompt would cost, in the model's tokens, without running it:
    /// the same checks, model, knowledge and context fitting as [`ChatService::start`]
    /// (earlier messages the window cannot hold left out), plus the client's tool
    /// definitions (name, description and JSON Schema) counted as text. Nothing is stored
    /// and no usage is recorded. The policy's rules apply, but its hook is not asked: a
    /// count sends no text to an outside service, and the hook's verdict changes no count.
    pub async fn count_prompt_tokens(
        &self,
        caller: &Caller,
        request: CompletionRequest,
    ) -> Result<u32, ChatError> {
        let span = tracing::info_span!("count prompt tokens");
        let prepared = self
            .prepare(caller, &request, &span, Purpose::Count)
            .instrument(span.clone())
            .await?;
        let tools: u32 = request
            .tools
            .iter()
            .map(|tool| {
                let description = tool.description.as_deref().unwrap_or_default();
                let definition = format!("{}\n{description}\n{}", tool.name, tool.parameters);
                prepared.counter.count(&definition)
            })
            .sum();
        Ok(prepared.fitted.prompt_tokens.saturating_add(tools))
    }

    /// Whether `caller` may spend credits now, and on which plan and models: the admission a
    /// completion passes first, for other work billed in credits (embeddings).
    pub async fn admit(&self, caller: &Caller) -> Result<Admitted, ChatError> {
        self.admission.admit(caller, Spends::Credits).await
    }

    /// [`ChatService::start`] within `span`, the completion's span (its retrieval and the
    /// background generation are its children; the model and the usage are recorded on it).
    async fn start_in(
        &self,
        caller: &Caller,
        request: CompletionRequest,
        span: tracing::Span,
    ) -> Result<Started, ChatError> {
        let Prepared {
            existing,
            resolved,
            snapshot,
            sources,
            server_tools,
            attached,
            next_sequence,
            counter,
            fitted,
            max_tokens,
            max_tool_steps,
            principal_kind,
            guard,
            stored_turn,
        } = self
            .prepare(caller, &request, &span, Purpose::Completion)
            .await?;
        let mut request = request;
        for (message, stored) in request.messages.iter_mut().zip(stored_turn) {
            message.content = stored.content;
            for (call, arguments) in message.tool_calls.iter_mut().zip(stored.arguments) {
                call.arguments = arguments;
            }
        }
        let Begun {
            chat,
            created,
            stored,
        } = self.begin(caller, existing, snapshot, &request).await?;
        if !request.stateless {
            span.record("gen_ai.conversation.id", chat.id.as_str());
        }

        let thinking = thinks(&request, &resolved);
        let provider_request = ChatRequest {
            model: resolved.base.model_name.clone(),
            messages: fitted.messages,
            tools: request.tools.clone(),
            tool_choice: request.tool_choice.clone(),
            response_format: request.response_format.clone(),
            max_tokens: Some(max_tokens),
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
            stop: request.stop.clone(),
            reasoning: thinking.then_some((request.reasoning_effort, request.reasoning_budget)),
            cache_scope: Some(caller.organization().to_string()),
        };
        let cache = match &self.response_cache {
            // Answers drawn from knowledge retrieved for the caller are theirs alone.
            Some(cache) => {
                let user_specific = !sources.is_empty() || request.file_search.is_some();
                let model_id = chat.model.model_id.as_str();
                let now = self.clock.now();
                let directives = request.cache;
                CachePlan::decide(
                    cache.as_ref(),
                    caller,
                    model_id,
                    &provider_request,
                    user_specific,
                    directives,
                    now,
                )
                .await?
            }
            None => CachePlan::none(),
        };
        if let Some(status) = cache.status {
            span.record("tessera.cache", status.as_str());
        }
        let message_id = MessageId::generate();
        let publisher = self.hub.open(&chat.id, &message_id);
        let events = self
            .hub
            .subscribe(&chat.id)
            .ok_or_else(|| DomainError::internal("a generation vanished as it opened"))?
            .events;
        let generation = Generation {
            answer_id: message_id.clone(),
            store: self.store.clone(),
            clock: self.clock.clone(),
            organization: caller.organization().clone(),
            chat: chat.id.clone(),
            owner: chat.owner.clone(),
            billing: Billing {
                principal: caller.subject().to_owned(),
                principal_kind,
                model_id: chat.model.model_id.clone(),
                parent_model_id: resolved.base.id.clone(),
                provider: resolved.base.provider.clone(),
                credit_multiplier: resolved.base.credit_multiplier,
                accepted_at: chat.updated_at,
                prompt_tokens: fitted.prompt_tokens,
                counter,
            },
            turn: request.messages,
            turn_attachments: attached.iter().map(|resolved| records(resolved)).collect(),
            next_sequence,
            sources,
            strict_schema: request
                .response_format
                .as_ref()
                .filter(|format| format.strict)
                .map(|format| format.schema.clone()),
            usage_only: request.stateless.then(|| self.usage.clone()),
            usage_store: self.usage.clone(),
            guard: guard.map(AnswerGuard::new),
            guardrails: self.guardrails.clone(),
            guardrail_record: GuardrailRecord::default(),
            cache: cache.run,
            served_from_cache: false,
            model: resolved.chat_model.clone(),
            tools: ToolPlan::new(
                server_tools,
                &request.tools,
                request.tool_choice.clone(),
                max_tool_steps,
            ),
            request: provider_request,
        };
        Ok(Started {
            chat,
            created,
            message_id,
            truncated_messages: fitted.dropped,
            usability: resolved.usability,
            cache: cache.status,
            events,
            stored: stored.clone(),
            generation: Box::pin(generation.run(publisher, stored).instrument(span)),
        })
    }

    /// Everything before the generation begins: the organization admitted, the chat and
    /// its model found, the turn checked, knowledge retrieved, the tools offered and the
    /// context window fitted (the model and provider recorded on `span`).
    async fn prepare(
        &self,
        caller: &Caller,
        request: &CompletionRequest,
        span: &tracing::Span,
        purpose: Purpose,
    ) -> Result<Prepared, ChatError> {
        crate::caller::may_attach(caller, &request.messages)?;
        let principal_kind = caller.metered_kind()?;
        let spends = match purpose {
            Purpose::Completion => Spends::Credits,
            Purpose::Count => Spends::Nothing,
        };
        let admitted = self.admission.admit(caller, spends).await?;
        let (existing, resolved) = self.chat_and_model(caller, request, &admitted).await?;
        if let Some(chat) = &existing {
            span.record("gen_ai.request.model", chat.model.model_id.as_str());
        }
        span.record("gen_ai.response.model", resolved.base.id.as_str());
        span.record("gen_ai.provider.name", resolved.base.provider.as_str());
        let max_tool_steps = request.max_tool_steps.unwrap_or(DEFAULT_TOOL_STEPS);
        let model_id = match &existing {
            Some(chat) => chat.model.model_id.as_str(),
            None => request.model_id.as_deref().unwrap_or_default(),
        };
        let mut guard = self
            .guardrails
            .begin(caller.organization(), model_id)
            .await?;
        let conversation = self
            .conversation(
                caller,
                existing.as_ref(),
                request,
                &resolved,
                max_tool_steps,
                guard.as_mut(),
            )
            .await;
        let conversation = match (conversation, &mut guard) {
            (Ok(conversation), Some(guard)) if purpose == Purpose::Completion => {
                consult_hook(guard, &conversation.turn)
                    .await
                    .map(|()| conversation)
            }
            (conversation, _) => conversation,
        };
        if let (Err(_), Some(guard)) = (&conversation, &guard)
            && guard.record().blocked().is_some()
        {
            record_guardrails(span, guard.record());
            self.guardrails.report(guard.record());
        }
        let conversation = conversation?;
        let snapshot = match &existing {
            Some(chat) => chat.model.clone(),
            None => self.snapshot(caller, request, &resolved).await?,
        };
        let sources = self
            .knowledge(caller, &snapshot, request, &resolved)
            .await?;
        let server_tools = self
            .server_toolbox(caller, &snapshot, &resolved, &request.tools, max_tool_steps)
            .await?;
        let server_specs = server_tools.as_ref().map(|s| s.specs()).unwrap_or_default();
        let offered = (request.tools.iter().chain(&server_specs)).map(|tool| tool.name.as_str());
        if let Some(invalid) = check_tool_choice(&request.tool_choice, offered) {
            return Err(ChatError::invalid(invalid));
        }
        let Conversation {
            history,
            turn,
            attached,
            next_sequence,
            stored_turn,
        } = conversation;
        let system = with_sources(snapshot.system_prompt.clone(), &sources);
        let counter = resolved.chat_model.tokenizer();
        let (fitted, max_tokens) = fitted(
            system.as_deref(),
            history,
            turn,
            counter.as_ref(),
            request,
            &resolved,
        )?;
        Ok(Prepared {
            existing,
            resolved,
            snapshot,
            sources,
            server_tools,
            attached,
            next_sequence,
            counter,
            fitted,
            max_tokens,
            max_tool_steps,
            principal_kind,
            guard,
            stored_turn,
        })
    }

    /// The chat the request continues (none for a new one) and the model that answers: a
    /// continued chat keeps its base model, a new one resolves the model it names, on the
    /// organization's plan; either only if the caller's credential may use the model.
    async fn chat_and_model(
        &self,
        caller: &Caller,
        request: &CompletionRequest,
        admitted: &Admitted,
    ) -> Result<(Option<Chat>, ResolvedModel), ChatError> {
        if request.chat_id.is_some() && request.stateless {
            return Err(ChatError::invalid(FieldError::new(
                ["body".into(), "chatId".into()],
                "a continued chat is stored; stateless completions begin a conversation",
                "value_error",
            )));
        }
        match (&request.chat_id, &request.model_id) {
            (Some(id), model_id) => {
                let chat = self.continuable(caller, id, model_id.as_deref()).await?;
                // Clients of OpenAI's Responses API send the instructions again with every
                // turn (they are not carried over there); the chat already holds them, so
                // the same ones are accepted and other ones refused.
                if let Some(instructions) = &request.instructions
                    && !holds_instructions(&chat.model, instructions)
                {
                    return Err(ChatError::invalid(FieldError::new(
                        ["body".into(), "chatId".into()],
                        "a continued chat keeps the instructions it began with; these differ \
                         (send the same ones, or none, or begin a new conversation)",
                        "value_error",
                    )));
                }
                admitted.may_use(chat.model.model_id.as_str())?;
                let resolved =
                    (self.models).resolve_base(&chat.model.base_model_id, admitted.plan)?;
                Ok((Some(chat), resolved))
            }
            (None, Some(model_id)) => {
                admitted.may_use(model_id)?;
                let resolved = self
                    .models
                    .resolve(caller.organization(), model_id, admitted.plan)
                    .await?;
                Ok((None, resolved))
            }
            (None, None) => Err(ChatError::invalid(FieldError::new(
                ["body".into(), "modelId".into()],
                "a new chat needs a modelId (or give chatId to continue a chat)",
                "missing",
            ))),
        }
    }

    /// The stored history and the new turn with their attachments, once the turn is known
    /// to be valid for this model (every problem reported at once).
    async fn conversation(
        &self,
        caller: &Caller,
        existing: Option<&Chat>,
        request: &CompletionRequest,
        resolved: &ResolvedModel,
        max_tool_steps: u32,
        mut guard: Option<&mut GuardedRequest>,
    ) -> Result<Conversation, ChatError> {
        let stored: Vec<Message> = match existing {
            Some(chat) => self.store.messages(caller.organization(), &chat.id).await?,
            None => Vec::new(),
        };
        let next_sequence = stored.last().map_or(0, |m| m.sequence + 1);
        let vision = resolved.base.capabilities.vision;
        let max_chars =
            (resolved.base.context_window as usize).saturating_mul(CHARS_PER_TOKEN_BOUND);
        let mut history = Vec::with_capacity(stored.len());
        for message in &stored {
            let mut sent = ChatMessage::from(message);
            let mut attached = resolve_stored(
                self.attachments.as_ref(),
                caller.organization(),
                &message.attachments,
                max_chars,
                vision,
            )
            .await?;
            if let Some(guard) = guard.as_deref_mut() {
                check_message(guard, &mut sent, &mut attached, InputAt::History)?;
            }
            attach(&mut sent, &attached);
            history.push(sent);
        }
        let mut turn: Vec<ChatMessage> = request.messages.iter().map(ChatMessage::from).collect();
        let mut invalid = check_messages(&history, &turn);
        invalid.extend(check_attachments(&request.messages));
        if max_tool_steps > MAX_TOOL_STEPS {
            invalid.push(FieldError::new(
                ["body".into(), "maxToolSteps".into()],
                format!("at most {MAX_TOOL_STEPS}"),
                "less_than_equal",
            ));
        }
        invalid.extend(check_images(&request.messages, vision, request.stateless));
        invalid.extend(check_requirements(
            &resolved.base,
            &Requirements {
                tools: &request.tools,
                response_format: request.response_format.as_ref(),
                reasoning: thinks(request, resolved),
                reasoning_budget: request.reasoning_budget,
                max_tokens: request.max_tokens,
            },
        ));
        if !invalid.is_empty() {
            return Err(ChatError::Invalid(invalid));
        }
        let attaching: Vec<(usize, &[String])> = request
            .messages
            .iter()
            .enumerate()
            .map(|(index, message)| (index, message.attachments.as_slice()))
            .collect();
        let (mut attached, invalid) = resolve_turn(
            self.attachments.as_ref(),
            caller.organization(),
            &attaching,
            max_chars,
            vision,
        )
        .await?;
        if !invalid.is_empty() {
            return Err(ChatError::Invalid(invalid));
        }
        let mut stored_turn = Vec::new();
        if let Some(guard) = guard {
            for (index, (message, attached)) in turn.iter_mut().zip(&mut attached).enumerate() {
                check_message(guard, message, attached, InputAt::Turn(index))?;
                stored_turn.push(StoredTexts {
                    content: guardrails::stored(guard, &message.content),
                    arguments: (message.tool_calls.iter())
                        .map(|call| guardrails::stored(guard, &call.arguments))
                        .collect(),
                });
            }
        }
        for (message, attached) in turn.iter_mut().zip(&attached) {
            attach(message, attached);
        }
        Ok(Conversation {
            history,
            turn,
            attached,
            next_sequence,
            stored_turn,
        })
    }

    /// What the model's knowledge, and the datasets the request names, give the turn's
    /// last question, as the model will read it (see [`select`]); nothing when the turn
    /// asks nothing.
    async fn knowledge(
        &self,
        caller: &Caller,
        snapshot: &ModelSnapshot,
        request: &CompletionRequest,
        resolved: &ResolvedModel,
    ) -> Result<Vec<Source>, ChatError> {
        let turn = &request.messages;
        let Some(question) = turn.iter().rev().find(|m| m.role == Role::User) else {
            return Ok(Vec::new());
        };
        let (datasets, files, passages) = match &request.file_search {
            Some(search) => (
                search.datasets.clone(),
                search.files.clone(),
                search.max_results,
            ),
            None => (Vec::new(), None, RAG_PASSAGES),
        };
        let query = RetrievalQuery {
            model_id: snapshot.model_id.clone(),
            question: question.content.clone(),
            context_window: resolved.base.context_window,
            passages,
            datasets,
            files,
        };
        let retrieved = self
            .retriever
            .retrieve(caller.organization(), &query)
            .await?;
        Ok(select(retrieved, resolved.base.context_window, passages))
    }

    /// Marks the chat generating: a continued chat atomically (refused when another
    /// generation took it first), a new one as its row is handed to the store (none for a
    /// stateless completion).
    async fn begin(
        &self,
        caller: &Caller,
        existing: Option<Chat>,
        snapshot: ModelSnapshot,
        request: &CompletionRequest,
    ) -> Result<Begun, ChatError> {
        let now = self.clock.now();
        let ready = || future::ready(Ok(())).boxed().shared();
        if let Some(mut chat) = existing {
            if !self
                .store
                .begin_generation(caller.organization(), &chat.id, now)
                .await?
            {
                return Err(ChatError::Generating(chat.id));
            }
            chat.status = Some(ChatStatus::Generating);
            chat.error = None;
            chat.updated_at = now;
            return Ok(Begun {
                chat,
                created: false,
                stored: ready(),
            });
        }
        let chat = Chat {
            id: ChatId::generate(),
            organization_id: caller.organization().clone(),
            owner: caller.subject().to_owned(),
            model: snapshot,
            title: request
                .messages
                .iter()
                .find(|m| m.role == Role::User)
                .and_then(|m| derive_title(&m.content)),
            status: Some(ChatStatus::Generating),
            error: None,
            deleted_at: None,
            created_at: now,
            updated_at: now,
        };
        if request.stateless {
            return Ok(Begun {
                chat,
                created: false,
                stored: ready(),
            });
        }
        let stored = self.insert(&chat)?;
        Ok(Begun {
            chat,
            created: true,
            stored,
        })
    }

    /// The server-run tools the completion offers: none when the model cannot call tools or
    /// no step is allowed. A client tool may not share a name with one of them.
    async fn server_toolbox(
        &self,
        caller: &Caller,
        snapshot: &ModelSnapshot,
        resolved: &ResolvedModel,
        client_tools: &[ToolSpec],
        max_tool_steps: u32,
    ) -> Result<Option<Arc<dyn ServerToolbox>>, ChatError> {
        if max_tool_steps == 0 || !resolved.base.capabilities.tools {
            return Ok(None);
        }
        let Some(toolbox) = self
            .server_tools
            .toolbox(caller.organization(), &snapshot.model_id)
            .await?
        else {
            return Ok(None);
        };
        let offered: HashSet<String> = toolbox.specs().into_iter().map(|spec| spec.name).collect();
        let clashes: Vec<FieldError> = client_tools
            .iter()
            .enumerate()
            .filter(|(_, tool)| offered.contains(&tool.name))
            .map(|(index, tool)| {
                FieldError::new(
                    [
                        LocSegment::from("body"),
                        LocSegment::from("tools"),
                        LocSegment::Index(index),
                        LocSegment::from("name"),
                    ],
                    format!(
                        "`{}` is the name of a tool of an MCP server linked to the model; rename yours",
                        tool.name
                    ),
                    "value_error",
                )
            })
            .collect();
        if !clashes.is_empty() {
            return Err(ChatError::Invalid(clashes));
        }
        Ok(Some(toolbox))
    }

    /// Begins storing a new chat without waiting for the commit: the write is handed to the
    /// store now (a group-committing store queues it on this first poll), so concurrent
    /// completions' rows share a commit while their generations already run. An error the
    /// store reports at once is returned at once.
    fn insert(&self, chat: &Chat) -> Result<ChatStored, ChatError> {
        let store = self.store.clone();
        let row = chat.clone();
        let stored = async move { Ok(store.insert(&row).await?) }
            .boxed()
            .shared();
        match stored.clone().now_or_never() {
            Some(Err(error)) => Err(error),
            _ => Ok(stored),
        }
    }

    /// The chat a request continues: the caller's, live and idle.
    async fn continuable(
        &self,
        caller: &Caller,
        id: &ChatId,
        model_id: Option<&str>,
    ) -> Result<Chat, ChatError> {
        let chat = self.visible(caller, id).await?;
        if chat.deleted_at.is_some() {
            return Err(ChatError::Deleted(chat.id));
        }
        if chat.status == Some(ChatStatus::Generating) {
            return Err(ChatError::Generating(chat.id));
        }
        if let Some(model_id) = model_id
            && model_id != chat.model.model_id
        {
            return Err(ChatError::invalid(FieldError::new(
                ["body".into(), "modelId".into()],
                format!(
                    "chat {} uses model {}; a chat keeps the model it was created with",
                    chat.id, chat.model.model_id
                ),
                "value_error",
            )));
        }
        Ok(chat)
    }

    /// What a new chat keeps of its model: the base model and the system prompt as of now.
    async fn snapshot(
        &self,
        caller: &Caller,
        request: &CompletionRequest,
        resolved: &ResolvedModel,
    ) -> Result<ModelSnapshot, ChatError> {
        let model_id = request.model_id.clone().unwrap_or_default();
        let (system_prompt, system_prompt_id) = match &resolved.model {
            Some(model) => match (&model.system_prompt, &model.system_prompt_id) {
                (Some(text), _) => (Some(text.clone()), None),
                (None, Some(id)) => {
                    let text = self.prompts.text(caller.organization(), id).await?;
                    (text, Some(id.clone()))
                }
                (None, None) => (None, None),
            },
            None => (None, None),
        };
        let system_prompt = match (system_prompt, &request.instructions) {
            (Some(prompt), Some(instructions)) => Some(format!("{prompt}\n\n{instructions}")),
            (prompt, instructions) => prompt.or_else(|| instructions.clone()),
        };
        Ok(ModelSnapshot {
            model_id,
            base_model_id: resolved.base.id.clone(),
            system_prompt,
            system_prompt_id,
        })
    }
}

/// Whether a chat's system prompt was composed with `instructions` (alone, or after the
/// model's own prompt, as `snapshot` composes them).
fn holds_instructions(snapshot: &ModelSnapshot, instructions: &str) -> bool {
    snapshot.system_prompt.as_deref().is_some_and(|prompt| {
        prompt == instructions
            || prompt
                .strip_suffix(instructions)
                .is_some_and(|model_prompt| model_prompt.ends_with("\n\n"))
    })
}

/// The messages that fit the model's context window with room kept for the answer, and the
/// answer's token limit: the request's, or what the window leaves (within the model's
/// per-request limit).
/// Whether the answer reasons: asked for, and the model can or must (a request that thinks
/// only if the model can answers without reasoning on a model that has none).
fn thinks(request: &CompletionRequest, resolved: &ResolvedModel) -> bool {
    request.enable_reasoning
        && (!request.reasoning_if_supported || resolved.base.capabilities.reasoning)
}

fn fitted(
    system: Option<&str>,
    history: Vec<ChatMessage>,
    turn: Vec<ChatMessage>,
    counter: &dyn TokenCounter,
    request: &CompletionRequest,
    resolved: &ResolvedModel,
) -> Result<(Fitted, u32), ChatError> {
    let window = resolved.base.context_window;
    let per_request = resolved.base.max_tokens_per_request.unwrap_or(u32::MAX);
    let reserve = request
        .max_tokens
        .unwrap_or_else(|| (window / 4).min(per_request));
    let fitted = fit(
        system,
        history,
        turn,
        counter,
        window.saturating_sub(reserve),
    )
    .map_err(|overflow| context_error(overflow, window))?;
    let max_tokens = request
        .max_tokens
        .unwrap_or_else(|| window.saturating_sub(fitted.prompt_tokens).min(per_request));
    Ok((fitted, max_tokens))
}
