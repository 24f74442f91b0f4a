//! Tool calls of the embedded model: the answer is constrained to
//! `{"name": <one of the tools>, "arguments": <that tool's parameters>}` and turned into the
//! port's tool-call events when it is complete.

use futures_util::{Stream, StreamExt, stream};
use serde_json::{Value, json};
use tessera_models::{
    ChatEvent, ChatRequest, ChatStream, FinishReason, ProviderError, Role, ToolChoice, ToolSpec,
};

/// The tools the prompt describes, and whether the answer must be a call of one of them.
/// `auto`: a turn that answers the user is a call (the small model cannot be trusted to
/// choose well), one after tool results is text; `required` and a named function (the only
/// tool offered then) force a call after any turn; `none` offers none.
pub(crate) fn plan(request: &ChatRequest) -> Result<(&[ToolSpec], bool), ProviderError> {
    let offered = match &request.tool_choice {
        ToolChoice::None => &[][..],
        ToolChoice::Function(name) => {
            let tool = (request.tools.iter())
                .find(|tool| &tool.name == name)
                .ok_or_else(|| {
                    ProviderError::InvalidRequest(format!(
                        "the tool choice names `{name}`, which is not one of the tools"
                    ))
                })?;
            std::slice::from_ref(tool)
        }
        ToolChoice::Auto | ToolChoice::Required => &request.tools[..],
    };
    let answers_user =
        (request.messages.last()).is_some_and(|m| matches!(m.role, Role::User | Role::System));
    let calls = !offered.is_empty() && (answers_user || request.tool_choice.forces_call());
    Ok((offered, calls))
}

/// The JSON Schema of one call of any of `tools`.
pub(crate) fn call_schema(tools: &[ToolSpec]) -> Value {
    let calls: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "type": "object",
                "properties": {
                    "name": {"const": tool.name},
                    "arguments": tool.parameters,
                },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    match <[Value; 1]>::try_from(calls) {
        Ok([only]) => only,
        Err(calls) => json!({"anyOf": calls}),
    }
}

/// Collects the constrained answer and replaces it with one tool call. An answer cut off by
/// `max_tokens` ends with `FinishReason::Length`, as OpenAI's does: the call as far as it
/// was written (its arguments unfinished), or none when even its name was not.
pub(crate) fn as_tool_call(
    events: impl Stream<Item = Result<ChatEvent, ProviderError>> + Send + 'static,
    seed: u64,
) -> ChatStream {
    let folded = async move {
        let mut text = String::new();
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(ChatEvent::TextDelta(delta)) => text.push_str(&delta),
                Ok(ChatEvent::Finish { reason, usage }) => {
                    let cut_off = reason == FinishReason::Length;
                    let calls = if cut_off {
                        Ok(partial_call(&text, seed))
                    } else {
                        call_events(&text, seed)
                    };
                    return calls
                        .map(|mut calls| {
                            calls.push(ChatEvent::Finish {
                                reason: if cut_off {
                                    FinishReason::Length
                                } else {
                                    FinishReason::ToolCalls
                                },
                                usage,
                            });
                            calls.into_iter().map(Ok).collect()
                        })
                        .unwrap_or_else(|error| vec![Err(error)]);
                }
                Ok(other) => return vec![Ok(other)],
                Err(error) => return vec![Err(error)],
            }
        }
        Vec::new()
    };
    Box::pin(stream::once(folded).flat_map(stream::iter))
}

/// The events of one call `name` with `arguments` (JSON text).
fn one_call(name: String, arguments: String, seed: u64) -> Vec<ChatEvent> {
    vec![
        ChatEvent::ToolCallStart {
            index: 0,
            id: format!("call_{seed:016x}"),
            name,
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            delta: arguments,
        },
        ChatEvent::ToolCallEnd { index: 0 },
    ]
}

fn call_events(text: &str, seed: u64) -> Result<Vec<ChatEvent>, ProviderError> {
    let invalid = |why: String| ProviderError::Upstream {
        status: None,
        message: format!("the local model's tool call {why}"),
    };
    let call: Value =
        serde_json::from_str(text).map_err(|e| invalid(format!("is not JSON: {e}")))?;
    let name = call["name"]
        .as_str()
        .ok_or_else(|| invalid("names no tool".into()))?
        .to_owned();
    Ok(one_call(name, call["arguments"].to_string(), seed))
}

/// A call cut off while written: the grammar writes `{"name":<name>,"arguments":` first
/// (compactly, in the schema's order), so its name is known once that prefix is complete,
/// and its arguments are the text after it.
fn partial_call(text: &str, seed: u64) -> Vec<ChatEvent> {
    let Some(rest) = text.strip_prefix("{\"name\":") else {
        return Vec::new();
    };
    let mut names = serde_json::Deserializer::from_str(rest).into_iter::<String>();
    let Some(Ok(name)) = names.next() else {
        return Vec::new();
    };
    match rest
        .get(names.byte_offset()..)
        .and_then(|after| after.strip_prefix(",\"arguments\":"))
    {
        Some(arguments) => one_call(name, arguments.to_owned(), seed),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: None,
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn one_tool_is_one_object_and_several_are_alternatives() {
        assert_eq!(
            call_schema(&[tool("a")])["properties"]["name"],
            json!({"const": "a"})
        );
        assert_eq!(
            call_schema(&[tool("a"), tool("b")])["anyOf"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }

    #[tokio::test]
    async fn a_complete_call_becomes_tool_call_events() {
        let usage = tessera_models::Usage::default();
        let events = stream::iter(vec![
            Ok(ChatEvent::TextDelta("{\"name\":\"a\",".into())),
            Ok(ChatEvent::TextDelta("\"arguments\":{\"x\":1}}".into())),
            Ok(ChatEvent::Finish {
                reason: FinishReason::Stop,
                usage,
            }),
        ]);
        let out: Vec<_> = as_tool_call(events, 255).collect().await;
        assert_eq!(
            out,
            [
                Ok(ChatEvent::ToolCallStart {
                    index: 0,
                    id: "call_00000000000000ff".into(),
                    name: "a".into()
                }),
                Ok(ChatEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "{\"x\":1}".into()
                }),
                Ok(ChatEvent::ToolCallEnd { index: 0 }),
                Ok(ChatEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    usage
                }),
            ]
        );
    }

    #[tokio::test]
    async fn a_cut_off_call_ends_with_length_and_keeps_what_was_written() {
        let usage = tessera_models::Usage::default();
        let cut = |text: &str| {
            stream::iter(vec![
                Ok(ChatEvent::TextDelta(text.to_owned())),
                Ok(ChatEvent::Finish {
                    reason: FinishReason::Length,
                    usage,
                }),
            ])
        };
        let out: Vec<_> = as_tool_call(cut("{\"name\":\"a\",\"arguments\":{\"x\":12"), 1)
            .collect()
            .await;
        assert_eq!(
            out[1],
            Ok(ChatEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: "{\"x\":12".into()
            })
        );
        assert!(matches!(
            out.last(),
            Some(Ok(ChatEvent::Finish {
                reason: FinishReason::Length,
                ..
            }))
        ));
        for unnamed in ["", "{\"na", "{\"name\":\"lo", "{\"name\":\"a\","] {
            let out: Vec<_> = as_tool_call(cut(unnamed), 1).collect().await;
            assert_eq!(
                out,
                [Ok(ChatEvent::Finish {
                    reason: FinishReason::Length,
                    usage
                })],
                "{unnamed}"
            );
        }
    }
}
