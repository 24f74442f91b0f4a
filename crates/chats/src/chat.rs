//! Chats and their messages as they are stored.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_guardrails::GuardrailRecord;
use tessera_kernel::OrganizationId;
use tessera_models::{ChatMessage, FinishReason, ImageInput, Role, Route, ToolCall, Usage};
use tessera_prompts::SystemPromptId;

use crate::Attachment;

tessera_kernel::entity_id!(
    /// A chat's id.
    ChatId,
    "cht"
);

tessera_kernel::entity_id!(
    /// A message's id.
    MessageId,
    "msg"
);

/// The longest chat title, in characters.
pub const MAX_TITLE_CHARS: usize = 500;

/// Whether a generation is running on a chat, or the last one failed. `None` is idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatStatus {
    Generating,
    Error,
}

impl ChatStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatStatus::Generating => "generating",
            ChatStatus::Error => "error",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "generating" => Some(ChatStatus::Generating),
            "error" => Some(ChatStatus::Error),
            _ => None,
        }
    }
}

/// What a chat was created with and keeps using, whatever later happens to its model:
/// changing a model affects new chats only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSnapshot {
    /// The model the chat was created with: a user model id or a catalog base-model id.
    pub model_id: String,
    /// The catalog base model that generates.
    pub base_model_id: String,
    /// The system prompt sent with every turn (override or composition), if any.
    pub system_prompt: Option<String>,
    /// The system prompt composed into `system_prompt`, composed as of the chat's creation.
    pub system_prompt_id: Option<SystemPromptId>,
}

/// A conversation of one principal of an organization.
#[derive(Debug, Clone, PartialEq)]
pub struct Chat {
    pub id: ChatId,
    pub organization_id: OrganizationId,
    /// The principal (user or client) who created the chat and may use it.
    pub owner: String,
    pub model: ModelSnapshot,
    pub title: Option<String>,
    pub status: Option<ChatStatus>,
    /// Why the last generation failed (with `status: error`).
    pub error: Option<String>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A retrieved passage a completion was grounded on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// Stable id of the passage (chunk id).
    pub id: String,
    pub file_id: String,
    pub dataset_id: Option<String>,
    pub title: Option<String>,
    pub text: String,
    pub score: f32,
    /// The file's name (absent in sources stored before it was recorded).
    #[serde(default)]
    pub file_name: Option<String>,
    /// Where in the file the passage is (absent in sources stored before it was recorded).
    #[serde(default)]
    pub location: Option<SourceLocation>,
}

/// Where a passage sits in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceLocation {
    /// 1-based page (PDF).
    pub page: Option<u32>,
    /// The heading, sheet row range or JSON path the passage is under.
    pub section: Option<String>,
    /// Character offsets of the passage in the file's extracted text.
    pub char_start: u64,
    pub char_end: u64,
}

/// What an assistant answer cost and why it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageUsage {
    pub usage: Usage,
    pub finish_reason: FinishReason,
    /// Which deployment answered, after which failed attempts (routed models).
    pub route: Option<Route>,
    /// What the completion's guardrails did (rules, directions, effects, counts; never a
    /// value). Empty when no policy applied.
    pub guardrails: GuardrailRecord,
}

/// One stored message. Messages are numbered from 0 within their chat.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: MessageId,
    pub chat_id: ChatId,
    pub sequence: u32,
    pub role: Role,
    pub content: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub sources: Vec<Source>,
    /// Files the (user) message attached.
    pub attachments: Vec<Attachment>,
    /// Assistant answers only.
    pub usage: Option<MessageUsage>,
    pub created_at: DateTime<Utc>,
}

/// A chat with its messages in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRecord {
    pub chat: Chat,
    pub messages: Vec<Message>,
}

/// Where an answer stands in its chat, for a request that continues from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuation {
    /// The chat's latest answer: the conversation may go on from it.
    Latest,
    /// An earlier answer: chats do not branch, so the conversation cannot go on from it.
    Superseded,
    /// Not an answer of this chat, or the chat is deleted.
    Unknown,
}

impl ChatRecord {
    /// Whether the conversation may continue from `answer`: only from its latest answer,
    /// since a chat is one line of messages.
    pub fn continuation_from(&self, answer: &MessageId) -> Continuation {
        if self.chat.deleted_at.is_some() {
            return Continuation::Unknown;
        }
        let latest = self
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant);
        match latest {
            Some(latest) if &latest.id == answer => Continuation::Latest,
            _ if self
                .messages
                .iter()
                .any(|m| &m.id == answer && m.role == Role::Assistant) =>
            {
                Continuation::Superseded
            }
            _ => Continuation::Unknown,
        }
    }
}

/// A title from the first words of a message: at most 80 characters, cut at a word.
pub fn derive_title(text: &str) -> Option<String> {
    const MAX: usize = 80;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return None;
    }
    if line.chars().count() <= MAX {
        return Some(line);
    }
    let cut: String = line.chars().take(MAX).collect();
    let title = match cut.rfind(' ') {
        Some(space) if space > MAX / 2 => &cut[..space],
        _ => cut.as_str(),
    };
    Some(format!("{title}…"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{at, chat_of, message};

    #[test]
    fn a_conversation_continues_from_its_latest_answer_only() {
        let organization = tessera_kernel::OrganizationId::generate();
        let chat = chat_of(&organization);
        let messages = vec![
            message(&chat, 0, Role::User, "a"),
            message(&chat, 1, Role::Assistant, "b"),
            message(&chat, 2, Role::User, "c"),
            message(&chat, 3, Role::Assistant, "d"),
        ];
        let ids: Vec<MessageId> = messages.iter().map(|m| m.id.clone()).collect();
        let mut record = ChatRecord { chat, messages };
        assert_eq!(record.continuation_from(&ids[3]), Continuation::Latest);
        assert_eq!(record.continuation_from(&ids[1]), Continuation::Superseded);
        assert_eq!(record.continuation_from(&ids[2]), Continuation::Unknown);
        assert_eq!(
            record.continuation_from(&MessageId::generate()),
            Continuation::Unknown
        );
        record.chat.deleted_at = Some(at(9));
        assert_eq!(record.continuation_from(&ids[3]), Continuation::Unknown);
    }

    #[test]
    fn titles_are_one_short_line() {
        assert_eq!(
            derive_title("  Hello\n  world "),
            Some("Hello world".into())
        );
        assert_eq!(derive_title(" \n"), None);
        let long = "word ".repeat(40);
        let title = derive_title(&long).unwrap();
        assert!(title.chars().count() <= 81, "{title}");
        assert!(title.ends_with("word…"));
    }
}

/// One message of a completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub role: Role,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    /// User messages: ids of uploaded files to attach.
    pub attachments: Vec<String>,
    /// User messages: images given inline (vision models; stateless completions only, since
    /// a chat keeps files, not inline data).
    pub images: Vec<ImageInput>,
}

impl From<&NewMessage> for ChatMessage {
    fn from(message: &NewMessage) -> Self {
        ChatMessage {
            role: message.role,
            content: message.content.clone(),
            tool_calls: message.tool_calls.clone(),
            tool_call_id: message.tool_call_id.clone(),
            images: message.images.clone(),
        }
    }
}
