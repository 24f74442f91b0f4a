//! `POST /openai/v1/chat/completions`: OpenAI's request (`tessera_wire::openai::chat`)
//! translated into the chats domain's `CompletionRequest`, run through the same pipeline as
//! `POST /v1/chats`, and the answer translated back. Stateless unless `store: true`, which
//! keeps the exchange as a chat.

use actix_web::{HttpResponse, post, web};
use tessera_chats::{ChatError, GenerationEvent};
use tessera_wire::openai::{
    chat::{ChatCompletion, ChatCompletionRequest, completion_id, located},
    error::OpenAiError,
    stream::ChunkEncoder,
    unix,
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
            headers(
                ("X-Chat-Id" = String, description = "With `store: true`: the chat that keeps the exchange"),
                ("X-Cache" = String, description = "For a model opted in to the response cache: `hit` when the answer was replayed from it, else `miss`")
            )),
        (status = 400, description = "Invalid or unsupported parameters (`param` names the first)", body = OpenAiError),
        (status = 403, description = "The credential lacks `chats:invoke`, the model needs another plan, or the credential's allow-list does not name it", body = OpenAiError),
        (status = 404, description = "No such model (`model_not_found`)", body = OpenAiError),
        (status = 409, description = "The model is disabled (`model_disabled`)", body = OpenAiError),
        (status = 410, description = "The model reached its end of life (`model_end_of_life`)", body = OpenAiError),
        (status = 429, description = "Rate limited (`Retry-After`), or the organization's monthly credits or the credential's budget are spent (`insufficient_quota`)", body = OpenAiError),
        (status = 502, description = "The provider failed, or a strict answer does not conform to its schema", body = OpenAiError),
        (status = 503, description = "The provider is unavailable, or this instance is shutting down", body = OpenAiError)
    )
)]
#[post("/openai/v1/chat/completions")]
pub async fn create_chat_completion(
    caller: Caller,
    state: web::Data<AppState>,
    RequestCache(cache): RequestCache,
    ValidJson(body): ValidJson<ChatCompletionRequest>,
) -> Result<HttpResponse, ApiError> {
    let begun = begin(&state, &caller, body, cache).await?;
    let mut builder = HttpResponse::Ok();
    builder.insert_header(("Cache-Control", "no-cache"));
    x_cache(&mut builder, begun.cache);
    if !begun.stateless {
        builder.insert_header(("X-Chat-Id", begun.chat.to_string()));
    }
    if begun.stream {
        let encoder = Encoder::OpenAi(ChunkEncoder::new(
            begun.id,
            begun.created,
            begun.model,
            begun.include_usage,
            failure,
        ));
        let body = chat_stream::body(begun.events, encoder, HEARTBEAT);
        return Ok(chat_stream::sse(Format::OpenAi, &mut builder, body));
    }
    Ok(builder.json(whole(begun).await?))
}

/// A completion whose generation began.
struct Begun {
    id: String,
    created: i64,
    model: String,
    chat: tessera_chats::ChatId,
    positions: Vec<usize>,
    stateless: bool,
    stream: bool,
    include_usage: bool,
    cache: Option<tessera_chats::CacheStatus>,
    events: tessera_chats::EventStream,
}

/// Checks the request and begins its generation.
async fn begin(
    state: &AppState,
    caller: &Caller,
    body: ChatCompletionRequest,
    cache: tessera_chats::CacheDirectives,
) -> Result<Begun, ApiError> {
    let model = body.model.clone();
    let mut translated = body.translate().map_err(ApiError::validation)?;
    translated.request.cache = cache;
    let positions = translated.positions;
    let stateless = translated.request.stateless;
    let running = start_completion_as(state, caller, translated.request, |error| {
        completion_error(error, &model, &positions)
    })
    .await?;
    Ok(Begun {
        id: completion_id(&running.message_id),
        created: unix(running.chat.created_at),
        chat: running.chat.id.clone(),
        model,
        positions,
        stateless,
        stream: translated.stream,
        include_usage: translated.include_usage,
        cache: running.cache,
        events: running.events,
    })
}

/// The completion once its generation ended.
async fn whole(begun: Begun) -> Result<ChatCompletion, ApiError> {
    let outcome = chat_stream::final_event(begun.events).await;
    let message = match outcome.as_deref() {
        Some(GenerationEvent::Finished(message)) => message,
        // The chat keeps what was said: its `Location` goes with the error (issue 61).
        Some(GenerationEvent::Failed(error)) => {
            let problem = completion_error(error.clone(), &begun.model, &begun.positions);
            return Err(if begun.stateless {
                problem
            } else {
                problem.with_location(format!("/v1/chats/{}", begun.chat))
            });
        }
        _ => {
            return Err(ApiError::internal("the generation ended without an answer"));
        }
    };
    Ok(ChatCompletion::of(
        begun.id,
        begun.created,
        begun.model,
        message,
    ))
}

/// A completion answered whole, as a batch's line asks for it (a line cannot stream).
pub async fn complete_whole(
    state: &AppState,
    caller: &Caller,
    body: ChatCompletionRequest,
) -> Result<ChatCompletion, ApiError> {
    whole(
        begin(
            state,
            caller,
            body,
            tessera_chats::CacheDirectives::default(),
        )
        .await?,
    )
    .await
}
