//! The tools of Tessera's MCP server. Each is the twin of one REST operation: it takes
//! that operation's parameters as arguments (ids included), checks the operation's scope,
//! calls the same code, and returns the same JSON body; a refusal or failure is the same
//! problem (`status`, `code`, `detail`) as a tool error the calling model can read.

use std::str::FromStr;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};
use tessera_kernel::{DomainError, FieldError, LocSegment, Scope};
use tessera_wire::v1::chats::CreateCompletion;
use validator::Validate;

use super::invocation::Invocation;
use crate::{
    caller::Caller,
    completion::{answer, start_completion},
    problem::ApiError,
    routes::{datasets, files, system_prompts, usage},
};

/// What a tool does: the REST operation it is the twin of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    SearchDataset,
    ListDatasets,
    ListFiles,
    ComposeSystemPrompt,
    AskModel,
    ReadUsage,
}

/// A tool as clients see it, and the scope its REST twin needs.
#[derive(Debug)]
pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub scope: &'static str,
    pub operation: Operation,
    /// The REST operation (method, path template) whose parameters, scope and answer this
    /// tool shares.
    pub twin: (&'static str, &'static str),
    /// Whether calling it changes nothing (every tool but `ask_model`, which stores a chat).
    pub read_only: bool,
    input_schema: fn() -> Value,
}

pub const TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "search_dataset",
        title: "Search a dataset",
        description: "The passages of a dataset's files that best answer a query (hybrid: \
                      meaning and words, fused by rank), best first, with file, page and \
                      section.",
        scope: "datasets:read",
        operation: Operation::SearchDataset,
        twin: ("POST", "/v1/datasets/{dataset_id}/search"),
        read_only: true,
        input_schema: search_dataset_schema,
    },
    ToolDef {
        name: "list_datasets",
        title: "List datasets",
        description: "The organization's datasets, newest first, one page at a time.",
        scope: "datasets:read",
        operation: Operation::ListDatasets,
        twin: ("GET", "/v1/datasets"),
        read_only: true,
        input_schema: page_schema,
    },
    ToolDef {
        name: "list_files",
        title: "List files",
        description: "The organization's files with their processing status, newest first, \
                      one page at a time.",
        scope: "files:read",
        operation: Operation::ListFiles,
        twin: ("GET", "/v1/files"),
        read_only: true,
        input_schema: list_files_schema,
    },
    ToolDef {
        name: "compose_system_prompt",
        title: "Compose a system prompt",
        description: "A system prompt rendered from its particles as a model receives it, \
                      with its token count, now or as of a past moment.",
        scope: "system-prompts:read",
        operation: Operation::ComposeSystemPrompt,
        twin: ("GET", "/v1/system-prompts/{system_prompt_id}/compose"),
        read_only: true,
        input_schema: compose_schema,
    },
    ToolDef {
        name: "ask_model",
        title: "Ask a model",
        description: "Asks one of the organization's models (a user model id or a catalog \
                      model id) and returns its answer; the exchange is stored as a chat \
                      (continue it with `chatId`) and its usage recorded.",
        scope: "chats:invoke",
        operation: Operation::AskModel,
        twin: ("POST", "/v1/chats"),
        read_only: false,
        input_schema: ask_model_schema,
    },
    ToolDef {
        name: "read_usage",
        title: "Read usage",
        description: "Tokens and credits of the organization's completions over a range, \
                      optionally grouped by period, model or user (per-user figures of \
                      other principals need `usage:admin`).",
        scope: "usage:read",
        operation: Operation::ReadUsage,
        twin: ("GET", "/v1/usage"),
        read_only: true,
        input_schema: read_usage_schema,
    },
];

impl ToolDef {
    /// The tool as `tools/list` shows it.
    pub fn describe(&self) -> Tool {
        let schema = match (self.input_schema)() {
            Value::Object(schema) => schema,
            _ => JsonObject::new(),
        };
        let (method, path) = self.twin;
        let description = format!(
            "{} Twin of {method} {path}; needs `{}`.",
            self.description, self.scope
        );
        Tool::new(self.name, description, schema)
            .with_title(self.title)
            .with_annotations(
                ToolAnnotations::with_title(self.title)
                    .read_only(self.read_only)
                    .destructive(false)
                    .open_world(false),
            )
    }

    /// The argument names the input schema declares.
    fn declares(&self, name: &str) -> bool {
        (self.input_schema)()["properties"].get(name).is_some()
    }
}

pub fn find(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|tool| tool.name == name)
}

/// Whether the caller holds `scope` (or one implying it).
pub fn allowed(caller: &Caller, scope: &str) -> bool {
    Scope::from_str(scope).is_ok_and(|needed| caller.holds(&needed))
}

/// Runs a tool for the invocation's caller.
pub async fn run(
    tool: &ToolDef,
    invocation: &Invocation,
    mut arguments: JsonObject,
) -> Result<Value, ApiError> {
    let Invocation { state, caller } = invocation;
    if !allowed(caller, tool.scope) {
        return Err(ApiError::forbidden(
            "insufficient_scope",
            format!("the tool `{}` needs the `{}` scope", tool.name, tool.scope),
        ));
    }
    refuse_undeclared(tool, &arguments)?;
    match tool.operation {
        Operation::SearchDataset => {
            let dataset = take_text(&mut arguments, "datasetId")?;
            let body = parse(arguments)?;
            output(datasets::search(state, caller, &dataset, body).await?)
        }
        Operation::ListDatasets => output(datasets::list(state, caller, parse(arguments)?).await?),
        Operation::ListFiles => output(files::list(state, caller, parse(arguments)?).await?),
        Operation::ComposeSystemPrompt => {
            let prompt = take_text(&mut arguments, "systemPromptId")?;
            let query = parse(arguments)?;
            output(system_prompts::composed(state, caller, &prompt, query).await?)
        }
        Operation::AskModel => {
            let prompt = take_text(&mut arguments, "prompt")?;
            let mut body = json!({"messages": [{"role": "user", "content": prompt}]});
            if let Some(model) = arguments.remove("model") {
                body["modelId"] = model;
            }
            for (name, value) in arguments {
                body[name] = value;
            }
            let body: CreateCompletion = parse_value(body)?;
            let (request, _) = body.into_request().map_err(located)?;
            let running = start_completion(state, caller, request).await?;
            output(answer(running).await?)
        }
        Operation::ReadUsage => {
            let group_by = match arguments.remove("groupBy") {
                None | Some(Value::Null) => Vec::new(),
                Some(value) => serde_json::from_value::<Vec<String>>(value)
                    .map_err(|_| invalid("groupBy", "must be an array of strings", "type_error"))?,
            };
            let query = parse(arguments)?;
            output(usage::report(state, caller, query, group_by).await?)
        }
    }
}

/// Arguments the tool's schema does not declare are refused, as unknown body fields are.
fn refuse_undeclared(tool: &ToolDef, arguments: &JsonObject) -> Result<(), ApiError> {
    let unknown: Vec<FieldError> = arguments
        .keys()
        .filter(|name| !tool.declares(name))
        .map(|name| {
            FieldError::new(
                ["arguments".into(), name.as_str().into()],
                format!("`{}` takes no argument `{name}`", tool.name),
                "extra_forbidden",
            )
        })
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(unknown))
    }
}

fn invalid(name: &str, msg: &str, kind: &str) -> ApiError {
    ApiError::validation(vec![FieldError::new(
        ["arguments".into(), name.into()],
        msg,
        kind,
    )])
}

/// Removes a required text argument (an id, the prompt).
fn take_text(arguments: &mut JsonObject, name: &str) -> Result<String, ApiError> {
    match arguments.remove(name) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text),
        Some(Value::String(_)) => Err(invalid(name, "must not be empty", "string_too_short")),
        Some(_) => Err(invalid(name, "must be a string", "type_error")),
        None => Err(invalid(name, "field required", "missing")),
    }
}

/// The rest of the arguments as the REST twin's parameters, validated the same way.
fn parse<T: DeserializeOwned + Validate>(arguments: JsonObject) -> Result<T, ApiError> {
    parse_value(Value::Object(arguments))
}

fn parse_value<T: DeserializeOwned + Validate>(value: Value) -> Result<T, ApiError> {
    tessera_wire::parse::json(value.to_string().as_bytes()).map_err(|e| located(e).into())
}

/// Validation failures name `arguments` where the REST twin names its body or query.
fn located(mut error: DomainError) -> DomainError {
    if let DomainError::Validation(fields) = &mut error {
        for field in fields {
            if let Some(root @ LocSegment::Field(_)) = field.loc.first_mut() {
                *root = "arguments".into();
            }
        }
    }
    error
}

/// The REST twin's JSON body. Through its text, as the REST answer is: `to_value` would
/// widen `f32` scores to `f64` digits the REST answer does not have.
fn output(body: impl Serialize) -> Result<Value, ApiError> {
    serde_json::to_string(&body)
        .and_then(|text| serde_json::from_str(&text))
        .map_err(|error| ApiError::internal(format!("the answer cannot be encoded: {error}")))
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// Adds `limit` and `cursor`, as every list operation takes them.
fn paged(mut properties: Value) -> Value {
    properties["limit"] = json!({"type": "integer", "minimum": 1, "maximum": 100, "description": "Items per page, default 20."});
    properties["cursor"] =
        json!({"type": "string", "description": "`nextCursor` of the previous page."});
    properties
}

fn search_dataset_schema() -> Value {
    object(
        json!({
            "datasetId": {"type": "string", "description": "The dataset's id (`ds_…`)."},
            "query": {"type": "string", "minLength": 1, "maxLength": 2000},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Passages to return, default 10."},
            "mode": {"type": "string", "enum": ["hybrid", "dense", "sparse"], "description": "`hybrid` (default), `dense` (meaning only) or `sparse` (words only)."},
            "version": {"type": "integer", "minimum": 1, "description": "Search this snapshot's files instead of the current ones."},
            "fileIds": {"type": "array", "items": {"type": "string"}, "description": "Only these files."},
            "rerank": {"type": "boolean", "description": "Rerank the best candidates with the server's cross-encoder; default on when the server has one."},
            "lateInteraction": {"type": "boolean", "description": "Reorder the best candidates by late interaction (token-level MaxSim); default: the dataset's setting."}
        }),
        &["datasetId", "query"],
    )
}

fn page_schema() -> Value {
    object(paged(json!({})), &[])
}

fn list_files_schema() -> Value {
    object(
        paged(json!({
            "status": {"type": "string", "enum": ["processing", "ready", "failed"]}
        })),
        &[],
    )
}

fn compose_schema() -> Value {
    object(
        json!({
            "systemPromptId": {"type": "string", "description": "The system prompt's id."},
            "at": {"type": "string", "format": "date-time", "description": "Compose as of this moment (RFC 3339, not in the future); default now."}
        }),
        &["systemPromptId"],
    )
}

fn ask_model_schema() -> Value {
    object(
        json!({
            "model": {"type": "string", "description": "A user model id (`mdl_…`) or a catalog model id; may be left out with `chatId`."},
            "prompt": {"type": "string", "minLength": 1, "description": "The question or instruction."},
            "chatId": {"type": "string", "description": "Continue this chat (the `id` of an earlier answer)."},
            "maxTokens": {"type": "integer", "minimum": 1, "description": "At most this many tokens in the answer."},
            "temperature": {"type": "number", "minimum": 0, "maximum": 2}
        }),
        &["prompt"],
    )
}

fn read_usage_schema() -> Value {
    object(
        paged(json!({
            "from": {"type": "string", "description": "Start (inclusive): an RFC 3339 date-time or a date; default the start of the month."},
            "to": {"type": "string", "description": "End (exclusive), same forms; default now."},
            "modelId": {"type": "string"},
            "userId": {"type": "string", "description": "Another principal's figures need `usage:admin`."},
            "chatId": {"type": "string"},
            "groupBy": {"type": "array", "items": {"type": "string", "enum": ["day", "hour", "month", "model", "user"]}},
            "timeZone": {"type": "string", "description": "IANA time zone for periods, default UTC."}
        })),
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_and_a_real_scope() {
        for tool in TOOLS {
            let schema = (tool.input_schema)();
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert!(schema["properties"].is_object(), "{}", tool.name);
            for required in schema["required"].as_array().unwrap() {
                assert!(tool.declares(required.as_str().unwrap()), "{}", tool.name);
            }
            assert!(Scope::from_str(tool.scope).is_ok(), "{}", tool.name);
        }
    }

    #[test]
    fn validation_failures_point_at_the_arguments() {
        let error = located(DomainError::Validation(vec![FieldError::new(
            ["query".into(), "limit".into()],
            "x",
            "y",
        )]));
        let DomainError::Validation(fields) = error else {
            panic!()
        };
        assert_eq!(fields[0].loc[0], LocSegment::from("arguments"));
    }
}
