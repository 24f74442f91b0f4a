//! OpenAI's Responses API at `/openai/v1/responses` over Tessera's chats: a response is an
//! answer of a chat, `previous_response_id` continues that chat, `store: false` keeps
//! nothing, `background: true` answers at once while the generation goes on. The request
//! runs through the same completion pipeline as `POST /v1/chats` (model, system prompt,
//! retrieval, MCP tools, budgets, usage); see decision 0031. The `file_search` tool searches
//! the vector stores (datasets) it names before the model answers (decision 0057). The
//! shapes and their translation are `tessera_wire::openai::responses`.

use std::collections::HashMap;

use actix_web::{HttpResponse, delete, get, post, web};
use serde_json::json;
use tessera_chats::{
    AnswerCancellation, ChatError, ChatId, ChatRecord, ChatStatus, Continuation, GenerationEvent,
    MessageId,
};
use tessera_kernel::{DomainError, Scope};
use tessera_knowledge::{DatasetId, EXPIRED};
use tessera_models::ModelError;
use tessera_wire::openai::{
    attributes::attributes_json,
    error::OpenAiError,
    response_object::{Status, parse_response_id, response, response_id},
    response_stream::ResponseEncoder,
    responses::{
        CreateResponse, ListInputItems, RetrieveResponse, Translated, Untranslatable, created_at,
        position_of, replay_of, stored_echo, stored_response,
    },
    unix,
};

use super::{error::failure, models::model_not_found};
use crate::{
    caller::Caller,
    chat_stream::{self, Encoder, Format, HEARTBEAT},
    completion::{RequestCache, Running, start_completion, x_cache},
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, ProblemKind},
    routes::chats::chat_error,
    state::AppState,
};

fn previous_not_found(id: &str) -> ApiError {
    ApiError::not_found(
        "previous_response_not_found",
        format!("Previous response with id '{id}' not found."),
    )
    .with("param", "previous_response_id")
}

fn response_not_found(id: &str) -> ApiError {
    ApiError::not_found("not_found", format!("No response with id '{id}' found."))
}

/// The problem a failed response answers with, in this dialect's terms.
fn response_error(error: ChatError, model: &str) -> ApiError {
    match error {
        ChatError::Model(ModelError::NotFound(_) | ModelError::UnknownBaseModel(_)) => {
            model_not_found(model)
        }
        other => chat_error(other),
    }
}

/// Checks and reads the `file_search` tool's stores: searching needs `datasets:read`, a
/// store that is not the organization's (or none at all) is not found, and an expired one
/// is refused (400 naming `tools`). Their files'
/// attributes pick the files the tool's filter passes, and the results show them.
async fn prepare_search(
    state: &AppState,
    caller: &Caller,
    translated: &mut Translated,
) -> Result<(), ApiError> {
    let Some(search) = translated.request.file_search.as_mut() else {
        return Ok(());
    };
    caller.require(&Scope::DATASETS_READ)?;
    let filter = translated.search_filter.as_ref();
    let mut picked = Vec::new();
    let mut shown = HashMap::new();
    for id in &search.datasets {
        let found = match id.parse::<DatasetId>() {
            Ok(dataset) => match state
                .knowledge
                .datasets
                .file_attributes(caller, &dataset)
                .await
            {
                Ok(files) => Some(files),
                Err(DomainError::NotFound { .. }) => None,
                // An expired store is refused: named by the tool, not by the path.
                Err(DomainError::Validation(mut fields))
                    if fields.iter().any(|field| field.kind == EXPIRED) =>
                {
                    for field in &mut fields {
                        field.loc = vec!["body".into(), "tools".into()];
                    }
                    return Err(DomainError::Validation(fields).into());
                }
                Err(other) => return Err(other.into()),
            },
            Err(_) => None,
        };
        let Some(files) = found else {
            return Err(
                ApiError::from(DomainError::not_found("vector store", id)).with("param", "tools")
            );
        };
        for (file, attributes) in files {
            if filter.is_some_and(|filter| filter.matches(&attributes)) {
                picked.push(file.to_string());
            }
            shown.insert(file.to_string(), json!(attributes_json(&attributes)));
        }
    }
    if filter.is_some() {
        search.files = Some(picked);
    }
    if let Some(echo) = translated.echo.file_search.as_mut() {
        echo.attributes = shown;
    }
    Ok(())
}

/// `previous_response_id` must name the latest answer of its conversation (the chats
/// domain's rule: chats do not branch).
async fn check_latest(
    state: &AppState,
    caller: &Caller,
    previous: &str,
    (chat, message): &(ChatId, MessageId),
) -> Result<(), ApiError> {
    let record = match state.chats.get(caller, chat).await {
        Ok(record) => record,
        Err(ChatError::NotFound(_)) => return Err(previous_not_found(previous)),
        Err(other) => return Err(chat_error(other)),
    };
    match record.continuation_from(message) {
        Continuation::Latest => Ok(()),
        Continuation::Superseded => Err(ApiError::conflict(
            "conversation_moved_on",
            format!(
                "'{previous}' is not the latest response of its conversation; continue from \
                 the latest (conversations do not branch)"
            ),
        )
        .with("param", "previous_response_id")),
        Continuation::Unknown => Err(previous_not_found(previous)),
    }
}

/// Create a response.
///
/// The same pipeline as `POST /v1/chats`: a user model brings its system prompt, datasets
/// and MCP tools; usage is recorded once per model call; budgets and rate limits apply.
/// With `stream: true` the answer is a stream of Responses events (`response.created` …
/// `response.completed`), each with a `sequence_number`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCreateResponse",
    request_body = CreateResponse,
    responses(
        (status = 403, description = "The credential lacks `chats:invoke` (or `datasets:read` for a `file_search` tool), the model needs another plan, or the credential's allow-list does not name it", body = OpenAiError),
        (status = 200, description = "The response (`object: response`); with `stream: true`, `text/event-stream` of Responses events", body = serde_json::Value,
            headers(("X-Cache" = String, description = "For a model opted in to the response cache: `hit` when the answer was replayed from it, else `miss`"))),
        (status = 400, description = "Invalid or unsupported parameters (`param` names the first), or a `file_search` vector store that expired", body = OpenAiError),
        (status = 404, description = "No such model, no such `previous_response_id`, or a `file_search` vector store that is not the organization's", body = OpenAiError),
        (status = 409, description = "`previous_response_id` is not the latest response of its conversation, or the model is disabled", body = OpenAiError),
        (status = 410, description = "The model reached its end of life (`model_end_of_life`)", body = OpenAiError),
        (status = 429, description = "Rate limited, or the organization's monthly credits or the credential's budget are spent", body = OpenAiError),
        (status = 502, description = "The provider failed, or a strict answer does not conform to its schema", body = OpenAiError),
        (status = 503, description = "The provider is unavailable, or this instance is shutting down", body = OpenAiError)
    )
)]
#[post("/openai/v1/responses")]
pub async fn create_response(
    caller: Caller,
    state: web::Data<AppState>,
    RequestCache(cache): RequestCache,
    ValidJson(body): ValidJson<CreateResponse>,
) -> Result<HttpResponse, ApiError> {
    let begun = begin(&state, &caller, body, cache).await?;
    let mut builder = HttpResponse::Ok();
    x_cache(&mut builder, begun.cache);
    if begun.echo.background {
        let queued = response(
            &begun.id,
            begun.created_at,
            &begun.echo,
            Status::Queued,
            None,
            None,
        );
        return Ok(builder.json(queued));
    }
    if begun.stream {
        let encoder = Encoder::Responses(Box::new(ResponseEncoder::new(
            begun.id,
            begun.created_at,
            begun.echo,
            begun.message_id,
            failure,
        )));
        let body = chat_stream::body(begun.events, encoder, HEARTBEAT);
        builder.insert_header(("Cache-Control", "no-cache"));
        return Ok(chat_stream::sse(Format::OpenAi, &mut builder, body));
    }
    Ok(builder.json(whole(begun).await?))
}

/// A response whose generation began.
struct Begun {
    id: String,
    created_at: i64,
    echo: tessera_wire::openai::response_object::Echo,
    message_id: MessageId,
    events: tessera_chats::EventStream,
    stream: bool,
    model: String,
    cache: Option<tessera_chats::CacheStatus>,
}

/// Checks the request and begins its generation.
async fn begin(
    state: &AppState,
    caller: &Caller,
    body: CreateResponse,
    cache: tessera_chats::CacheDirectives,
) -> Result<Begun, ApiError> {
    let model = body.model.clone();
    let mut translated = body.translate().map_err(|error| match error {
        Untranslatable::Invalid(fields) => ApiError::validation(fields),
        Untranslatable::PreviousNotFound(id) => previous_not_found(&id),
    })?;
    if let (Some(continues), Some(previous)) =
        (&translated.continues, &translated.echo.previous_response_id)
    {
        check_latest(state, caller, previous, continues).await?;
    }
    prepare_search(state, caller, &mut translated).await?;
    translated.request.cache = cache;
    let running = start_completion(state, caller, translated.request)
        .await
        .map_err(|error| located_model(error, &model))?;
    let Running {
        chat,
        message_id,
        events,
        cache,
        ..
    } = running;
    Ok(Begun {
        id: response_id(&chat.id, &message_id),
        // When the chat accepted this turn: the stored response's time until its answer is
        // stored.
        created_at: unix(chat.updated_at),
        echo: translated.echo,
        message_id,
        events,
        stream: translated.stream,
        model,
        cache,
    })
}

/// The response once its generation ended.
async fn whole(begun: Begun) -> Result<serde_json::Value, ApiError> {
    let outcome = chat_stream::final_event(begun.events).await;
    match outcome.as_deref() {
        Some(GenerationEvent::Finished(message)) => Ok(response(
            &begun.id,
            begun.created_at,
            &begun.echo,
            Status::of(message),
            Some(message),
            None,
        )),
        Some(GenerationEvent::Failed(error)) => Err(response_error(error.clone(), &begun.model)),
        _ => Err(ApiError::internal("the generation ended without an answer")),
    }
}

/// A response answered whole, as a batch's line asks for it (a line cannot stream, and a
/// batch runs in the background already).
pub async fn respond_whole(
    state: &AppState,
    caller: &Caller,
    body: CreateResponse,
) -> Result<serde_json::Value, ApiError> {
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

/// `start_completion` answers an unknown model as the chats API does; here it is OpenAI's
/// `model_not_found`.
fn located_model(error: ApiError, model: &str) -> ApiError {
    if error.kind == ProblemKind::NotFound && error.code == ProblemKind::NotFound.code() {
        model_not_found(model)
    } else {
        error
    }
}

/// The chat a response id names, as the caller may see it.
async fn record_of(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<(ChatRecord, MessageId), ApiError> {
    let (chat, message) = response_ids(id)?;
    match state.chats.get(caller, &chat).await {
        // A deleted response's chat stays restorable through `/v1/chats`, not here.
        Ok(record) if record.chat.deleted_at.is_some() => Err(response_not_found(id)),
        Ok(record) => Ok((record, message)),
        Err(error) => Err(response_or_chat_error(error, id)),
    }
}

/// The chat and answer a response id names; an id that names none is not found.
fn response_ids(id: &str) -> Result<(ChatId, MessageId), ApiError> {
    parse_response_id(id).ok_or_else(|| response_not_found(id))
}

/// A chat that is not found is the response not found.
fn response_or_chat_error(error: ChatError, id: &str) -> ApiError {
    match error {
        ChatError::NotFound(_) => response_not_found(id),
        other => chat_error(other),
    }
}

/// A stored response: `completed` (or `incomplete`) once answered, `in_progress` while its
/// generation runs (a background response), `failed` if it failed. With `stream=true`, its
/// events, resumable with `starting_after`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiGetResponse",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)"), RetrieveResponse),
    responses(
        (status = 200, description = "The response; with `stream=true`, `text/event-stream` of its events", body = serde_json::Value),
        (status = 400, description = "Invalid `stream` or `starting_after`", body = OpenAiError),
        (status = 404, description = "No such response in the organization (or it was not stored)", body = OpenAiError),
        (status = 409, description = "`stream=true` for a response that generates on another instance", body = OpenAiError)
    )
)]
#[get("/openai/v1/responses/{response_id}")]
pub async fn get_response(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<RetrieveResponse>,
) -> Result<HttpResponse, ApiError> {
    let (record, message) = record_of(&state, &caller, &path).await?;
    if query.stream != Some(true) {
        let body =
            stored_response(&path, &record, &message).ok_or_else(|| response_not_found(&path))?;
        return Ok(HttpResponse::Ok().json(body));
    }
    let attached = state
        .chats
        .attach(&caller, &record.chat.id)
        .await
        .map_err(chat_error)?;
    let (events, before) = match (attached, position_of(&record, &message)) {
        (Some(attached), _) if attached.message == message => {
            (attached.events, record.messages.len())
        }
        (_, Some(at)) => (replay_of(&record.messages[at]), at),
        (_, None) if record.chat.status == Some(ChatStatus::Generating) => {
            return Err(ApiError::conflict(
                "response_elsewhere",
                "the response generates on another instance; retrieve it without `stream` \
                 until it is done",
            ));
        }
        (_, None) => return Err(response_not_found(&path)),
    };
    let encoder = ResponseEncoder::new(
        path.to_string(),
        created_at(&record, &message),
        stored_echo(&record, before),
        message,
        failure,
    )
    .starting_after(query.starting_after);
    let body = chat_stream::body(events, Encoder::Responses(Box::new(encoder)), HEARTBEAT);
    let mut builder = HttpResponse::Ok();
    builder.insert_header(("Cache-Control", "no-cache"));
    Ok(chat_stream::sse(Format::OpenAi, &mut builder, body))
}

/// Cancel a background response while it generates: the generation stops where it waits,
/// what the model used is billed, and the response is `cancelled`.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiCancelResponse",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)")),
    responses(
        (status = 200, description = "The response, `cancelled`", body = serde_json::Value),
        (status = 400, description = "The response is already finished (`response_finished`)", body = OpenAiError),
        (status = 404, description = "No such response in the organization", body = OpenAiError),
        (status = 409, description = "The response generates on another instance", body = OpenAiError)
    )
)]
#[post("/openai/v1/responses/{response_id}/cancel")]
pub async fn cancel_response(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (chat, message) = response_ids(&path)?;
    let cancellation = state
        .chats
        .cancel_answer(&caller, &chat, &message)
        .await
        .map_err(|error| response_or_chat_error(error, &path))?;
    let record = match cancellation {
        AnswerCancellation::Cancelled(record) => record,
        AnswerCancellation::Elsewhere => {
            return Err(ApiError::conflict(
                "response_elsewhere",
                "the response generates on another instance",
            ));
        }
        AnswerCancellation::NotRunning(record) => {
            let body = stored_response(&path, &record, &message)
                .ok_or_else(|| response_not_found(&path))?;
            return Err(ApiError::bad_request(
                "response_finished",
                format!(
                    "the response is {}; only a running response can be cancelled",
                    body["status"]
                ),
            ));
        }
    };
    let body =
        stored_response(&path, &record, &message).ok_or_else(|| response_not_found(&path))?;
    Ok(HttpResponse::Ok().json(body))
}

/// The items a response was made from: the messages of its turn (after the previous
/// answer), paged as OpenAI pages them.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiListResponseInputItems",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)"), ListInputItems),
    responses(
        (status = 200, description = "`object: list` of input items with `first_id`, `last_id`, `has_more`", body = serde_json::Value),
        (status = 400, description = "Invalid `limit`, `order`, `after` or `before`", body = OpenAiError),
        (status = 404, description = "No such response in the organization", body = OpenAiError)
    )
)]
#[get("/openai/v1/responses/{response_id}/input_items")]
pub async fn list_input_items(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidQuery(query): ValidQuery<ListInputItems>,
) -> Result<HttpResponse, ApiError> {
    let (record, message) = record_of(&state, &caller, &path).await?;
    let end = match position_of(&record, &message) {
        Some(at) => at,
        None if record.chat.status == Some(ChatStatus::Generating) => record.messages.len(),
        None => return Err(response_not_found(&path)),
    };
    let page = query.page(&record, end).map_err(ApiError::validation)?;
    Ok(HttpResponse::Ok().json(page))
}

/// Delete a response: its conversation (the Tessera chat) is deleted, restorable with
/// `POST /v1/chats/{id}/restore` as any deleted chat is.
#[utoipa::path(
    tag = "OpenAI",
    operation_id = "openaiDeleteResponse",
    params(("response_id" = String, Path, description = "The response id (`resp_…`)")),
    responses(
        (status = 200, description = "Deleted (`object: response.deleted`)", body = serde_json::Value),
        (status = 404, description = "No such response in the organization", body = OpenAiError)
    )
)]
#[delete("/openai/v1/responses/{response_id}")]
pub async fn delete_response(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (record, message) = record_of(&state, &caller, &path).await?;
    if !record.messages.iter().any(|m| m.id == message) {
        return Err(response_not_found(&path));
    }
    state
        .chats
        .delete(&caller, &record.chat.id)
        .await
        .map_err(chat_error)?;
    Ok(HttpResponse::Ok().json(json!({
        "id": path.as_str(),
        "object": "response.deleted",
        "deleted": true,
    })))
}
