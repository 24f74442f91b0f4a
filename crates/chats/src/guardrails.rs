//! Guardrails in a completion: the port that gives a completion its checks
//! ([`GuardrailSource`]), the input side (every text the provider would read checked before
//! it does: refused with a located 422, masked, or pseudonymised) and the answer's side
//! ([`AnswerGuard`]: placeholders restored as the answer streams, or, when answers are
//! checked, the streamed text held until the checks have run, so the client never sees what
//! an output rule masks or blocks). What a turn stores of its texts is what the provider
//! saw with the placeholders put back: a redacted value is stored nowhere, a pseudonymised
//! one stays the client's own (decision 0060).

use std::{borrow::Cow, collections::HashMap};

use async_trait::async_trait;
use tessera_guardrails::{Blocked, Direction, GuardedRequest, GuardrailRecord, StreamRestorer};
use tessera_kernel::{DomainError, LocSegment, OrganizationId};
use tessera_models::{ChatEvent, ChatMessage, Completion, FinishReason, ToolCall};

use crate::{AttachmentContent, ChatError, ResolvedAttachment};

/// Where a completion's guardrails come from (Tessera's: the organization's policy refined
/// by the model's, from `tessera-guardrails`' policy service).
#[async_trait]
pub trait GuardrailSource: Send + Sync {
    /// The checks of one completion of `model_id` (as the request or the chat names it) in
    /// `organization`, begun with a vault of their own; `None` when no policy applies.
    async fn begin(
        &self,
        organization: &OrganizationId,
        model_id: &str,
    ) -> Result<Option<GuardedRequest>, DomainError>;

    /// What the checks did to one completion, once decided (refused, answered or failed):
    /// for metrics. Never holds a checked value.
    fn report(&self, record: &GuardrailRecord);
}

/// No guardrails: every completion passes unchecked.
pub struct NoGuardrails;

#[async_trait]
impl GuardrailSource for NoGuardrails {
    async fn begin(
        &self,
        _organization: &OrganizationId,
        _model_id: &str,
    ) -> Result<Option<GuardedRequest>, DomainError> {
        Ok(None)
    }

    fn report(&self, _record: &GuardrailRecord) {}
}

/// Where an input text is in the request, for a refusal's `loc`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum InputAt {
    /// A stored message of the chat the request continues (named by its `chatId`).
    History,
    /// The request's message at this index.
    Turn(usize),
}

impl InputAt {
    fn loc(self, within: &[LocSegment]) -> Vec<LocSegment> {
        match self {
            Self::History => vec!["body".into(), "chatId".into()],
            Self::Turn(index) => [
                LocSegment::from("body"),
                LocSegment::from("messages"),
                LocSegment::Index(index),
            ]
            .into_iter()
            .chain(within.iter().cloned())
            .collect(),
        }
    }
}

fn refused(blocked: &Blocked, loc: Vec<LocSegment>) -> ChatError {
    ChatError::Invalid(vec![blocked.field_error(loc)])
}

/// Checks `text` in place: what the provider may read replaces it.
fn check_text(
    guard: &mut GuardedRequest,
    text: &mut String,
    at: InputAt,
    within: &[LocSegment],
) -> Result<(), ChatError> {
    match guard.check_input(text) {
        Ok(Cow::Borrowed(_)) => Ok(()),
        Ok(Cow::Owned(checked)) => {
            *text = checked;
            Ok(())
        }
        Err(blocked) => Err(refused(&blocked, at.loc(within))),
    }
}

/// Checks one message's texts before its attachments are joined to it: its content, its
/// tool calls' arguments and its attached documents' text.
pub(crate) fn check_message(
    guard: &mut GuardedRequest,
    message: &mut ChatMessage,
    attached: &mut [ResolvedAttachment],
    at: InputAt,
) -> Result<(), ChatError> {
    check_text(guard, &mut message.content, at, &["content".into()])?;
    for (index, call) in message.tool_calls.iter_mut().enumerate() {
        let within = [
            LocSegment::from("toolCalls"),
            LocSegment::Index(index),
            LocSegment::from("arguments"),
        ];
        check_text(guard, &mut call.arguments, at, &within)?;
    }
    for (index, resolved) in attached.iter_mut().enumerate() {
        if let AttachmentContent::Text(text) = &mut resolved.content {
            let within = [LocSegment::from("attachments"), LocSegment::Index(index)];
            check_text(guard, text, at, &within)?;
        }
    }
    Ok(())
}

/// Asks the policy's hook about the turn's texts as the provider will read them.
pub(crate) async fn consult_hook(
    guard: &mut GuardedRequest,
    turn: &[ChatMessage],
) -> Result<(), ChatError> {
    let texts: Vec<&str> = turn
        .iter()
        .map(|message| message.content.as_str())
        .collect();
    guard
        .consult_hook(Direction::Input, &texts)
        .await
        .map_err(|blocked| refused(&blocked, vec!["body".into(), "messages".into()]))
}

/// What a turn's message stores of a checked text: the placeholders put back, masks kept.
pub(crate) fn stored(guard: &GuardedRequest, checked: &str) -> String {
    guard.pseudonyms().restore(checked).into_owned()
}

/// A model call's output as the client may see it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Visible {
    pub(crate) content: String,
    pub(crate) reasoning: String,
    pub(crate) tool_calls: Vec<ToolCall>,
    /// Set when an output check refused the answer: its text is withheld and it ends with
    /// `content_filter`.
    pub(crate) blocked: Option<Blocked>,
}

impl Visible {
    /// The completion with the visible output in place of the model's own (for the stored
    /// answer and the client; never for the provider, which keeps reading its own text).
    pub(crate) fn apply_to(&self, completion: &Completion) -> Completion {
        let mut shown = completion.clone();
        shown.content = self.content.clone();
        shown.reasoning = self.reasoning.clone();
        shown.tool_calls = self.tool_calls.clone();
        if self.blocked.is_some() {
            // A withheld answer calls no tool either: the turn ends with it.
            shown.tool_calls.clear();
            shown.finish_reason = Some(FinishReason::ContentFilter);
        }
        shown
    }
}

/// The answer's side of one completion's guardrails.
pub(crate) struct AnswerGuard {
    request: GuardedRequest,
    /// Answers are checked: streamed text and reasoning wait for the end of the call.
    holds: bool,
    text: StreamRestorer,
    reasoning: StreamRestorer,
    arguments: HashMap<u32, StreamRestorer>,
}

impl AnswerGuard {
    pub(crate) fn new(request: GuardedRequest) -> Self {
        let holds = request.policy().checks_output();
        Self {
            text: request.restorer(),
            reasoning: request.restorer(),
            arguments: HashMap::new(),
            holds,
            request,
        }
    }

    /// Checks a tool result Tessera ran before the provider reads it: masked as input is,
    /// or, when a rule refuses it, replaced by the refusal (which names the rule, never the
    /// value), so the model learns the result was withheld.
    pub(crate) fn tool_result(&mut self, content: &str) -> String {
        let checked = match self.request.check_input(content) {
            Ok(checked) => checked.into_owned(),
            Err(blocked) => format!("[withheld: {blocked}]"),
        };
        // The result may have added placeholders the next call's answer can use.
        self.text = self.request.restorer();
        self.reasoning = self.request.restorer();
        checked
    }

    /// What a tool result stores: the placeholders put back, masks kept.
    pub(crate) fn stored(&self, checked: &str) -> String {
        stored(&self.request, checked)
    }

    /// A tool call with the values its arguments stand for (a tool Tessera runs needs them).
    pub(crate) fn restored_call(&self, call: &ToolCall) -> ToolCall {
        ToolCall {
            arguments: self.restore(&call.arguments),
            ..call.clone()
        }
    }

    fn restore(&self, text: &str) -> String {
        self.request.pseudonyms().restore(text).into_owned()
    }

    /// What the client is sent for one event of the model's stream: the event restored,
    /// nothing yet (held back, or the first part of a placeholder), or, as a tool call
    /// ends, what its arguments' restorer still held and then the end.
    pub(crate) fn events(&mut self, event: ChatEvent) -> Vec<ChatEvent> {
        let event = match event {
            ChatEvent::TextDelta(_) | ChatEvent::ReasoningDelta(_) if self.holds => None,
            ChatEvent::TextDelta(delta) => {
                non_empty(self.text.push(&delta)).map(ChatEvent::TextDelta)
            }
            ChatEvent::ReasoningDelta(delta) => {
                non_empty(self.reasoning.push(&delta)).map(ChatEvent::ReasoningDelta)
            }
            ChatEvent::ToolCallArgumentsDelta { index, delta } => {
                let restorer = (self.arguments)
                    .entry(index)
                    .or_insert_with(|| self.request.restorer());
                non_empty(restorer.push(&delta))
                    .map(|delta| ChatEvent::ToolCallArgumentsDelta { index, delta })
            }
            ChatEvent::ToolCallEnd { index } => {
                let rest = (self.arguments.remove(&index))
                    .map(|mut restorer| restorer.finish())
                    .unwrap_or_default();
                let end = ChatEvent::ToolCallEnd { index };
                return match rest.is_empty() {
                    true => vec![end],
                    false => vec![
                        ChatEvent::ToolCallArgumentsDelta { index, delta: rest },
                        end,
                    ],
                };
            }
            other => Some(other),
        };
        event.into_iter().collect()
    }

    /// Ends one model call: its output as the client may see it (output checks run,
    /// placeholders restored) and what is still to be sent of it: the whole text and
    /// reasoning when they were held, else what the restorers held back.
    pub(crate) async fn end_call(&mut self, completion: &Completion) -> (Visible, Vec<ChatEvent>) {
        let tool_calls = (completion.tool_calls.iter())
            .map(|call| self.restored_call(call))
            .collect();
        if !self.holds {
            let mut events = Vec::new();
            let text = self.text.finish();
            if !text.is_empty() {
                events.push(ChatEvent::TextDelta(text));
            }
            let reasoning = self.reasoning.finish();
            if !reasoning.is_empty() {
                events.push(ChatEvent::ReasoningDelta(reasoning));
            }
            let visible = Visible {
                content: self.restore(&completion.content),
                reasoning: self.restore(&completion.reasoning),
                tool_calls,
                blocked: None,
            };
            return (visible, events);
        }
        if completion.content.is_empty() && completion.reasoning.is_empty() {
            // Nothing to check (tool calls only, or a call that failed before answering).
            let visible = Visible {
                tool_calls,
                ..Visible::default()
            };
            return (visible, Vec::new());
        }
        // The hook reads the answer as the model wrote it (placeholders, not values).
        let checked = self.check_answer(completion).await;
        let (content, reasoning, blocked) = match checked {
            Ok((content, reasoning)) => (content, reasoning, None),
            Err(blocked) => (String::new(), String::new(), Some(blocked)),
        };
        let mut events = Vec::new();
        if !reasoning.is_empty() {
            events.push(ChatEvent::ReasoningDelta(reasoning.clone()));
        }
        if !content.is_empty() {
            events.push(ChatEvent::TextDelta(content.clone()));
        }
        let visible = Visible {
            content,
            reasoning,
            tool_calls,
            blocked,
        };
        (visible, events)
    }

    /// The answer's text and reasoning through the output rules and the hook.
    async fn check_answer(&mut self, completion: &Completion) -> Result<(String, String), Blocked> {
        let reasoning = self
            .request
            .check_output(&completion.reasoning)?
            .into_owned();
        let content = self.request.check_output(&completion.content)?.into_owned();
        self.request
            .consult_hook(Direction::Output, &[completion.content.as_str()])
            .await?;
        Ok((content, reasoning))
    }

    /// What the checks did, for the stored answer and the metrics.
    pub(crate) fn record(&self) -> &GuardrailRecord {
        self.request.record()
    }
}

fn non_empty(text: Cow<'_, str>) -> Option<String> {
    (!text.is_empty()).then(|| text.into_owned())
}
