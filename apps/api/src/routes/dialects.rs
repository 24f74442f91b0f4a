//! Every problem+json answer on a dialect's paths (token checks, rate limits, unknown routes
//! and handlers alike) is rewritten into that dialect's error shape: OpenAI's under
//! `/openai/` (`tessera_wire::openai::error`), Anthropic's under `/anthropic/`
//! (`tessera_wire::anthropic::error`), so a dialect cannot leak Tessera's own error format;
//! and the problem a dialect's failed completion answers with (`completion_error`).

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

    /// The dialect's status and error body for a problem.
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
    let (request, response) = response.into_parts();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = body::to_bytes(response.into_body())
        .await
        .unwrap_or_default();
    let problem: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let (status, error) = dialect.translate(status.as_u16(), &problem);
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
