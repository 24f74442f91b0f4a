//! The Responses API's `response` object, built from a stored (or just generated) assistant
//! message: its output items (the `file_search_call` its passages came from, a `reasoning`
//! summary, a `message` with `output_text` and its citations, `function_call`s), usage and
//! status; and response ids, which name the chat and the answer they come from.

use serde_json::{Value, json};
use tessera_chats::{ChatId, Message, MessageId};
use tessera_models::FinishReason;

use super::file_search::{SearchEcho, citations, file_search_call};

/// `resp_` + the chat's and the answer's 32 hex digits: enough to find the answer again
/// without another index.
pub fn response_id(chat: &ChatId, message: &MessageId) -> String {
    format!("resp_{}{}", hex_of(chat.as_str()), hex_of(message.as_str()))
}

fn hex_of(id: &str) -> &str {
    id.split_once('_').map_or(id, |(_, hex)| hex)
}

/// The chat and answer a response id names; `None` for anything else.
pub fn parse_response_id(id: &str) -> Option<(ChatId, MessageId)> {
    let hex = id.strip_prefix("resp_")?;
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let (chat, message) = hex.split_at(32);
    Some((
        format!("cht_{chat}").parse().ok()?,
        format!("msg_{message}").parse().ok()?,
    ))
}

/// What the request said, echoed on the response object as OpenAI does.
#[derive(Debug, Clone, Default)]
pub struct Echo {
    pub model: String,
    pub instructions: Option<String>,
    pub previous_response_id: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub tools: Vec<Value>,
    pub tool_choice: Value,
    pub text_format: Value,
    pub reasoning_effort: Option<String>,
    pub metadata: Value,
    pub store: bool,
    pub background: bool,
    /// The turn's question: the query of the search an answer grounded on passages shows.
    pub question: Option<String>,
    /// The request's `file_search` tool: the response shows its search even when it found
    /// nothing.
    pub file_search: Option<SearchEcho>,
}

/// A response's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Queued,
    InProgress,
    Completed,
    Incomplete,
    Failed,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Incomplete => "incomplete",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// How an answer that ended this way is reported: cut by the token limit, or withheld
    /// by a guardrail (finish reason `content_filter`), is incomplete.
    pub fn of(message: &Message) -> Self {
        match message.usage.as_ref().map(|u| &u.finish_reason) {
            Some(FinishReason::Length | FinishReason::ContentFilter) => Status::Incomplete,
            _ => Status::Completed,
        }
    }
}

/// The output item id of an answer's text.
pub fn message_item_id(message: &MessageId) -> String {
    message.to_string()
}

/// The output item id of a function call (the call's own id is its `call_id`).
pub fn call_item_id(call_id: &str) -> String {
    format!("fc_{call_id}")
}

/// The output items of an answer: the search its passages came from (when it has any, or
/// when the request's `file_search` tool searched),
/// reasoning, the text (when there is any, or when nothing else was produced) with its
/// citations, then each function call.
pub fn output_items(message: &Message, echo: &Echo) -> Vec<Value> {
    let mut items = Vec::new();
    if !message.sources.is_empty() || echo.file_search.is_some() {
        items.push(file_search_call(
            &message.id,
            echo.question.as_deref(),
            echo.file_search.as_ref(),
            &message.sources,
            "completed",
        ));
    }
    if let Some(reasoning) = message.reasoning.as_deref().filter(|r| !r.is_empty()) {
        items.push(json!({
            "type": "reasoning",
            "id": format!("rs_{}", hex_of(message.id.as_str())),
            "summary": [{"type": "summary_text", "text": reasoning}],
        }));
    }
    if !message.content.is_empty() || message.tool_calls.is_empty() {
        let annotations = citations(&message.content, &message.sources);
        items.push(json!({
            "type": "message",
            "id": message_item_id(&message.id),
            "status": "completed",
            "role": "assistant",
            "content": [output_text(&message.content, annotations)],
        }));
    }
    for call in &message.tool_calls {
        items.push(function_call(
            &call.id,
            &call.name,
            &call.arguments,
            "completed",
        ));
    }
    items
}

pub fn output_text(text: &str, annotations: Vec<Value>) -> Value {
    json!({"type": "output_text", "text": text, "annotations": annotations, "logprobs": []})
}

pub fn function_call(call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({
        "type": "function_call",
        "id": call_item_id(call_id),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    })
}

pub fn usage(message: &Message) -> Value {
    let usage = message.usage.as_ref().map(|u| u.usage).unwrap_or_default();
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens(),
    })
}

/// The `response` object. `answer` is absent while the response is queued or in progress
/// (and when it failed before answering).
pub fn response(
    id: &str,
    created_at: i64,
    echo: &Echo,
    status: Status,
    answer: Option<&Message>,
    error: Option<Value>,
) -> Value {
    let withheld = answer
        .and_then(|answer| answer.usage.as_ref())
        .is_some_and(|usage| usage.finish_reason == FinishReason::ContentFilter);
    let reason = if withheld {
        "content_filter"
    } else {
        "max_output_tokens"
    };
    let incomplete = (status == Status::Incomplete).then(|| json!({"reason": reason}));
    json!({
        "id": id,
        "object": "response",
        "created_at": created_at,
        "status": status.as_str(),
        "background": echo.background,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": echo.instructions,
        "max_output_tokens": echo.max_output_tokens,
        "model": echo.model,
        "output": answer.map(|answer| output_items(answer, echo)).unwrap_or_default(),
        "parallel_tool_calls": true,
        "previous_response_id": echo.previous_response_id,
        "reasoning": {"effort": echo.reasoning_effort, "summary": null},
        "store": echo.store,
        "temperature": echo.temperature,
        "text": {"format": echo.text_format},
        "tool_choice": echo.tool_choice,
        "tools": echo.tools,
        "top_p": echo.top_p,
        "truncation": "disabled",
        "usage": answer.map(usage),
        "user": null,
        "metadata": echo.metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_ids_name_their_chat_and_answer() {
        let chat = ChatId::generate();
        let message = MessageId::generate();
        let id = response_id(&chat, &message);
        assert!(id.starts_with("resp_") && id.len() == 69, "{id}");
        assert_eq!(parse_response_id(&id), Some((chat, message)));
        assert_eq!(parse_response_id("resp_123"), None);
        assert_eq!(parse_response_id(&format!("resp_{}", "g".repeat(64))), None);
    }

    fn answer(finish_reason: FinishReason) -> Message {
        Message {
            id: MessageId::generate(),
            chat_id: ChatId::generate(),
            sequence: 1,
            role: tessera_models::Role::Assistant,
            content: String::new(),
            reasoning: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            sources: Vec::new(),
            attachments: Vec::new(),
            usage: Some(tessera_chats::MessageUsage {
                usage: tessera_models::Usage::default(),
                finish_reason,
                route: None,
                guardrails: Default::default(),
            }),
            created_at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn cut_off_and_withheld_answers_are_incomplete_with_their_reason() {
        let reported = |finish_reason: FinishReason| {
            let answer = answer(finish_reason);
            let status = Status::of(&answer);
            let object = response("resp_1", 0, &Echo::default(), status, Some(&answer), None);
            (
                object["status"].clone(),
                object["incomplete_details"].clone(),
            )
        };
        assert_eq!(
            reported(FinishReason::Stop),
            (json!("completed"), Value::Null)
        );
        assert_eq!(
            reported(FinishReason::Length),
            (json!("incomplete"), json!({"reason": "max_output_tokens"}))
        );
        assert_eq!(
            reported(FinishReason::ContentFilter),
            (json!("incomplete"), json!({"reason": "content_filter"}))
        );
    }
}
