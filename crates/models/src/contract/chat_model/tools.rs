//! Checks of tool calling, for models whose capabilities include `tools`: a call forced by
//! the tool choice streams as tool-call events and finishes with `ToolCalls`, and a tool's
//! result is answered in text when the tool choice is `None`.

use super::{
    reading::{assert_counts_tokens, read},
    requests::{SHORT_ANSWER, WEATHER_QUESTION, WEATHER_TOOL, ask, weather_call, weather_tool},
    subject::{ChatModelUnderTest, Verdict, skipped},
};
use crate::{ChatMessage, FinishReason, Role, ToolChoice};

/// Room for a call of the weather tool (its name and a city), written by a small model.
const CALL_TOKENS: u32 = 48;

/// `ToolChoice::Function` forces a call of that tool: the answer is one or more calls of
/// it, each with an id and arguments that are a JSON object, and finishes with `ToolCalls`.
pub async fn a_forced_tool_call_streams_as_tool_call_events(
    subject: &ChatModelUnderTest,
) -> Verdict {
    if !subject.model.capabilities().tools {
        return skipped("the model's capabilities do not include tools");
    }
    let mut request = ask(subject, WEATHER_QUESTION, CALL_TOKENS);
    request.tools = vec![weather_tool()];
    request.tool_choice = ToolChoice::Function(WEATHER_TOOL.into());
    let answer = read(subject, request, "a forced tool call").await;
    let calls = &answer.completion.tool_calls;
    assert!(!calls.is_empty(), "a forced call, not made: {answer:?}");
    for call in calls {
        assert_eq!(call.name, WEATHER_TOOL, "a call of another tool: {call:?}");
        assert!(!call.id.is_empty(), "a call without an id: {call:?}");
        let arguments: serde_json::Value = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|e| panic!("arguments that are not JSON ({e}): {call:?}"));
        assert!(
            arguments.is_object(),
            "arguments that are not an object: {call:?}"
        );
    }
    assert_eq!(
        *answer.finish_reason(),
        FinishReason::ToolCalls,
        "a forced tool call: {calls:?}"
    );
    assert_counts_tokens(answer.usage(), "a forced tool call");
    Verdict::Held
}

/// With `ToolChoice::None`, the answer to a tool's result is text, though the tool is
/// still offered.
pub async fn a_tool_result_is_answered_in_text_when_no_call_is_allowed(
    subject: &ChatModelUnderTest,
) -> Verdict {
    if !subject.model.capabilities().tools {
        return skipped("the model's capabilities do not include tools");
    }
    let mut request = ask(subject, WEATHER_QUESTION, SHORT_ANSWER);
    let call = weather_call();
    request.messages.push(ChatMessage {
        tool_calls: vec![call.clone()],
        ..ChatMessage::new(Role::Assistant, "")
    });
    request.messages.push(ChatMessage {
        tool_call_id: Some(call.id),
        ..ChatMessage::new(Role::Tool, "Sunny, 21 °C")
    });
    request.tools = vec![weather_tool()];
    request.tool_choice = ToolChoice::None;
    let answer = read(subject, request, "the answer to a tool result").await;
    assert!(
        answer.completion.tool_calls.is_empty(),
        "a call though the tool choice is none: {:?}",
        answer.completion.tool_calls
    );
    assert!(
        !answer.text().trim().is_empty(),
        "no text answers the tool result: {answer:?}"
    );
    assert!(
        matches!(
            answer.finish_reason(),
            FinishReason::Stop | FinishReason::Length
        ),
        "the answer to a tool result finished with {:?}",
        answer.finish_reason()
    );
    Verdict::Held
}
