//! `POST /openai/v1/chat/completions`: OpenAI's request (`tessera_wire::openai::chat`)
//! translated into the chats domain's `CompletionRequest`, run through the same pipeline as
//! `POST /v1/chats`, and the answer translated back. Stateless unless `store: true`, which
//! keeps the exchange as a chat.

use actix_web::{HttpResponse, http::StatusCode, post, web};
use tessera_chats::{ChatError, GenerationEvent};
use tessera_wire::openai::{
    chat::{ChatCompletion, ChatCompletionRequest, completion_id, located},
    error::OpenAiError,
    stream::ChunkEncoder,
    unix,
};

use super::error::failure;
use crate::{
    access::Caller,
    chat_stream::{self, Encoder, Format, HEARTBEAT},
    extract::ValidJson,
    problem::ApiError,
    routes::{chats::start_completion_as, dialects},
    state::AppState,
};

/// The problem a failed completion answers with, in this dialect's terms.
fn completion_error(error: ChatError, model: &str, positions: &[usize]) -> ApiError {
    dialects::completion_error(error, model, |fields| located(fields, positions))
}

/// Create a chat completion in OpenAI's format.
///
/// The same pipeline as `POST /v1/chats`: a user model brings its system prompt and
/// datasets (sources in `message.sources`, and in the final chunk's `delta.sources` when
/// streaming), usage is recorded, budgets and rate limits apply. With `stream: true` the
/// answer is a stream of `chat.completion.chunk` events ending with `data: [DONE]`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateChatCompletion",
    request_body = ChatCompletionRequest,
    responses(
        (status = 200, description = "The completion; with `stream: true`, `text/event-stream` of `chat.completion.chunk` objects", body = ChatCompletion,
            headers(("X-Chat-Id" = String, description = "With `store: true`: the chat that keeps the exchange"))),
        (status = 400, description = "Invalid or unsupported parameters (`param` names the first)", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:invoke`, or the model needs another plan", body = OpenAiError),
        (status = 404, description = "No such model (`model_not_found`)", body = OpenAiError),
        (status = 409, description = "The model is disabled (`model_disabled`)", body = OpenAiError),
        (status = 410, description = "The model reached its end of life (`model_end_of_life`)", body = OpenAiError),
        (status = 429, description = "Rate limited (`Retry-After`), or the monthly credits are spent (`insufficient_quota`)", body = OpenAiError),
        (status = 502, description = "The provider failed, or a strict answer does not conform to its schema", body = OpenAiError),
        (status = 503, description = "The provider is unavailable, or this instance is shutting down", body = OpenAiError)
    )
)]
#[post("/openai/v1/chat/completions")]
pub async fn create_chat_completion(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<ChatCompletionRequest>,
) -> Result<HttpResponse, ApiError> {
    let model = body.model.clone();
    let translated = body.translate().map_err(ApiError::validation)?;
    let positions = translated.positions;
    let stateless = translated.request.stateless;
    let running = start_completion_as(&state, &caller, translated.request, |error| {
        completion_error(error, &model, &positions)
    })
    .await?;
    let id = completion_id(&running.message_id);
    let created = unix(running.chat.created_at);
    let chat = running.chat.id.clone();

    let mut builder = HttpResponse::Ok();
    builder.insert_header(("Cache-Control", "no-cache"));
    if !stateless {
        builder.insert_header(("X-Chat-Id", chat.to_string()));
    }
    if translated.stream {
        let encoder = Encoder::OpenAi(ChunkEncoder::new(
            id,
            created,
            model,
            translated.include_usage,
            failure,
        ));
        let body = chat_stream::body(running.events, encoder, HEARTBEAT);
        return Ok(chat_stream::sse(Format::OpenAi, &mut builder, body));
    }

    let outcome = chat_stream::final_event(running.events).await;
    let message = match outcome.as_deref() {
        Some(GenerationEvent::Finished(message)) => message,
        // The chat keeps what was said: its `Location` goes with the error (issue 61).
        Some(GenerationEvent::Failed(error)) => {
            let problem = completion_error(error.clone(), &model, &positions);
            return Err(if stateless {
                problem
            } else {
                problem.with_location(format!("/v1/chats/{chat}"))
            });
        }
        _ => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "the generation ended without an answer",
            ));
        }
    };
    Ok(builder.json(ChatCompletion::of(id, created, model, message)))
}
