//! The one place errors become HTTP: every failure leaves as `application/problem+json`
//! (RFC 9457) with `type`, `title`, `status`, `detail` and a stable `code`; validation
//! failures keep the interface's `detail: [{loc, msg, type}]`. A problem is of a kind of
//! the catalogue ([`ProblemKind`]), which decides its status and title; each domain error
//! maps to one here, once.

use actix_web::{
    HttpResponse, ResponseError,
    http::{StatusCode, header},
};
use serde::Serialize;
use tessera_kernel::{DomainError, FieldError};
use tessera_wire::problem::{ProblemDetail as DetailParts, ProblemParts};
use utoipa::ToSchema;

pub use crate::chat_problem::chat_error;
pub use crate::problem_kind::ProblemKind;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// What went wrong, for a person: a sentence, or the list of invalid values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ProblemDetail {
    Text(String),
    Fields(Vec<FieldError>),
}

/// An HTTP error response: a problem of the catalogue, with its own code and detail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} {code}", .kind.status())]
pub struct ApiError {
    /// Decides the status and title.
    pub kind: ProblemKind,
    pub code: &'static str,
    pub detail: ProblemDetail,
    /// Extra members of the problem object (e.g. `replacementModelId`, `errors`).
    pub extensions: Vec<(String, serde_json::Value)>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
    /// A `Location` header: the record the failure left behind (a chat whose answer
    /// failed is stored with what it said).
    pub location: Option<String>,
}

/// The problem body (the schema every error response documents).
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// URI naming the problem type: `urn:tessera:problem:<code>`.
    #[serde(rename = "type")]
    #[schema(example = "urn:tessera:problem:not_found")]
    pub kind: String,
    /// Short summary of the status.
    #[schema(example = "Not Found")]
    pub title: String,
    pub status: u16,
    /// What happened.
    pub detail: String,
    /// Stable machine-readable error code.
    #[schema(example = "not_found")]
    pub code: String,
}

/// One invalid value of a request.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidationErrorItem {
    /// Path to the value: `body`, `query`, `path` or `header`, then field names (strings)
    /// and array indexes (integers).
    #[schema(schema_with = loc_schema, example = json!(["body", "messages", 0, "content"]))]
    pub loc: Vec<serde_json::Value>,
    pub msg: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// `loc`'s schema: an array of field names and array indexes.
fn loc_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Type};
    ArrayBuilder::new()
        .items(
            OneOfBuilder::new()
                .item(ObjectBuilder::new().schema_type(Type::String))
                .item(
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .minimum(Some(0)),
                ),
        )
        .build()
}

/// The 422 body: a problem whose `detail` lists every invalid value.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidationProblem {
    #[serde(rename = "type")]
    #[schema(example = "urn:tessera:problem:validation_failed")]
    pub kind: String,
    #[schema(example = "Unprocessable Entity")]
    pub title: String,
    #[schema(example = 422)]
    pub status: u16,
    pub detail: Vec<ValidationErrorItem>,
    #[schema(example = "validation_failed")]
    pub code: String,
}

impl ApiError {
    pub fn new(kind: ProblemKind, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            kind,
            code,
            detail: ProblemDetail::Text(detail.into()),
            extensions: Vec::new(),
            retry_after: None,
            location: None,
        }
    }

    /// 400: the request cannot be read as sent.
    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::BadRequest, code, detail)
    }

    /// 401: no credential, or one that is not valid.
    pub fn unauthenticated(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::Unauthenticated, code, detail)
    }

    /// 403: the caller may not do this.
    pub fn forbidden(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::Forbidden, code, detail)
    }

    /// 404: no such record (or not one the caller may see).
    pub fn not_found(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::NotFound, code, detail)
    }

    /// 409: the record's state refuses the request.
    pub fn conflict(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::Conflict, code, detail)
    }

    /// 413: the body (or an uploaded file) is too large.
    pub fn payload_too_large(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::PayloadTooLarge, code, detail)
    }

    /// 415: the body is not of a type the operation reads.
    pub fn unsupported_media_type(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::UnsupportedMediaType, code, detail)
    }

    /// 503: a dependency (or this instance) cannot serve now; clients retry.
    pub fn unavailable(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::Unavailable, code, detail)
    }

    /// 500 `internal_error`: the detail says what failed without its cause (the log has it).
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(ProblemKind::Internal, ProblemKind::Internal.code(), detail)
    }

    /// The status the problem answers with (its kind's).
    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    /// The problem as plain values, for a dialect's error shape to render it directly
    /// (`tessera_wire::openai::error::render`, `tessera_wire::anthropic::error::render`).
    pub fn parts(&self) -> ProblemParts<'_> {
        ProblemParts {
            status: self.status().as_u16(),
            code: self.code,
            detail: match &self.detail {
                ProblemDetail::Text(text) => DetailParts::Text(text),
                ProblemDetail::Fields(fields) => DetailParts::Fields(fields),
            },
            extensions: &self.extensions,
        }
    }

    /// Adds a member to the problem object.
    pub fn with(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
        self.extensions.push((name.to_owned(), value.into()));
        self
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// Names the record the failure left behind in a `Location` header.
    pub fn with_location(mut self, path: impl Into<String>) -> Self {
        self.location = Some(path.into());
        self
    }

    /// 422 `validation_failed`, listing every invalid value.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        Self {
            kind: ProblemKind::ValidationFailed,
            code: ProblemKind::ValidationFailed.code(),
            detail: ProblemDetail::Fields(errors),
            extensions: Vec::new(),
            retry_after: None,
            location: None,
        }
    }

    pub fn body(&self) -> serde_json::Value {
        problem_body(
            self.status(),
            self.kind.title(),
            self.code,
            &self.detail,
            &self.extensions,
        )
    }
}

/// The problem+json body of a status the framework answered with by itself (no route, a
/// wrong method); a status outside the catalogue is titled with its reason phrase.
pub fn status_problem(status: StatusCode, detail: String) -> serde_json::Value {
    let title = ProblemKind::from_status(status)
        .map(ProblemKind::title)
        .or(status.canonical_reason())
        .unwrap_or("Error");
    problem_body(
        status,
        title,
        code_for_status(status),
        &ProblemDetail::Text(detail),
        &[],
    )
}

/// The problem object: its members in the order clients have always seen them, then the
/// extensions (which never replace a standard member).
fn problem_body(
    status: StatusCode,
    title: &str,
    code: &str,
    detail: &ProblemDetail,
    extensions: &[(String, serde_json::Value)],
) -> serde_json::Value {
    let mut body = serde_json::json!({
        "type": format!("urn:tessera:problem:{code}"),
        "title": title,
        "status": status.as_u16(),
        "detail": detail,
        "code": code,
    });
    if let Some(members) = body.as_object_mut() {
        for (name, value) in extensions {
            members.entry(name.clone()).or_insert_with(|| value.clone());
        }
    }
    body
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status());
        response.insert_header((header::CONTENT_TYPE, PROBLEM_JSON));
        // Every 503 says when to retry (clients' retry logic keys on it); one second unless
        // the cause knows better.
        let retry_after = self
            .retry_after
            .or((self.kind == ProblemKind::Unavailable).then_some(1));
        if let Some(seconds) = retry_after {
            response.insert_header((header::RETRY_AFTER, seconds.to_string()));
        }
        if let Some(location) = &self.location {
            response.insert_header((header::LOCATION, location.as_str()));
        }
        response.body(self.body().to_string())
    }
}

impl From<DomainError> for ApiError {
    /// Each domain error's one problem: its kind, and the domain's own code where it has
    /// one. Unavailable and internal failures keep their message in the log, not the body.
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::NotFound { .. } => {
                ApiError::not_found(ProblemKind::NotFound.code(), error.to_string())
            }
            DomainError::Conflict { code, message } => ApiError::conflict(code, message),
            DomainError::Gone { code, message } => ApiError::new(ProblemKind::Gone, code, message),
            DomainError::Validation(errors) => ApiError::validation(errors),
            DomainError::Unauthenticated { code, message } => {
                ApiError::unauthenticated(code, message)
            }
            DomainError::Forbidden { code, message } => ApiError::forbidden(code, message),
            DomainError::Unavailable { message } => {
                tracing::warn!(%message, "dependency unavailable");
                ApiError::unavailable(
                    ProblemKind::Unavailable.code(),
                    "a dependency of the service is unavailable; retry later",
                )
            }
            DomainError::Internal { message } => {
                tracing::error!(%message, "internal error");
                ApiError::internal(
                    "an internal error occurred; quote the X-Request-Id header when reporting it",
                )
            }
        }
    }
}

/// The problem code for a status produced by the framework itself (no route, wrong method…):
/// its kind's code; a status outside the catalogue is `internal_error` or `error`.
pub fn code_for_status(status: StatusCode) -> &'static str {
    match ProblemKind::from_status(status) {
        Some(kind) => kind.code(),
        None if status.is_server_error() => ProblemKind::Internal.code(),
        None => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_kinds_map_to_statuses() {
        let cases = [
            (
                DomainError::not_found("organization", "org_x"),
                StatusCode::NOT_FOUND,
                "not_found",
            ),
            (
                DomainError::Conflict {
                    code: "in_use",
                    message: "used".into(),
                },
                StatusCode::CONFLICT,
                "in_use",
            ),
            (
                DomainError::invalid(["body".into()], "bad", "value_error"),
                StatusCode::UNPROCESSABLE_ENTITY,
                "validation_failed",
            ),
            (
                DomainError::Forbidden {
                    code: "insufficient_scope",
                    message: "no".into(),
                },
                StatusCode::FORBIDDEN,
                "insufficient_scope",
            ),
            (
                DomainError::Unavailable {
                    message: "db down".into(),
                },
                StatusCode::SERVICE_UNAVAILABLE,
                "service_unavailable",
            ),
            (
                DomainError::internal("boom"),
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
            ),
        ];
        for (error, status, code) in cases {
            let api = ApiError::from(error);
            assert_eq!((api.status(), api.code), (status, code));
        }
    }

    #[test]
    fn internal_messages_are_not_shown_to_clients() {
        let body = ApiError::from(DomainError::internal("password=hunter2 in query")).body();
        assert!(!body.to_string().contains("hunter2"));
    }

    #[test]
    fn validation_body_keeps_the_interface_shape() {
        let body = ApiError::from(DomainError::invalid(
            ["body".into(), "name".into()],
            "too long",
            "string_too_long",
        ))
        .body();
        assert_eq!(
            body,
            serde_json::json!({
                "type": "urn:tessera:problem:validation_failed",
                "title": "Unprocessable Entity",
                "status": 422,
                "detail": [{"loc": ["body", "name"], "msg": "too long", "type": "string_too_long"}],
                "code": "validation_failed",
            })
        );
    }
}
