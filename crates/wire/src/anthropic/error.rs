//! Anthropic's error shape, `{"type": "error", "error": {"type", "message"}}`, with
//! Anthropic's statuses: a validation problem is a 400 `invalid_request_error` naming every
//! offending parameter, spent credits a 402 `billing_error`, an unavailable provider or a
//! server that cannot answer now a 529 `overloaded_error` (which Anthropic's clients retry).
//! `render` takes a problem as plain values (a server's typed failure), `translate` reads a
//! problem+json body and its status (a response that carries nothing typed), so a server
//! can rewrite every problem it answers on the dialect's paths.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::problem::ProblemParts;

/// The body of every error on `/anthropic/v1`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnthropicError {
    /// Always `error`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub error: AnthropicErrorBody,
}

/// What went wrong, as Anthropic reports it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnthropicErrorBody {
    /// `invalid_request_error`, `authentication_error`, `billing_error`,
    /// `permission_error`, `not_found_error`, `request_too_large`, `rate_limit_error`,
    /// `api_error`, `timeout_error` or `overloaded_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What happened; a validation error names each parameter (`messages.0.content: …`).
    pub message: String,
}

impl AnthropicError {
    pub fn new(kind: &str, message: impl Into<String>) -> Self {
        Self {
            kind: "error",
            error: AnthropicErrorBody {
                kind: kind.to_owned(),
                message: message.into(),
            },
        }
    }
}

/// How a generation's failure reads in Anthropic's shape, for the `error` event of a
/// stream that already began. The server decides it.
pub type Failure = fn(&tessera_chats::ChatError) -> AnthropicError;

/// Anthropic's status and error type for a problem's status.
fn status_and_kind(status: u16) -> (u16, &'static str) {
    match status {
        400 | 409 | 410 | 415 | 422 | 431 => (400, "invalid_request_error"),
        401 => (401, "authentication_error"),
        402 => (402, "billing_error"),
        403 => (403, "permission_error"),
        404 => (404, "not_found_error"),
        413 => (413, "request_too_large"),
        429 => (429, "rate_limit_error"),
        503 => (529, "overloaded_error"),
        504 => (504, "timeout_error"),
        // A method the route does not serve (405) and any other client error keep their
        // status.
        400..=499 => (status, "invalid_request_error"),
        _ => (500, "api_error"),
    }
}

/// Anthropic's status and error for a problem the server holds typed (its message as
/// OpenAI's dialect words it: every field error with its parameter).
pub fn render(problem: &ProblemParts<'_>) -> (u16, AnthropicError) {
    let message = crate::openai::error::render(problem).1.error.message;
    let (status, kind) = status_and_kind(problem.status);
    (status, AnthropicError::new(kind, message))
}

/// Anthropic's status and error for a problem+json body (its message as OpenAI's dialect
/// words it: every field error with its parameter).
pub fn translate(status: u16, problem: &Value) -> (u16, AnthropicError) {
    let message = crate::openai::error::translate(status, problem)
        .1
        .error
        .message;
    let (status, kind) = status_and_kind(status);
    (status, AnthropicError::new(kind, message))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn problems_take_anthropics_statuses_and_types() {
        let (status, error) = translate(
            422,
            &json!({"code": "validation_failed", "detail": [
                {"loc": ["body", "messages", 0, "content"], "msg": "is required", "type": "missing"}
            ]}),
        );
        assert_eq!(status, 400);
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages.0.content: is required"}})
        );
        assert_eq!(translate(503, &json!({"detail": "busy"})).0, 529);
        assert_eq!(
            translate(402, &json!({"detail": "spent"})).1.error.kind,
            "billing_error"
        );
        assert_eq!(translate(502, &json!({})).1.error.kind, "api_error");
        assert_eq!(translate(405, &json!({})).0, 405);
    }
}
