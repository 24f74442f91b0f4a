//! The requests the checks send: short, greedy (temperature 0) questions whose answers run
//! past a few tokens, and the one tool the tool checks offer.

use serde_json::json;

use super::subject::ChatModelUnderTest;
use crate::{ChatMessage, ChatRequest, Role, ToolCall, ToolSpec};

/// Answered by counting for longer than any limit the checks set, so a limit, not the end
/// of the answer, is what stops it.
pub const COUNTING: &str = "Count from 1 to 50, separated by commas.";

/// A second question, for telling two answers apart.
pub const CAPITAL: &str = "What is the capital of France? Answer in one sentence.";

/// Long enough that an answer left running would still be generating minutes later.
pub const STORY: &str = "Write a very long story about a dragon and a knight.";

/// The answers' length where no check needs another: short, for CPU backends.
pub const SHORT_ANSWER: u32 = 16;

/// `question` from the user, answered greedily in at most `max_tokens` tokens.
pub fn ask(subject: &ChatModelUnderTest, question: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        model: subject.model_name.clone(),
        messages: vec![ChatMessage::new(Role::User, question)],
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
        ..ChatRequest::default()
    }
}

/// The tool the tool checks offer: the weather of a city.
pub fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: WEATHER_TOOL.into(),
        description: Some("The current weather of a city".into()),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 20}},
            "required": ["city"],
            "additionalProperties": false
        }),
    }
}

pub const WEATHER_TOOL: &str = "get_weather";

/// The question the weather tool answers.
pub const WEATHER_QUESTION: &str = "What is the weather in Paris? Use the tool.";

/// A call of the weather tool as an assistant message made it, for a tool round trip.
pub fn weather_call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: WEATHER_TOOL.into(),
        arguments: json!({"city": "Paris"}).to_string(),
    }
}
