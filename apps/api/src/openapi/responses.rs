//! The answers operations share: unauthenticated, forbidden, not found, too large,
//! unsupported media type, validation failed, rate limited and unavailable, declared once in
//! `components.responses` and referenced where they apply (the OpenAI and Anthropic dialects'
//! in their own error shapes). Each is a kind of the problem catalogue, and its status is the
//! one the server answers with: the catalogue's, or the dialect's translation of it (so
//! Anthropic's unavailable is 529 because its renderer says so, not because this file does).

use crate::problem::{ApiError, PROBLEM_JSON, ProblemKind};

/// The error shape an operation answers in.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Problem,
    OpenAi,
    Anthropic,
}

/// The status a problem of `kind` answers with in `shape`, as the server renders it.
fn status_in(kind: ProblemKind, shape: Shape) -> String {
    let problem = ApiError::new(kind, kind.code(), String::new());
    let status = match shape {
        Shape::Problem => kind.status().as_u16(),
        Shape::OpenAi => tessera_wire::openai::error::render(&problem.parts()).0,
        Shape::Anthropic => tessera_wire::anthropic::error::render(&problem.parts()).0,
    };
    status.to_string()
}

/// The answers every operation can give besides its own, as shared `components.responses`
/// referenced from each operation they apply to, so that the document states every status
/// the server can answer (generated clients and fuzzers trust it):
/// - with a token: 401 (missing, expired or revoked), 403 (scope), 429 (rate limit), 503
///   (the database cannot answer);
/// - with a body: 413 (too large), 415 (not JSON or form data), 422;
/// - with parameters: 422; with path parameters: 404 (no such record in the organization).
///
/// Path parameters are non-empty strings.
pub fn apply_shared_responses(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema, path::ParameterIn};

    let components = document.components.get_or_insert_with(Default::default);
    for (name, response) in shared_responses() {
        components
            .responses
            .entry(name.to_owned())
            .or_insert(response.into());
    }
    for (path, item) in document.paths.paths.iter_mut() {
        // The dialects declare their own answers, in their error shapes.
        let shape = if path.starts_with(tessera_wire::openai::PREFIX) {
            Shape::OpenAi
        } else if path.starts_with(tessera_wire::anthropic::PREFIX) {
            Shape::Anthropic
        } else {
            Shape::Problem
        };
        let own_dialect = !matches!(shape, Shape::Problem);
        let operations = [
            item.get.as_mut(),
            item.put.as_mut(),
            item.post.as_mut(),
            item.delete.as_mut(),
            item.patch.as_mut(),
        ];
        for operation in operations.into_iter().flatten() {
            let authenticated = !operation
                .security
                .as_ref()
                .is_some_and(|requirements| requirements.is_empty());
            // An empty path segment names no record (and `//` would name another route).
            for parameter in operation.parameters.iter_mut().flatten() {
                if let (ParameterIn::Path, Some(RefOr::T(Schema::Object(schema)))) =
                    (&parameter.parameter_in, parameter.schema.as_mut())
                {
                    schema.min_length.get_or_insert(1);
                }
            }
            let parameters = operation.parameters.as_deref().unwrap_or_default();
            let has_path = parameters
                .iter()
                .any(|p| matches!(p.parameter_in, ParameterIn::Path));
            let has_parameters = !parameters.is_empty();
            let has_body = operation.request_body.is_some();
            let mut shared = Vec::new();
            if authenticated {
                // The same four answers in every shape; the rest of a dialect's are its own.
                let names = match shape {
                    Shape::OpenAi => [
                        "OpenAiUnauthorized",
                        "OpenAiForbidden",
                        "OpenAiTooManyRequests",
                        "OpenAiServiceUnavailable",
                    ],
                    Shape::Anthropic => [
                        "AnthropicUnauthorized",
                        "AnthropicForbidden",
                        "AnthropicTooManyRequests",
                        "AnthropicOverloaded",
                    ],
                    Shape::Problem => [
                        "Unauthorized",
                        "Forbidden",
                        "TooManyRequests",
                        "ServiceUnavailable",
                    ],
                };
                let kinds = [
                    ProblemKind::Unauthenticated,
                    ProblemKind::Forbidden,
                    ProblemKind::RateLimited,
                    ProblemKind::Unavailable,
                ];
                shared.extend(kinds.into_iter().zip(names));
            }
            if has_body && !own_dialect {
                shared.extend([
                    (ProblemKind::PayloadTooLarge, "PayloadTooLarge"),
                    (ProblemKind::UnsupportedMediaType, "UnsupportedMediaType"),
                    (ProblemKind::ValidationFailed, "ValidationFailed"),
                ]);
            }
            if has_parameters && !own_dialect {
                shared.push((ProblemKind::ValidationFailed, "ValidationFailed"));
            }
            if has_path && !own_dialect {
                shared.push((ProblemKind::NotFound, "NotFound"));
            }
            for (kind, name) in shared {
                operation
                    .responses
                    .responses
                    .entry(status_in(kind, shape))
                    .or_insert_with(|| utoipa::openapi::Ref::from_response_name(name).into());
            }
        }
    }
}

fn shared_responses() -> Vec<(&'static str, utoipa::openapi::Response)> {
    use utoipa::openapi::{
        ContentBuilder, Ref, ResponseBuilder, header::HeaderBuilder, schema::Type,
    };

    let problem = |description: &str, schema: &str| {
        ResponseBuilder::new().description(description).content(
            PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(schema)))
                .build(),
        )
    };
    let openai = |description: &str| {
        ResponseBuilder::new().description(description).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("OpenAiError")))
                .build(),
        )
    };
    let anthropic = |description: &str| {
        ResponseBuilder::new().description(description).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("AnthropicError")))
                .build(),
        )
    };
    let retry_after = || {
        HeaderBuilder::new()
            .schema(utoipa::openapi::ObjectBuilder::new().schema_type(Type::Integer))
            .description(Some("Seconds to wait before retrying"))
            .build()
    };
    vec![
        (
            "OpenAiUnauthorized",
            openai("Missing, invalid, expired or revoked API key or token").build(),
        ),
        (
            "OpenAiForbidden",
            openai("The credential lacks the operation's scope (its `security` section)").build(),
        ),
        (
            "OpenAiTooManyRequests",
            openai("Over the organization's or the principal's rate limit")
                .header("Retry-After", retry_after())
                .build(),
        ),
        (
            "OpenAiServiceUnavailable",
            openai("The database cannot answer now; retry after the given time")
                .header("Retry-After", retry_after())
                .build(),
        ),
        (
            "AnthropicUnauthorized",
            anthropic("Missing, invalid, expired or revoked API key or token (`authentication_error`)")
                .build(),
        ),
        (
            "AnthropicForbidden",
            anthropic("The credential lacks the operation's scope (`permission_error`)").build(),
        ),
        (
            "AnthropicTooManyRequests",
            anthropic("Over the organization's or the principal's rate limit (`rate_limit_error`)")
                .header("Retry-After", retry_after())
                .build(),
        ),
        (
            "AnthropicOverloaded",
            anthropic("The database cannot answer now (`overloaded_error`); retry after the given time")
                .header("Retry-After", retry_after())
                .build(),
        ),
        (
            "Unauthorized",
            problem(
                "No valid access token: missing, malformed, expired, revoked or from an unknown issuer",
                "Problem",
            )
            .header(
                "WWW-Authenticate",
                HeaderBuilder::new()
                    .schema(utoipa::openapi::ObjectBuilder::new().schema_type(Type::String))
                    .build(),
            )
            .build(),
        ),
        (
            "Forbidden",
            problem(
                "The token lacks the operation's scope, the plan does not include the model, or the request arrived over plain HTTP",
                "Problem",
            )
            .build(),
        ),
        (
            "NotFound",
            problem(
                "No such record in the caller's organization (another organization's records are not revealed)",
                "Problem",
            )
            .build(),
        ),
        (
            "PayloadTooLarge",
            problem("The request body is larger than the operation accepts", "Problem").build(),
        ),
        (
            "UnsupportedMediaType",
            problem("The request body's Content-Type is not one the operation accepts", "Problem")
                .build(),
        ),
        (
            "ValidationFailed",
            problem(
                "Invalid request: `detail` lists every invalid value with its location",
                "ValidationProblem",
            )
            .build(),
        ),
        (
            "TooManyRequests",
            problem("Over the organization's or the principal's rate limit", "Problem")
                .header("Retry-After", retry_after())
                .build(),
        ),
        (
            "ServiceUnavailable",
            problem(
                "A dependency (the database, the vector index, a provider) cannot answer now; retry after the given time",
                "Problem",
            )
            .header("Retry-After", retry_after())
            .build(),
        ),
    ]
}
