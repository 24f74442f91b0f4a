//! Rules a completion request must satisfy before anything is generated: the shape of the
//! conversation (roles, tool-call round trips), and what the model can do (tools,
//! reasoning, structured output, answer length). Every violation is reported at once,
//! located in the request body.

use std::collections::HashSet;

use serde_json::Value;
use tessera_kernel::{FieldError, LocSegment};
use tessera_models::{BaseModel, ChatMessage, JsonSchemaFormat, Role, ToolChoice, ToolSpec};

/// The longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

fn loc(path: &[LocSegment]) -> Vec<LocSegment> {
    let mut loc = vec![LocSegment::from("body")];
    loc.extend_from_slice(path);
    loc
}

fn error(path: &[LocSegment], msg: impl Into<String>, kind: &str) -> FieldError {
    FieldError::new(loc(path), msg, kind)
}

/// Checks this turn's messages against themselves and the stored history: roles, tool
/// calls with JSON arguments and unique ids, tool results that answer an earlier call.
pub fn check_messages(history: &[ChatMessage], turn: &[ChatMessage]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if turn.is_empty() {
        errors.push(error(
            &["messages".into()],
            "at least one message is required",
            "too_short",
        ));
        return errors;
    }
    let mut calls: HashSet<&str> = history
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|call| call.id.as_str())
        .collect();
    for (index, message) in turn.iter().enumerate() {
        let at = |field: &str| -> Vec<LocSegment> {
            vec!["messages".into(), index.into(), field.into()]
        };
        match message.role {
            Role::System => errors.push(error(
                &at("role"),
                "must be one of user, assistant, tool (the system prompt comes from the model)",
                "enum",
            )),
            Role::User | Role::Assistant | Role::Tool => {}
        }
        if message.role != Role::Assistant && !message.tool_calls.is_empty() {
            errors.push(error(
                &at("toolCalls"),
                "only assistant messages carry tool calls",
                "value_error",
            ));
        }
        for (call_index, call) in message.tool_calls.iter().enumerate() {
            let call_loc = |field: &str| -> Vec<LocSegment> {
                let mut path = at("toolCalls");
                path.extend([call_index.into(), "function".into(), field.into()]);
                path
            };
            if serde_json::from_str::<Value>(&call.arguments).is_err() {
                errors.push(error(
                    &call_loc("arguments"),
                    "must be a JSON document as a string",
                    "json_invalid",
                ));
            }
            if call.name.is_empty() {
                errors.push(error(&call_loc("name"), "must not be empty", "too_short"));
            }
            if !calls.insert(call.id.as_str()) || call.id.is_empty() {
                let mut path = at("toolCalls");
                path.extend([call_index.into(), "id".into()]);
                errors.push(error(
                    &path,
                    "tool call ids must be non-empty and unique within the chat",
                    "value_error",
                ));
            }
        }
        match (&message.role, &message.tool_call_id) {
            (Role::Tool, None) => errors.push(error(
                &at("toolCallId"),
                "tool messages need the id of the call they answer",
                "missing",
            )),
            (Role::Tool, Some(id)) if !calls.contains(id.as_str()) => errors.push(error(
                &at("toolCallId"),
                format!("`{id}` does not match a tool call of an earlier assistant message"),
                "value_error",
            )),
            (Role::User | Role::Assistant | Role::System, Some(_)) => errors.push(error(
                &at("toolCallId"),
                "only tool messages carry a toolCallId",
                "value_error",
            )),
            _ => {}
        }
    }
    if let Some(last) = turn.last()
        && last.role == Role::Assistant
    {
        errors.push(error(
            &["messages".into(), (turn.len() - 1).into(), "role".into()],
            "the last message must be from the user or a tool: the model answers it",
            "value_error",
        ));
    }
    errors
}

/// What a request asks of the model beyond plain text.
#[derive(Debug, Clone, Default)]
pub struct Requirements<'a> {
    pub tools: &'a [ToolSpec],
    pub response_format: Option<&'a JsonSchemaFormat>,
    pub reasoning: bool,
    pub reasoning_budget: Option<u32>,
    pub max_tokens: Option<u32>,
}

/// Checks the request's tools, response schema, reasoning and length against the model.
pub fn check_requirements(model: &BaseModel, wanted: &Requirements<'_>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let capabilities = model.capabilities;
    let unsupported = |field: &str, what: &str| {
        error(
            &[field.into()],
            format!("model {} does not support {what}", model.id),
            "unsupported",
        )
    };
    if !wanted.tools.is_empty() {
        if capabilities.tools {
            errors.extend(check_tools(wanted.tools));
        } else {
            errors.push(unsupported("tools", "tools"));
        }
    }
    if let Some(format) = wanted.response_format {
        if capabilities.json_schema {
            errors.extend(check_schema(
                &format.schema,
                &[
                    "responseFormat".into(),
                    "json_schema".into(),
                    "schema".into(),
                ],
            ));
        } else {
            errors.push(unsupported("responseFormat", "structured output"));
        }
    }
    if wanted.reasoning && !capabilities.reasoning {
        errors.push(unsupported("enableReasoning", "reasoning"));
    }
    if wanted.reasoning_budget.is_some() && !wanted.reasoning {
        errors.push(error(
            &["reasoningBudget".into()],
            "needs enableReasoning",
            "value_error",
        ));
    }
    if let (Some(max), Some(limit)) = (wanted.max_tokens, model.max_tokens_per_request)
        && max > limit
    {
        errors.push(error(
            &["maxTokens".into()],
            format!("must be at most {limit} for model {}", model.id),
            "less_than_equal",
        ));
    }
    errors
}

/// A tool choice that forces a call names tools that are offered: `required` needs at
/// least one, a named function one of that name (`offered`: the client's tools and those of
/// the MCP servers linked to the model).
pub fn check_tool_choice<'a>(
    choice: &ToolChoice,
    mut offered: impl Iterator<Item = &'a str>,
) -> Option<FieldError> {
    let msg = match choice {
        ToolChoice::Auto | ToolChoice::None => return None,
        ToolChoice::Required => {
            if offered.next().is_some() {
                return None;
            }
            "`required` forces a call of one of the tools, but none is offered: give `tools`"
                .to_owned()
        }
        ToolChoice::Function(name) => {
            if offered.any(|offered| offered == name) {
                return None;
            }
            format!("names the function `{name}`, which is not one of the tools")
        }
    };
    Some(error(&["toolChoice".into()], msg, "value_error"))
}

fn check_tools(tools: &[ToolSpec]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut names = HashSet::new();
    for (index, tool) in tools.iter().enumerate() {
        let at = |field: &str| -> Vec<LocSegment> {
            vec![
                "tools".into(),
                index.into(),
                "function".into(),
                field.into(),
            ]
        };
        let valid_name = !tool.name.is_empty()
            && tool.name.len() <= MAX_TOOL_NAME
            && tool
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            errors.push(error(
                &at("name"),
                "must be 1-64 letters, digits, underscores or dashes",
                "pattern",
            ));
        } else if !names.insert(tool.name.as_str()) {
            errors.push(error(
                &at("name"),
                "tool names must be unique",
                "value_error",
            ));
        }
        errors.extend(check_schema(&tool.parameters, &at("parameters")));
    }
    errors
}

/// A JSON Schema must be an object (or boolean) that is valid against its meta-schema.
pub fn check_schema(schema: &Value, path: &[LocSegment]) -> Vec<FieldError> {
    if !schema.is_object() {
        return vec![error(path, "must be a JSON Schema object", "value_error")];
    }
    match jsonschema::meta::validate(schema) {
        Ok(()) if crate::satisfiable::is_satisfiable(schema) => Vec::new(),
        Ok(()) => vec![error(
            path,
            "is unsatisfiable: its `type`, `const`, `enum`, `allOf`, `anyOf` or `oneOf` leave no JSON value that could match",
            "json_schema_unsatisfiable",
        )],
        Err(problem) => vec![error(
            path,
            format!("is not a valid JSON Schema: {problem}"),
            "json_schema_invalid",
        )],
    }
}

/// Violations of `schema` by an answer: none when it parses and conforms.
pub fn conformance_errors(schema: &Value, answer: &str) -> Vec<String> {
    let document: Value = match serde_json::from_str(answer.trim()) {
        Ok(document) => document,
        Err(parse) => return vec![format!("the answer is not JSON: {parse}")],
    };
    match jsonschema::validator_for(schema) {
        Ok(validator) => validator
            .iter_errors(&document)
            .map(|violation| {
                let at = violation.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                format!("{at}: {violation}")
            })
            .collect(),
        Err(problem) => vec![format!("the schema cannot be compiled: {problem}")],
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tessera_models::ToolCall;

    use super::*;

    fn message(role: Role, content: &str) -> ChatMessage {
        ChatMessage::new(role, content)
    }

    fn assistant_calling(id: &str, arguments: &str) -> ChatMessage {
        let mut message = message(Role::Assistant, "");
        message.tool_calls.push(ToolCall {
            id: id.into(),
            name: "lookup".into(),
            arguments: arguments.into(),
        });
        message
    }

    fn tool_result(id: Option<&str>) -> ChatMessage {
        let mut message = message(Role::Tool, "42");
        message.tool_call_id = id.map(Into::into);
        message
    }

    fn kinds(errors: &[FieldError]) -> Vec<(String, &str)> {
        errors
            .iter()
            .map(|e| {
                let loc = e.loc.iter().map(|s| match s {
                    LocSegment::Field(f) => f.clone(),
                    LocSegment::Index(i) => i.to_string(),
                });
                (loc.collect::<Vec<_>>().join("."), e.kind.as_str())
            })
            .collect()
    }

    #[test]
    fn a_tool_round_trip_is_valid() {
        let turn = [
            assistant_calling("c1", "{\"q\":1}"),
            tool_result(Some("c1")),
        ];
        assert!(check_messages(&[message(Role::User, "q")], &turn).is_empty());
        // The call may also be in the stored history.
        let history = [message(Role::User, "q"), assistant_calling("c1", "{}")];
        assert!(check_messages(&history, &[tool_result(Some("c1"))]).is_empty());
    }

    #[test]
    fn conversation_errors_are_located() {
        let turn = [
            message(Role::System, "x"),
            assistant_calling("c1", "not json"),
            tool_result(None),
            tool_result(Some("c9")),
            assistant_calling("c1", "{}"),
        ];
        assert_eq!(
            kinds(&check_messages(&[], &turn)),
            [
                ("body.messages.0.role".into(), "enum"),
                (
                    "body.messages.1.toolCalls.0.function.arguments".into(),
                    "json_invalid"
                ),
                ("body.messages.2.toolCallId".into(), "missing"),
                ("body.messages.3.toolCallId".into(), "value_error"),
                ("body.messages.4.toolCalls.0.id".into(), "value_error"),
                ("body.messages.4.role".into(), "value_error"),
            ]
        );
        assert_eq!(
            kinds(&check_messages(&[], &[])),
            [("body.messages".into(), "too_short")]
        );
    }

    #[test]
    fn schemas_are_checked_and_answers_validated() {
        let path = ["responseFormat".into()];
        assert!(check_schema(&json!({"type": "object"}), &path).is_empty());
        assert_eq!(
            kinds(&check_schema(&json!({"type": "nope"}), &path)),
            [("body.responseFormat".into(), "json_schema_invalid")]
        );
        assert_eq!(check_schema(&json!([1]), &path).len(), 1);
        assert_eq!(
            kinds(&check_schema(
                &json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
                &path
            )),
            [("body.responseFormat".into(), "json_schema_unsatisfiable")]
        );

        let schema = json!({
            "type": "object",
            "properties": {"age": {"type": "integer"}},
            "required": ["age"]
        });
        assert!(conformance_errors(&schema, " {\"age\": 3} ").is_empty());
        let wrong = conformance_errors(&schema, "{\"age\": \"old\"}");
        assert_eq!(wrong.len(), 1);
        assert!(wrong[0].starts_with("/age:"), "{wrong:?}");
        assert!(conformance_errors(&schema, "Sure! {\"age\": 3}")[0].contains("not JSON"));
    }
}
