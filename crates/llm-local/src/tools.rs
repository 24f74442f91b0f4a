//! Tool calls of the embedded model: the answer is constrained to
//! `{"name": <one of the tools>, "arguments": <that tool's parameters>}` and turned into the
//! port's tool-call events when it is complete.

use futures_util::{Stream, StreamExt, stream};
use serde_json::{Value, json};
use tessera_models::{ChatEvent, ChatStream, FinishReason, ProviderError, ToolSpec};

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

/// Collects the constrained answer and replaces it with one tool call.
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
                    return call_events(&text, &reason, seed)
                        .map(|mut calls| {
                            calls.push(ChatEvent::Finish {
                                reason: FinishReason::ToolCalls,
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

fn call_events(
    text: &str,
    reason: &FinishReason,
    seed: u64,
) -> Result<Vec<ChatEvent>, ProviderError> {
    let invalid = |why: String| ProviderError::Upstream {
        status: None,
        message: format!("the local model's tool call {why}"),
    };
    if *reason == FinishReason::Length {
        return Err(invalid("was cut off by maxTokens".into()));
    }
    let call: Value =
        serde_json::from_str(text).map_err(|e| invalid(format!("is not JSON: {e}")))?;
    let name = call["name"]
        .as_str()
        .ok_or_else(|| invalid("names no tool".into()))?
        .to_owned();
    Ok(vec![
        ChatEvent::ToolCallStart {
            index: 0,
            id: format!("call_{seed:016x}"),
            name,
        },
        ChatEvent::ToolCallArgumentsDelta {
            index: 0,
            delta: call["arguments"].to_string(),
        },
        ChatEvent::ToolCallEnd { index: 0 },
    ])
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
        let cut = stream::iter(vec![Ok(ChatEvent::Finish {
            reason: FinishReason::Length,
            usage,
        })]);
        let out: Vec<_> = as_tool_call(cut, 1).collect().await;
        assert!(matches!(out[..], [Err(ProviderError::Upstream { .. })]));
    }
}
