//! Every entry of the problem catalogue rendered in all three dialects: problem+json (the
//! status, title and code the catalogue decides), OpenAI's and Anthropic's error shapes
//! (their statuses, types and codes), and the typed rendering equal to reading the
//! problem+json body back, so responses that carry no typed problem answer the same.

use actix_web::{ResponseError, body::MessageBody, http::header};
use serde_json::Value;
use tessera_http_actix::problem::{ApiError, PROBLEM_JSON, ProblemKind};
use tessera_kernel::FieldError;
use tessera_wire::{anthropic, openai};

/// What each dialect answers for a problem of a kind (with the kind's own code): OpenAI's
/// status, type and code, then Anthropic's status and type. A match, not a table, so a new
/// kind does not compile until its answers are decided here.
fn expected(kind: ProblemKind) -> ((u16, &'static str, &'static str), (u16, &'static str)) {
    const INVALID: &str = "invalid_request_error";
    match kind {
        ProblemKind::BadRequest => ((400, INVALID, "bad_request"), (400, INVALID)),
        ProblemKind::Unauthenticated => (
            (401, "authentication_error", "invalid_api_key"),
            (401, "authentication_error"),
        ),
        ProblemKind::PaymentRequired => (
            (429, "insufficient_quota", "insufficient_quota"),
            (402, "billing_error"),
        ),
        ProblemKind::Forbidden => (
            (403, "permission_error", "forbidden"),
            (403, "permission_error"),
        ),
        ProblemKind::NotFound => (
            (404, "not_found_error", "not_found"),
            (404, "not_found_error"),
        ),
        ProblemKind::MethodNotAllowed => {
            ((405, "server_error", "method_not_allowed"), (405, INVALID))
        }
        ProblemKind::NotAcceptable => ((406, "server_error", "not_acceptable"), (406, INVALID)),
        ProblemKind::RequestTimeout => ((408, "server_error", "request_timeout"), (408, INVALID)),
        ProblemKind::Conflict => ((409, INVALID, "conflict"), (400, INVALID)),
        ProblemKind::Gone => ((410, INVALID, "gone"), (400, INVALID)),
        ProblemKind::PayloadTooLarge => (
            (400, INVALID, "payload_too_large"),
            (413, "request_too_large"),
        ),
        ProblemKind::UnsupportedMediaType => {
            ((400, INVALID, "unsupported_media_type"), (400, INVALID))
        }
        ProblemKind::ValidationFailed => ((400, INVALID, "invalid_value"), (400, INVALID)),
        ProblemKind::RateLimited => (
            (429, "rate_limit_error", "rate_limit_exceeded"),
            (429, "rate_limit_error"),
        ),
        ProblemKind::HeadersTooLarge => ((400, INVALID, "headers_too_large"), (400, INVALID)),
        ProblemKind::Internal => ((500, "server_error", "internal_error"), (500, "api_error")),
        ProblemKind::BadGateway => ((502, "server_error", "bad_gateway"), (500, "api_error")),
        ProblemKind::Unavailable => (
            (503, "server_error", "service_unavailable"),
            (529, "overloaded_error"),
        ),
        ProblemKind::GatewayTimeout => (
            (504, "server_error", "gateway_timeout"),
            (504, "timeout_error"),
        ),
    }
}

/// A problem of the kind as a handler makes it: a sentence naming its parameter, or (for
/// validation) the invalid values.
fn problem_of(kind: ProblemKind) -> ApiError {
    match kind {
        ProblemKind::ValidationFailed => ApiError::validation(vec![
            FieldError::new(
                [
                    "body".into(),
                    "messages".into(),
                    0.into(),
                    "maxTokens".into(),
                ],
                "too large",
                "less_than_equal",
            ),
            FieldError::new(["query".into(), "limit".into()], "too small", "greater"),
        ]),
        kind => ApiError::new(kind, kind.code(), "what went wrong").with("param", "model"),
    }
}

#[test]
fn every_kind_renders_in_every_dialect() {
    for kind in ProblemKind::ALL {
        let problem = problem_of(kind);
        let ((openai_status, openai_type, openai_code), (anthropic_status, anthropic_type)) =
            expected(kind);

        // problem+json
        let response = problem.error_response();
        assert_eq!(response.status(), kind.status(), "{kind:?}");
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE).unwrap(),
            PROBLEM_JSON
        );
        let bytes = response.into_body().try_into_bytes().unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["status"], kind.status().as_u16(), "{kind:?}");
        assert_eq!(body["title"], kind.title(), "{kind:?}");
        assert_eq!(body["code"], kind.code(), "{kind:?}");
        assert_eq!(
            body["type"],
            format!("urn:tessera:problem:{}", kind.code()),
            "{kind:?}"
        );
        assert_eq!(body, problem.body());

        // OpenAI's shape, typed and read back from the body alike.
        let (status, error) = openai::error::render(&problem.parts());
        assert_eq!(
            (
                status,
                error.error.kind.as_str(),
                error.error.code.as_deref()
            ),
            (openai_status, openai_type, Some(openai_code)),
            "{kind:?}"
        );
        let (read_status, read) = openai::error::translate(kind.status().as_u16(), &body);
        assert_eq!(read_status, status, "{kind:?}");
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            serde_json::to_string(&error).unwrap(),
            "{kind:?}"
        );

        // Anthropic's shape, typed and read back alike.
        let (status, error) = anthropic::error::render(&problem.parts());
        assert_eq!(
            (status, error.error.kind.as_str()),
            (anthropic_status, anthropic_type),
            "{kind:?}"
        );
        assert_eq!(error.kind, "error");
        let (read_status, read) = anthropic::error::translate(kind.status().as_u16(), &body);
        assert_eq!(read_status, status, "{kind:?}");
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            serde_json::to_string(&error).unwrap(),
            "{kind:?}"
        );
    }
}

#[test]
fn dialects_name_the_parameter_as_clients_sent_it() {
    let (_, error) = openai::error::render(&problem_of(ProblemKind::ValidationFailed).parts());
    assert_eq!(error.error.param.as_deref(), Some("messages.0.max_tokens"));
    assert_eq!(
        error.error.message,
        "messages.0.max_tokens: too large; query.limit: too small"
    );
    let (_, error) = openai::error::render(&problem_of(ProblemKind::NotFound).parts());
    assert_eq!(
        (error.error.param.as_deref(), error.error.message.as_str()),
        (Some("model"), "what went wrong")
    );
}

#[test]
fn unavailable_problems_say_when_to_retry() {
    let response = ApiError::unavailable("service_unavailable", "busy").error_response();
    assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "1");
}
