//! The catalogue of problems: every kind of failure the service answers with, and for each
//! its HTTP status, its title and the code it carries when nothing more precise names it.
//! Decided here once, so a handler names the kind of its failure (or returns a
//! `DomainError`) and never a status code; the problem+json body, the OpenAI and Anthropic
//! dialects and the framework's own refusals all read their status from this table.

use actix_web::http::StatusCode;

/// A kind of problem. A problem's `code` may be more precise than its kind's (a 409
/// `in_use`, a 404 `model_not_found`); its status and title are always the kind's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    /// 400: the request cannot be read (a broken multipart body, an unknown cursor).
    BadRequest,
    /// 401: no credential, or one that is not valid.
    Unauthenticated,
    /// 402: the organization spent its monthly credits.
    PaymentRequired,
    /// 403: the caller may not do this (a missing scope, a plan that excludes the model).
    Forbidden,
    /// 404: no such record, or not one the caller may see.
    NotFound,
    /// 405: the path exists, the method does not.
    MethodNotAllowed,
    /// 406: `Accept` names nothing the operation answers with.
    NotAcceptable,
    /// 408: the request did not arrive in time.
    RequestTimeout,
    /// 409: the record's state refuses the change (in use, moved on, in flight).
    Conflict,
    /// 410: the record existed and is gone for good (a retired model).
    Gone,
    /// 413: the body (or an uploaded file) is larger than allowed.
    PayloadTooLarge,
    /// 415: the body is not of a type the operation reads.
    UnsupportedMediaType,
    /// 422: values of the request are invalid; `detail` lists each.
    ValidationFailed,
    /// 429: the caller's request budget is spent for now.
    RateLimited,
    /// 431: the request headers are larger than allowed.
    HeadersTooLarge,
    /// 500: the service failed; the detail never says how (the log does).
    Internal,
    /// 502: an upstream (the model provider) failed or answered out of contract.
    BadGateway,
    /// 503: a dependency is unavailable, or this instance takes no new work; retry.
    Unavailable,
    /// 504: an upstream did not answer in time.
    GatewayTimeout,
}

impl ProblemKind {
    /// Every kind, for tests and documentation that must cover the whole catalogue.
    pub const ALL: [ProblemKind; 19] = [
        ProblemKind::BadRequest,
        ProblemKind::Unauthenticated,
        ProblemKind::PaymentRequired,
        ProblemKind::Forbidden,
        ProblemKind::NotFound,
        ProblemKind::MethodNotAllowed,
        ProblemKind::NotAcceptable,
        ProblemKind::RequestTimeout,
        ProblemKind::Conflict,
        ProblemKind::Gone,
        ProblemKind::PayloadTooLarge,
        ProblemKind::UnsupportedMediaType,
        ProblemKind::ValidationFailed,
        ProblemKind::RateLimited,
        ProblemKind::HeadersTooLarge,
        ProblemKind::Internal,
        ProblemKind::BadGateway,
        ProblemKind::Unavailable,
        ProblemKind::GatewayTimeout,
    ];

    /// The table: status, title (the status's reason phrase, as clients expect in
    /// `title`) and default code.
    const fn entry(self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ProblemKind::BadRequest => (StatusCode::BAD_REQUEST, "Bad Request", "bad_request"),
            ProblemKind::Unauthenticated => {
                (StatusCode::UNAUTHORIZED, "Unauthorized", "unauthorized")
            }
            ProblemKind::PaymentRequired => (
                StatusCode::PAYMENT_REQUIRED,
                "Payment Required",
                "payment_required",
            ),
            ProblemKind::Forbidden => (StatusCode::FORBIDDEN, "Forbidden", "forbidden"),
            ProblemKind::NotFound => (StatusCode::NOT_FOUND, "Not Found", "not_found"),
            ProblemKind::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed",
                "method_not_allowed",
            ),
            ProblemKind::NotAcceptable => (
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable",
                "not_acceptable",
            ),
            ProblemKind::RequestTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                "Request Timeout",
                "request_timeout",
            ),
            ProblemKind::Conflict => (StatusCode::CONFLICT, "Conflict", "conflict"),
            ProblemKind::Gone => (StatusCode::GONE, "Gone", "gone"),
            ProblemKind::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large",
                "payload_too_large",
            ),
            ProblemKind::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Media Type",
                "unsupported_media_type",
            ),
            ProblemKind::ValidationFailed => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "Unprocessable Entity",
                "validation_failed",
            ),
            ProblemKind::RateLimited => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too Many Requests",
                "rate_limited",
            ),
            ProblemKind::HeadersTooLarge => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "Request Header Fields Too Large",
                "headers_too_large",
            ),
            ProblemKind::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error",
                "internal_error",
            ),
            ProblemKind::BadGateway => (StatusCode::BAD_GATEWAY, "Bad Gateway", "bad_gateway"),
            ProblemKind::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable",
                "service_unavailable",
            ),
            ProblemKind::GatewayTimeout => (
                StatusCode::GATEWAY_TIMEOUT,
                "Gateway Timeout",
                "gateway_timeout",
            ),
        }
    }

    pub const fn status(self) -> StatusCode {
        self.entry().0
    }

    /// The problem's `title`: a short summary of the status.
    pub const fn title(self) -> &'static str {
        self.entry().1
    }

    /// The code of a problem of this kind that names nothing more precise (the framework's
    /// own refusals: an unknown path, a wrong method).
    pub const fn code(self) -> &'static str {
        self.entry().2
    }

    /// The kind answering with `status`, for responses the framework produced without a
    /// problem (None for a status the catalogue does not hold).
    pub fn from_status(status: StatusCode) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.status() == status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_distinct_and_titles_are_their_reasons() {
        for kind in ProblemKind::ALL {
            assert_eq!(ProblemKind::from_status(kind.status()), Some(kind));
            assert_eq!(Some(kind.title()), kind.status().canonical_reason());
            assert!(kind.status().is_client_error() || kind.status().is_server_error());
        }
        assert_eq!(ProblemKind::from_status(StatusCode::IM_A_TEAPOT), None);
    }
}
