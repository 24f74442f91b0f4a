//! Every problem+json answer on a dialect's paths (token checks, rate limits, unknown routes
//! and handlers alike) is rewritten into that dialect's error shape: OpenAI's under
//! `/openai/` (`tessera_wire::openai::error`), Anthropic's under `/anthropic/`
//! (`tessera_wire::anthropic::error`), so a dialect cannot leak Tessera's own error format;
//! and the problem a dialect's failed completion answers with (`completion_error`). A
//! response that carries its `ApiError` is rendered from that typed value; only a problem
//! written without one (by the framework, or rebuilt by a middleware) is read back from its
//! JSON.

use actix_web::{
    Error, HttpResponse,
    body::{self, BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{StatusCode, header},
    middleware::Next,
};
use serde_json::Value;
use tessera_chats::ChatError;
use tessera_kernel::FieldError;
use tessera_models::ModelError;

use crate::{
    problem::{ApiError, PROBLEM_JSON, ProblemDetail},
    routes::{chats::chat_error, openai::models::model_not_found},
};

/// The problem a failed completion answers with in a dialect: an unknown (or another
/// organization's) model is 404 `model_not_found`, field errors are located as the client
/// sent the request (`located`: the dialect's names and message positions).
pub fn completion_error(
    error: ChatError,
    model: &str,
    located: impl Fn(&[FieldError]) -> Vec<FieldError>,
) -> ApiError {
    match error {
        ChatError::Model(ModelError::NotFound(_) | ModelError::UnknownBaseModel(_)) => {
            model_not_found(model)
        }
        other => {
            let problem = chat_error(other);
            match &problem.detail {
                ProblemDetail::Fields(fields) => ApiError::validation(located(fields)),
                _ => problem,
            }
        }
    }
}

/// A dialect whose paths answer in its own error shape.
#[derive(Debug, Clone, Copy)]
enum Dialect {
    OpenAi,
    Anthropic,
}

impl Dialect {
    fn of(path: &str) -> Option<Self> {
        if path.starts_with("/openai/") {
            Some(Dialect::OpenAi)
        } else if path.starts_with("/anthropic/") {
            Some(Dialect::Anthropic)
        } else {
            None
        }
    }

    /// The dialect's status and error body for a typed problem.
    fn render(self, problem: &ApiError) -> (u16, Value) {
        let parts = problem.parts();
        match self {
            Dialect::OpenAi => {
                let (status, error) = tessera_wire::openai::error::render(&parts);
                (status, serde_json::to_value(error).unwrap_or_default())
            }
            Dialect::Anthropic => {
                let (status, error) = tessera_wire::anthropic::error::render(&parts);
                (status, serde_json::to_value(error).unwrap_or_default())
            }
        }
    }

    /// The dialect's status and error body for a problem+json body.
    fn translate(self, status: u16, problem: &Value) -> (u16, Value) {
        match self {
            Dialect::OpenAi => {
                let (status, error) = tessera_wire::openai::error::translate(status, problem);
                (status, serde_json::to_value(error).unwrap_or_default())
            }
            Dialect::Anthropic => {
                let (status, error) = tessera_wire::anthropic::error::translate(status, problem);
                (status, serde_json::to_value(error).unwrap_or_default())
            }
        }
    }
}

/// Rewrites problem+json responses of a dialect's paths into its error shape.
pub async fn dialect(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let dialect = Dialect::of(req.path());
    let response = next.call(req).await?.map_into_boxed_body();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    let Some(dialect) = dialect.filter(|_| is_problem) else {
        return Ok(response);
    };
    // actix keeps the error an error response was made from (handlers' `Err`, and
    // middlewares' refusals made with `HttpResponse::from_error`).
    let typed = response
        .response()
        .error()
        .and_then(|error| error.as_error::<ApiError>())
        .map(|problem| dialect.render(problem));
    let (request, response) = response.into_parts();
    let headers = response.headers().clone();
    let (status, error) = match typed {
        Some(rendered) => rendered,
        // Written without an `ApiError` (the framework's own refusals, a response a
        // middleware rebuilt): its JSON is all there is to read.
        None => {
            let status = response.status();
            let bytes = body::to_bytes(response.into_body())
                .await
                .unwrap_or_default();
            let problem: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            dialect.translate(status.as_u16(), &problem)
        }
    };
    // The dialect's own number (Anthropic's 529 is no standard status, so it is built from
    // the number rather than named).
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut rewritten = HttpResponse::build(status);
    for (name, value) in headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.append_header((name.clone(), value.clone()));
        }
    }
    let rewritten = rewritten.json(error);
    Ok(ServiceResponse::new(request, rewritten))
}

#[cfg(test)]
mod tests {
    use actix_web::{App, ResponseError, middleware::from_fn, test, web};
    use tessera_kernel::FieldError;

    use super::*;
    use crate::problem::ProblemKind;

    fn problem_of(index: usize) -> ApiError {
        match ProblemKind::ALL[index] {
            ProblemKind::ValidationFailed => ApiError::validation(vec![FieldError::new(
                ["body".into(), "maxTokens".into()],
                "too large",
                "less_than_equal",
            )]),
            kind => ApiError::new(kind, kind.code(), "what went wrong").with("param", "model"),
        }
    }

    /// The handler's `Err`: actix keeps the `ApiError` on the response.
    async fn typed(path: web::Path<(String, usize)>) -> Result<HttpResponse, ApiError> {
        Err(problem_of(path.1))
    }

    /// The same problem written as a plain response: only its JSON is left to read.
    async fn written(path: web::Path<(String, usize)>) -> HttpResponse {
        problem_of(path.1).error_response()
    }

    #[actix_web::test]
    async fn typed_problems_render_as_their_json_would() {
        let app = test::init_service(
            App::new()
                .wrap(from_fn(dialect))
                .route("/{dialect}/typed/{index}", web::get().to(typed))
                .route("/{dialect}/written/{index}", web::get().to(written)),
        )
        .await;
        for prefix in ["openai", "anthropic"] {
            for (index, kind) in ProblemKind::ALL.into_iter().enumerate() {
                let mut answers = Vec::new();
                for how in ["typed", "written"] {
                    let request = test::TestRequest::get()
                        .uri(&format!("/{prefix}/{how}/{index}"))
                        .to_request();
                    let response = test::call_service(&app, request).await;
                    let status = response.status();
                    let retry_after = response.headers().get(header::RETRY_AFTER).cloned();
                    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
                    let body = test::read_body(response).await;
                    answers.push((status, retry_after, content_type, body));
                }
                assert_eq!(answers[0], answers[1], "{prefix} {kind:?}");
                // Both dialects' shapes name the error's type under `error`.
                let body: Value = serde_json::from_slice(&answers[0].3).unwrap();
                assert!(
                    body["error"]["type"].is_string(),
                    "{prefix} {kind:?}: {body}"
                );
            }
        }
    }

    #[actix_web::test]
    async fn other_paths_keep_their_problems() {
        let app = test::init_service(
            App::new()
                .wrap(from_fn(dialect))
                .route("/{dialect}/typed/{index}", web::get().to(typed)),
        )
        .await;
        let request = test::TestRequest::get().uri("/v1/typed/0").to_request();
        let response = test::call_service(&app, request).await;
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE).unwrap(),
            PROBLEM_JSON
        );
        let body: Value = serde_json::from_slice(&test::read_body(response).await).unwrap();
        assert_eq!(body, problem_of(0).body());
    }
}
