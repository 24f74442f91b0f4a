//! `POST /anthropic/v1/messages`: Anthropic's request (`tessera_wire::anthropic::request`)
//! translated into the chats domain's `CompletionRequest`, run through the same pipeline as
//! `POST /v1/chats` without keeping a chat, and the answer translated back.

use actix_web::{HttpResponse, post, web};
use tessera_chats::{ChatError, GenerationEvent};
use tessera_wire::anthropic::{
    error::AnthropicError,
    message::{AnthropicMessage, message_id},
    request::{CountTokensRequest, CreateMessageRequest, TokenCount, anthropic_name},
    stream::MessageEncoder,
};

use super::error::failure;
use crate::{
    caller::Caller,
    chat_stream::{self, Encoder, Format, HEARTBEAT},
    completion::{RequestCache, start_completion_as, x_cache},
    extract::ValidJson,
    problem::ApiError,
    routes::dialects,
    state::AppState,
};

/// The problem a failed completion answers with, in this dialect's terms.
fn completion_error(error: ChatError, model: &str, positions: &[usize]) -> ApiError {
    dialects::completion_error(error, model, |fields| {
        tessera_wire::chat::located_as(fields, positions, anthropic_name)
    })
}

/// Create a message in Anthropic's format.
///
/// The same pipeline as `POST /v1/chats`, keeping no chat: a user model brings its system
/// prompt and datasets (sources in `sources`, Tessera's extension), usage is recorded,
/// budgets and rate limits apply. The key may be sent as `x-api-key` (Anthropic's clients)
/// or as `Authorization: Bearer`. With `stream: true` the answer is Anthropic's event
/// stream (`message_start` … `message_stop`).
#[utoipa::path(
    tag = "Anthropic",
    operation_id = "anthropicCreateMessage",
    request_body = CreateMessageRequest,
    responses(
        (status = 200, description = "The answer; with `stream: true`, `text/event-stream` of Anthropic's message events", body = AnthropicMessage,
            headers(("X-Cache" = String, description = "For a model opted in to the response cache: `hit` when the answer was replayed from it, else `miss`"))),
        (status = 400, description = "Invalid or unsupported parameters (`invalid_request_error`, naming each)", body = AnthropicError),
        (status = 402, description = "The organization's monthly credits or the credential's budget are spent (`billing_error`)", body = AnthropicError),
        (status = 403, description = "The credential lacks `chats:invoke`, the model needs another plan, or the credential's allow-list does not name it", body = AnthropicError),
        (status = 404, description = "No such model (`not_found_error`)", body = AnthropicError),
        (status = 413, description = "The request body is too large (`request_too_large`)", body = AnthropicError),
        (status = 500, description = "The provider failed, or a strict answer does not conform to its schema (`api_error`)", body = AnthropicError),
        (status = 504, description = "The provider did not answer in time (`timeout_error`)", body = AnthropicError),
        (status = 529, description = "The provider is unavailable, or this instance is shutting down (`overloaded_error`)", body = AnthropicError)
    )
)]
#[post("/anthropic/v1/messages")]
pub async fn create_message(
    caller: Caller,
    state: web::Data<AppState>,
    RequestCache(cache): RequestCache,
    ValidJson(body): ValidJson<CreateMessageRequest>,
) -> Result<HttpResponse, ApiError> {
    let model = body.model.clone();
    let mut translated = body.translate().map_err(ApiError::validation)?;
    translated.request.cache = cache;
    let positions = translated.positions;
    let show_thinking = translated.show_thinking;
    let running = start_completion_as(&state, &caller, translated.request, |error| {
        completion_error(error, &model, &positions)
    })
    .await?;
    let id = message_id(&running.message_id);

    let mut builder = HttpResponse::Ok();
    builder.insert_header(("Cache-Control", "no-cache"));
    x_cache(&mut builder, running.cache);
    if translated.stream {
        let encoder = Encoder::Anthropic(MessageEncoder::new(id, model, show_thinking, failure));
        let body = chat_stream::body(running.events, encoder, HEARTBEAT);
        return Ok(chat_stream::sse(Format::Anthropic, &mut builder, body));
    }

    let outcome = chat_stream::final_event(running.events).await;
    match outcome.as_deref() {
        Some(GenerationEvent::Finished(message)) => {
            Ok(builder.json(AnthropicMessage::of(model, message, show_thinking)))
        }
        Some(GenerationEvent::Failed(error)) => {
            Err(completion_error(error.clone(), &model, &positions))
        }
        _ => Err(ApiError::internal("the generation ended without an answer")),
    }
}

/// Count a message's input tokens without creating it.
///
/// What the model would read for this request: the model's system prompt and the
/// retrieved passages of its datasets, `system`, the messages (earlier ones the context
/// window cannot hold left out, as a message would) and the tool definitions, in the model's
/// own tokens. Nothing runs on the model, nothing is stored or billed.
#[utoipa::path(
    tag = "Anthropic",
    operation_id = "anthropicCountTokens",
    request_body = CountTokensRequest,
    responses(
        (status = 200, description = "The prompt's size", body = TokenCount),
        (status = 400, description = "Invalid or unsupported parameters (`invalid_request_error`, naming each)", body = AnthropicError),
        (status = 402, description = "The organization's monthly credits or the credential's budget are spent (`billing_error`)", body = AnthropicError),
        (status = 404, description = "No such model (`not_found_error`)", body = AnthropicError),
        (status = 413, description = "The request body is too large (`request_too_large`)", body = AnthropicError)
    )
)]
#[post("/anthropic/v1/messages/count_tokens")]
pub async fn count_tokens(
    caller: Caller,
    state: web::Data<AppState>,
    ValidJson(body): ValidJson<CountTokensRequest>,
) -> Result<web::Json<TokenCount>, ApiError> {
    let model = body.model.clone();
    let translated = body.translate().map_err(ApiError::validation)?;
    let positions = translated.positions;
    let input_tokens = state
        .chats
        .count_prompt_tokens(&caller, translated.request)
        .await
        .map_err(|error| completion_error(error, &model, &positions))?;
    Ok(web::Json(TokenCount { input_tokens }))
}
