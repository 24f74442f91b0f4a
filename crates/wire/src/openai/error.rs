//! OpenAI's error shape, `{"error": {"message", "type", "param", "code"}}`, with OpenAI's
//! status codes: a validation problem is a 400 naming the offending parameter, a spent
//! credit budget a 429 `insufficient_quota`. `render` takes a problem as plain values (a
//! server's typed failure); `translate` reads the same from a problem+json body (RFC 9457,
//! as Tessera's `/v1` answers) and its status, for a response that carries nothing typed.
//! Either way a server can rewrite every problem it answers on the dialect's paths and
//! never leak its own error format.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::problem::{ProblemDetail, ProblemParts, loc_segments};

/// The body of every error on `/openai/v1`.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiError {
    pub error: OpenAiErrorBody,
}

/// What went wrong, as OpenAI reports it.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAiErrorBody {
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `permission_error`,
    /// `not_found_error`, `rate_limit_error`, `insufficient_quota` or `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The request parameter at fault (dotted path), when one is.
    pub param: Option<String>,
    /// A stable code: Tessera's problem code, or OpenAI's where it has one
    /// (`invalid_api_key`, `model_not_found`, `insufficient_quota`).
    pub code: Option<String>,
}

/// How a generation's failure reads in OpenAI's shape, for the error event of a stream that
/// already began. The server decides it (it owns what each domain error means).
pub type Failure = fn(&tessera_chats::ChatError) -> OpenAiError;

/// OpenAI's status and error for a problem the server holds typed.
pub fn render(problem: &ProblemParts<'_>) -> (u16, OpenAiError) {
    let (message, param) = match problem.detail {
        ProblemDetail::Fields(fields) => fields_message(
            fields
                .iter()
                .map(|field| (param_of_segments(loc_segments(field)), field.msg.as_str())),
        ),
        // A problem may name its parameter itself (`ApiError::with("param", …)`).
        ProblemDetail::Text(text) => (text.to_owned(), problem.param().map(str::to_owned)),
    };
    answer(problem.status, problem.code.to_owned(), message, param)
}

/// OpenAI's status and error for a problem+json body and its status (a response that
/// carries no typed problem); reads what `render` is given.
pub fn translate(status: u16, problem: &Value) -> (u16, OpenAiError) {
    let code = problem["code"].as_str().unwrap_or("error").to_owned();
    let (message, param) = match &problem["detail"] {
        Value::Array(fields) => fields_message(fields.iter().map(|field| {
            (
                param_of(&field["loc"]),
                field["msg"].as_str().unwrap_or("invalid"),
            )
        })),
        Value::String(text) => (text.clone(), problem["param"].as_str().map(str::to_owned)),
        _ => (
            http::StatusCode::from_u16(status)
                .ok()
                .and_then(|status| status.canonical_reason())
                .unwrap_or("error")
                .to_owned(),
            None,
        ),
    };
    answer(status, code, message, param)
}

/// A validation problem's message (every invalid value with its parameter) and its first
/// parameter.
fn fields_message<'a>(fields: impl Iterator<Item = (String, &'a str)>) -> (String, Option<String>) {
    let mut first_param = None;
    let message = fields
        .map(|(param, msg)| {
            let line = if param.is_empty() {
                msg.to_owned()
            } else {
                format!("{param}: {msg}")
            };
            if first_param.is_none() {
                first_param = Some(param);
            }
            line
        })
        .collect::<Vec<_>>()
        .join("; ");
    (message, first_param.filter(|p| !p.is_empty()))
}

/// OpenAI's status, type and code for a problem's status and code.
fn answer(status: u16, code: String, message: String, param: Option<String>) -> (u16, OpenAiError) {
    let (status, kind, code) = match status {
        422 | 400 | 413 | 415 | 431 => (
            400,
            "invalid_request_error",
            if code == "validation_failed" {
                "invalid_value".to_owned()
            } else {
                code
            },
        ),
        401 => (status, "authentication_error", "invalid_api_key".to_owned()),
        402 => (429, "insufficient_quota", "insufficient_quota".to_owned()),
        403 => (status, "permission_error", code),
        404 => (status, "not_found_error", code),
        409 | 410 => (status, "invalid_request_error", code),
        429 => (status, "rate_limit_error", "rate_limit_exceeded".to_owned()),
        _ => (status, "server_error", code),
    };
    (
        status,
        OpenAiError {
            error: OpenAiErrorBody {
                message,
                kind: kind.to_owned(),
                param,
                code: Some(code),
            },
        },
    )
}

/// A problem's `loc` as OpenAI (and Anthropic) name parameters: `messages.0.content`, in
/// snake_case (the `body` prefix dropped; query and header locations keep theirs).
fn param_of(loc: &Value) -> String {
    let segments: Vec<String> = loc
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| match item {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    param_of_segments(segments)
}

/// A location's segments as the dialects name the parameter.
fn param_of_segments(segments: Vec<String>) -> String {
    let body = segments.first().is_some_and(|first| first == "body");
    if !body {
        return segments.join(".");
    }
    // The dialects spell body members in snake_case; request validation names them in
    // `/v1`'s camelCase (`maxTokens`).
    segments[1..]
        .iter()
        .map(|segment| crate::chat::snake_case(segment))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn validation_problems_become_400_naming_the_parameter() {
        let (status, error) = translate(
            422,
            &json!({"code": "validation_failed", "detail": [
                {"loc": ["body", "messages", 0, "content"], "msg": "too long", "type": "x"},
                {"loc": ["body", "n"], "msg": "only 1", "type": "x"}
            ]}),
        );
        assert_eq!(status, 400);
        assert_eq!(error.error.param.as_deref(), Some("messages.0.content"));
        assert_eq!(
            error.error.message,
            "messages.0.content: too long; n: only 1"
        );
        assert_eq!(error.error.kind, "invalid_request_error");
    }

    #[test]
    fn a_problem_naming_its_parameter_keeps_it() {
        let problem = json!({"code": "not_found", "detail": "No store.", "param": "tools"});
        let (status, error) = translate(404, &problem);
        assert_eq!(status, 404);
        assert_eq!(error.error.param.as_deref(), Some("tools"));
        let (_, error) = translate(404, &json!({"code": "not_found", "detail": "No store."}));
        assert_eq!(error.error.param, None);
    }

    #[test]
    fn statuses_take_openai_types() {
        let problem = json!({"code": "x", "detail": "no"});
        let cases = [
            (401, 401, "authentication_error", "invalid_api_key"),
            (402, 429, "insufficient_quota", "insufficient_quota"),
            (403, 403, "permission_error", "x"),
            (404, 404, "not_found_error", "x"),
            (429, 429, "rate_limit_error", "rate_limit_exceeded"),
            (503, 503, "server_error", "x"),
        ];
        for (from, to, kind, code) in cases {
            let (status, error) = translate(from, &problem);
            assert_eq!(status, to);
            assert_eq!(error.error.kind, kind);
            assert_eq!(error.error.code.as_deref(), Some(code));
            assert_eq!(error.error.message, "no");
        }
    }
}
