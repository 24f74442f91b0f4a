//! The provider port: what chats need from a language model, whoever serves it (a hosted
//! OpenAI-compatible API, a local server, or the embedded engine). One streaming call
//! yields typed events; the non-streaming answer is `complete`, which folds the same stream,
//! so both paths share one implementation per provider.

use std::{pin::Pin, sync::Arc, time::Duration};

use async_trait::async_trait;
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tessera_prompts::TokenCounter;

/// What a model can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Capabilities {
    pub streaming: bool,
    pub tools: bool,
    pub vision: bool,
    pub reasoning: bool,
    /// `json_schema` in the catalog file (TOML keys are snake_case).
    #[serde(alias = "json_schema")]
    pub json_schema: bool,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The lowercase name (`system`, `user`, `assistant`, `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// A tool call the model made: `arguments` is a JSON document as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// An image sent with a user message, for models with `vision`.
#[derive(Clone, PartialEq, Eq)]
pub struct ImageInput {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The encoded image, shared: history is rebuilt every turn.
    pub data: Arc<[u8]>,
}

impl std::fmt::Debug for ImageInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageInput")
            .field("media_type", &self.media_type)
            .field("bytes", &self.data.len())
            .finish()
    }
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// Calls an assistant message made.
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this message answers.
    pub tool_call_id: Option<String>,
    /// User messages: images after the text (only for models with `vision`).
    pub images: Vec<ImageInput>,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// Whether the model must call one of the request's tools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool call: the model answers in text, though tools are offered.
    None,
    /// At least one call, of any of the tools.
    Required,
    /// A call of the tool of this name.
    Function(String),
}

impl ToolChoice {
    /// Whether the answer must be a tool call.
    pub fn forces_call(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Function(_))
    }
}

/// Structured output: the answer must be JSON conforming to `schema`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonSchemaFormat {
    pub name: String,
    pub strict: bool,
    pub schema: serde_json::Value,
}

/// How much the model may think before answering (reasoning models only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

/// One generation request, in provider-neutral terms.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The provider's own model identifier (`modelName` of the base model).
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    /// Whether (and which of) `tools` the model must call; meaningless without tools.
    pub tool_choice: ToolChoice,
    pub response_format: Option<JsonSchemaFormat>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    pub stop: Vec<String>,
    /// Ask for the model's reasoning, with an effort level and/or a token budget.
    pub reasoning: Option<(Option<ReasoningEffort>, Option<u32>)>,
    /// Who may share cached prompt prefixes with this request (the organization): an
    /// engine that reuses earlier prompts' work reuses only its own scope's, so how fast a
    /// prompt starts never tells one tenant what another sent. `None` shares with `None`.
    pub cache_scope: Option<String>,
}

/// Why generation ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    /// Whatever else a provider reported.
    Other(String),
}

impl FinishReason {
    /// snake_case (`stop`, `length`, `tool_calls`, `content_filter`), or the provider's
    /// own text for `Other`.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(text) => text,
        }
    }

    /// The reason `as_str` spells `text`; any other text is `Other`.
    pub fn parse(text: String) -> Self {
        match text.as_str() {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Other(text),
        }
    }
}

/// Tokens a generation used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Part of `output_tokens` spent on reasoning, when the provider says.
    pub reasoning_tokens: u32,
    /// Part of `input_tokens` read from a cache (a prefix reused from an earlier request)
    /// rather than processed, when the provider says.
    pub cached_input_tokens: u32,
}

impl Usage {
    pub fn total_tokens(&self) -> u32 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// One step of a streamed generation.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// A tool call begins; `index` identifies it among this answer's calls.
    ToolCallStart {
        index: u32,
        id: String,
        name: String,
    },
    ToolCallArgumentsDelta {
        index: u32,
        delta: String,
    },
    ToolCallEnd {
        index: u32,
    },
    /// Which deployment answers, after which failed attempts: the first event of a routed
    /// model's stream (see [`crate::RoutedChatModel`]).
    Routed(crate::Route),
    /// The last event of a successful stream.
    Finish {
        reason: FinishReason,
        usage: Usage,
    },
}

/// Why a provider could not answer. Mapped to 502/503/504 problems by the HTTP layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The provider is overloaded or rate limited us (after retries); try again later.
    #[error("the model provider is unavailable: {message}")]
    Unavailable {
        message: String,
        retry_after: Option<Duration>,
    },
    /// No answer (or no next chunk) within the configured time.
    #[error("the model provider did not answer in time")]
    Timeout,
    /// The provider answered with an error or with something that is not a valid answer.
    #[error("the model provider failed: {message}")]
    Upstream {
        status: Option<u16>,
        message: String,
    },
    /// The provider refused the request as invalid (e.g. context too long).
    #[error("the model provider refused the request: {0}")]
    InvalidRequest(String),
}

/// A stream of generation events.
pub type ChatStream = Pin<Box<dyn Stream<Item = Result<ChatEvent, ProviderError>> + Send>>;

/// A language model that chats.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ChatModel: Send + Sync {
    fn capabilities(&self) -> Capabilities;

    /// Counts tokens the way this model does (for context budgeting).
    fn tokenizer(&self) -> Arc<dyn TokenCounter>;

    /// Starts a generation. Errors before the first event come back here; later ones as an
    /// `Err` item, after which the stream ends. Dropping the stream cancels the generation.
    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError>;
}

/// A finished, non-streamed answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    pub content: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<FinishReason>,
    pub usage: Usage,
    /// Which deployment answered, when the model is routed.
    pub route: Option<crate::Route>,
}

impl Completion {
    /// Whether the model produced anything: text, reasoning or a tool call.
    pub fn has_output(&self) -> bool {
        !self.content.is_empty() || !self.reasoning.is_empty() || !self.tool_calls.is_empty()
    }

    /// Applies one event of a stream.
    pub fn apply(&mut self, event: ChatEvent) {
        match event {
            ChatEvent::TextDelta(text) => self.content.push_str(&text),
            ChatEvent::ReasoningDelta(text) => self.reasoning.push_str(&text),
            ChatEvent::ToolCallStart { id, name, .. } => self.tool_calls.push(ToolCall {
                id,
                name,
                arguments: String::new(),
            }),
            ChatEvent::ToolCallArgumentsDelta { index, delta } => {
                if let Some(call) = self.tool_calls.get_mut(index as usize) {
                    call.arguments.push_str(&delta);
                }
            }
            ChatEvent::ToolCallEnd { .. } => {}
            ChatEvent::Routed(route) => self.route = Some(route),
            ChatEvent::Finish { reason, usage } => {
                self.finish_reason = Some(reason);
                self.usage = usage;
            }
        }
    }
}

/// The non-streaming answer: the stream, folded.
pub async fn complete(
    model: &dyn ChatModel,
    request: ChatRequest,
) -> Result<Completion, ProviderError> {
    let mut stream = model.stream(request).await?;
    let mut completion = Completion::default();
    while let Some(event) = stream.next().await {
        completion.apply(event?);
    }
    if completion.finish_reason.is_none() {
        return Err(ProviderError::Upstream {
            status: None,
            message: "the answer ended without a finish event".into(),
        });
    }
    Ok(completion)
}

#[cfg(test)]
mod tests {
    use futures_util::stream;

    use super::*;

    fn events(items: Vec<Result<ChatEvent, ProviderError>>) -> MockChatModel {
        let mut model = MockChatModel::new();
        model
            .expect_stream()
            .return_once(move |_| Ok(Box::pin(stream::iter(items))));
        model
    }

    #[tokio::test]
    async fn complete_folds_the_stream() {
        let model = events(vec![
            Ok(ChatEvent::ReasoningDelta("Think".into())),
            Ok(ChatEvent::TextDelta("Hel".into())),
            Ok(ChatEvent::TextDelta("lo".into())),
            Ok(ChatEvent::ToolCallStart {
                index: 0,
                id: "call_1".into(),
                name: "lookup".into(),
            }),
            Ok(ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: "{\"q\":".into(),
            }),
            Ok(ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: "1}".into(),
            }),
            Ok(ChatEvent::ToolCallEnd { index: 0 }),
            Ok(ChatEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 4,
                    reasoning_tokens: 1,
                    cached_input_tokens: 6,
                },
            }),
        ]);
        let completion = complete(&model, ChatRequest::default()).await.unwrap();
        assert_eq!(completion.content, "Hello");
        assert_eq!(completion.reasoning, "Think");
        assert_eq!(
            completion.tool_calls,
            [ToolCall {
                id: "call_1".into(),
                name: "lookup".into(),
                arguments: "{\"q\":1}".into()
            }]
        );
        assert_eq!(completion.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(completion.usage.total_tokens(), 14);
        assert_eq!(completion.usage.cached_input_tokens, 6);
    }

    #[tokio::test]
    async fn errors_mid_stream_and_missing_finish_are_failures() {
        let failing = events(vec![
            Ok(ChatEvent::TextDelta("partial".into())),
            Err(ProviderError::Timeout),
        ]);
        assert_eq!(
            complete(&failing, ChatRequest::default()).await,
            Err(ProviderError::Timeout)
        );
        let truncated = events(vec![Ok(ChatEvent::TextDelta("partial".into()))]);
        assert!(matches!(
            complete(&truncated, ChatRequest::default()).await,
            Err(ProviderError::Upstream { .. })
        ));
    }
}
