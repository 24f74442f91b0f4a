//! Every problem+json answer on an `/openai/` path (token checks, rate limits, unknown
//! routes and handlers alike) is rewritten into OpenAI's error shape
//! (`tessera_wire::openai::error`), so the dialect cannot leak Tessera's own error format.

use actix_web::{
    Error, HttpResponse,
    body::{self, BoxBody, MessageBody},
    dev::{ServiceRequest, ServiceResponse},
    http::{StatusCode, header},
    middleware::Next,
};
use serde_json::Value;
use tessera_chats::ChatError;
use tessera_wire::openai::error::{OpenAiError, translate};

use crate::{problem::PROBLEM_JSON, routes::chats::chat_error};

/// A generation's failure as OpenAI reports it in a stream that already began: the problem
/// `/v1` would answer, translated.
pub fn failure(error: &ChatError) -> OpenAiError {
    let problem = chat_error(error.clone());
    translate(problem.status.as_u16(), &problem.body()).1
}

/// Rewrites problem+json responses of `/openai/` paths into OpenAI's error shape.
pub async fn dialect(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let openai = req.path().starts_with("/openai/");
    let response = next.call(req).await?.map_into_boxed_body();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    if !openai || !is_problem {
        return Ok(response);
    }
    let (request, response) = response.into_parts();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = body::to_bytes(response.into_body())
        .await
        .unwrap_or_default();
    let problem: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let (status, error) = translate(status.as_u16(), &problem);
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
