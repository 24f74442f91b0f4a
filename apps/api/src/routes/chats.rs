//! Chats: completions (JSON, or streamed in either SSE format), running generations to
//! re-attach to, and the chat records (list, get, rename, soft delete, restore). Its bodies
//! are `tessera_wire::v1::chats`.

use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, delete, get, patch, post, web};
use tessera_chats::{Chat, ChatId, Expansion, RelatedModel};
use tessera_kernel::DomainError;
use tessera_models::Usability;
use tessera_wire::page::PageOf;
use tessera_wire::v1::chats::{
    ChatOut, ChatSummary, ChatSummaryPage, CompletionOut, CreateCompletion, ExpandChat, ListChats,
    MessageOut, UpdateChat,
};
use tessera_wire::v1::models::ModelOut;

use crate::{
    caller::Caller,
    chat_stream::{self, Encoder, Format, HEARTBEAT},
    completion::{RequestCache, answer, start_completion, x_cache},
    extract::{ValidJson, ValidQuery},
    problem::{ApiError, Problem, ValidationProblem},
    state::AppState,
};
use tessera_wire::parse::{expansions, page_limit, path_id};

const EXPANSIONS: &[&str] = &["model", "versions", "particles"];

fn chat_id(text: &str) -> Result<ChatId, DomainError> {
    path_id(text, "chat")
}

pub use tessera_http_actix::problem::chat_error;

/// Headers every completion answer carries. A deprecated model's `Deprecation` date is when
/// the chat accepted the completion (the catalog records no earlier one).
fn completion_headers(
    builder: &mut HttpResponseBuilder,
    chat: &Chat,
    truncated: usize,
    usability: &Usability,
) {
    builder
        .insert_header(("Location", format!("/v1/chats/{}", chat.id)))
        .insert_header(("X-Chat-Id", chat.id.to_string()))
        .insert_header(("X-Truncated-Messages", truncated.to_string()))
        .insert_header(("Cache-Control", "no-cache"));
    if let Usability::Deprecated {
        sunset,
        replacement_model_id,
    } = usability
    {
        builder
            .insert_header(("Deprecation", format!("@{}", chat.updated_at.timestamp())))
            .insert_header((
                "Sunset",
                sunset.format("%a, %d %b %Y %H:%M:%S GMT").to_string(),
            ));
        if let Some(next) = replacement_model_id {
            builder.insert_header((
                "Link",
                format!("</v1/models/catalog>; rel=\"successor-version\"; title=\"{next}\""),
            ));
        }
    }
}

/// Create a completion, or continue a chat.
///
/// The generation runs in the background: a client that disconnects loses nothing (poll
/// `GET /v1/chats/{chat_id}` or re-attach with `GET /v1/chats/{chat_id}/stream`). With
/// `stream: true` the answer is Server-Sent Events: by default `data: {id, delta,
/// finished}` chunks (reasoning, tool calls, sources and usage in extra fields) ending with
/// `data: [DONE]`; with `X-Stream-Format: ai-sdk`, the Vercel AI SDK UI message stream.
#[utoipa::path(
    tag = "Chats",
    operation_id = "createChatCompletion",
    request_body = CreateCompletion,
    params(
        ("X-Stream-Format" = Option<String>, Header, pattern = "^ai-sdk$", description = "`ai-sdk` selects the Vercel AI SDK UI message stream for `stream: true`"),
        ("Cache-Control" = Option<String>, Header, description = "For a model opted in to the response cache: `no-cache` asks the model rather than the cache, `no-store` keeps nothing of this request in it")
    ),
    responses(
        (status = 200, description = "The completion of an existing chat; with `stream: true`, the event stream (`text/event-stream`) of any completion", body = CompletionOut,
            headers(
                ("X-Chat-Id" = String, description = "The chat's id"),
                ("X-Truncated-Messages" = u32, description = "Earlier messages left out to fit the context window"),
                ("Deprecation" = String, description = "Present when the model is deprecated"),
                ("Sunset" = String, description = "When a deprecated model retires"),
                ("X-Cache" = String, description = "For a model opted in to the response cache: `hit` when the answer was replayed from it, else `miss`")
            )),
        (status = 201, description = "The completion of a new chat (not streamed)", body = CompletionOut,
            headers(("X-Cache" = String, description = "For a model opted in to the response cache: `hit` or `miss`"))),
        (status = 402, description = "The organization's monthly credit budget is spent (`credit_budget_exhausted`, with `monthlyCredits`, `usedCredits`, `resetsAt`), or the credential's own (`credential_budget_exhausted`, with `credential`, `credits`, `period`, `usedCredits`, `resetsAt`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing scope (attachments need `files:read` too), a premium model on a free plan, or a model off the credential's allow-list (`model_not_allowed`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such chat or model", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The chat is generating, deleted, or the model is disabled", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "The model reached its end of life (`replacementModelId` in the problem)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid request: messages, tools, schema, or what the model supports", body = ValidationProblem, content_type = "application/problem+json"),
        (status = 502, description = "The provider failed, or a strict answer does not conform to its schema (`errors`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The provider is unavailable or busy, or this instance is shutting down (`shutting_down`); `Retry-After` says when to retry", body = Problem, content_type = "application/problem+json"),
        (status = 504, description = "The provider did not answer in time", body = Problem, content_type = "application/problem+json")
    )
)]
#[post("/v1/chats")]
pub async fn create_completion(
    req: HttpRequest,
    caller: Caller,
    state: web::Data<AppState>,
    RequestCache(cache): RequestCache,
    ValidJson(body): ValidJson<CreateCompletion>,
) -> Result<HttpResponse, ApiError> {
    let format = Format::of(&req)?;
    let (mut request, stream) = body.into_request()?;
    request.cache = cache;
    let running = start_completion(&state, &caller, request).await?;

    if stream {
        let mut builder = HttpResponse::Ok();
        completion_headers(
            &mut builder,
            &running.chat,
            running.truncated_messages,
            &running.usability,
        );
        x_cache(&mut builder, running.cache);
        let encoder = Encoder::new(format, &running.chat.id, &running.message_id);
        let body = chat_stream::body(running.events, encoder, HEARTBEAT);
        return Ok(chat_stream::sse(format, &mut builder, body));
    }

    let mut builder = if running.created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    completion_headers(
        &mut builder,
        &running.chat,
        running.truncated_messages,
        &running.usability,
    );
    x_cache(&mut builder, running.cache);
    Ok(builder.json(answer(running).await?))
}

/// The `expand[]` values of a request, as the chats domain's expansion.
fn expansion(query: &str) -> Result<Expansion, ApiError> {
    let expand = expansions(query, EXPANSIONS)?;
    let wants = |name: &str| expand.iter().any(|value| value == name);
    Ok(Expansion {
        model: wants("model"),
        versions: wants("versions"),
        particles: wants("particles"),
    })
}

/// Expands a chat's summary as asked.
async fn summary(
    state: &AppState,
    chat: Chat,
    expansion: Expansion,
) -> Result<ChatSummary, ApiError> {
    let related = state.chat_relations.related(&chat, expansion).await?;
    let model = related.model.map(|model| {
        model.map(|model| match model {
            RelatedModel::User(view) => ModelOut::user(*view),
            RelatedModel::Base(base, lifecycle) => {
                ModelOut::base(*base, lifecycle, state.models.catalog_loaded_at())
            }
        })
    });
    let composition = related.composition.unwrap_or_default();
    Ok(ChatSummary::of(chat, model, &composition, expansion))
}

/// The caller's chats, newest first (every chat of the organization with `chats:admin`).
#[utoipa::path(
    tag = "Chats",
    operation_id = "listChats",
    params(ListChats),
    responses(
        (status = 200, description = "A page of chats", body = ChatSummaryPage),
        (status = 422, description = "Invalid limit, cursor or expansion", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[get("/v1/chats")]
pub async fn list_chats(
    req: HttpRequest,
    caller: Caller,
    state: web::Data<AppState>,
    ValidQuery(query): ValidQuery<ListChats>,
) -> Result<web::Json<ChatSummaryPage>, ApiError> {
    let expansion = expansion(req.query_string())?;
    let mut page = state
        .chats
        .list(
            &caller,
            query.include_deleted.unwrap_or(false),
            page_limit(query.limit)?,
            query.cursor.as_deref(),
        )
        .await
        .map_err(chat_error)?;
    let mut summaries = Vec::with_capacity(page.items.len());
    for chat in std::mem::take(&mut page.items) {
        summaries.push(summary(&state, chat, expansion).await?);
    }
    Ok(web::Json(PageOf::with_items(page, summaries)))
}

/// A chat with its messages (soft-deleted chats too).
#[utoipa::path(
    tag = "Chats",
    operation_id = "getChat",
    params(("chat_id" = String, Path, description = "The chat id"), ExpandChat),
    responses(
        (status = 200, description = "The chat", body = ChatOut),
        (status = 404, description = "No such chat of the caller", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/chats/{chat_id}")]
pub async fn get_chat(
    req: HttpRequest,
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ChatOut>, ApiError> {
    let expansion = expansion(req.query_string())?;
    let record = state
        .chats
        .get(&caller, &chat_id(&path)?)
        .await
        .map_err(chat_error)?;
    Ok(web::Json(ChatOut {
        messages: record.messages.iter().map(MessageOut::from).collect(),
        chat: summary(&state, record.chat, expansion).await?,
    }))
}

/// Rename a chat.
#[utoipa::path(
    tag = "Chats",
    operation_id = "updateChat",
    params(("chat_id" = String, Path, description = "The chat id")),
    request_body = UpdateChat,
    responses(
        (status = 200, description = "The chat", body = ChatSummary),
        (status = 404, description = "No such chat of the caller", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Title longer than 500 characters", body = ValidationProblem, content_type = "application/problem+json")
    )
)]
#[patch("/v1/chats/{chat_id}")]
pub async fn update_chat(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    ValidJson(body): ValidJson<UpdateChat>,
) -> Result<web::Json<ChatSummary>, ApiError> {
    let chat = state
        .chats
        .rename(&caller, &chat_id(&path)?, body.title)
        .await
        .map_err(chat_error)?;
    Ok(web::Json(
        summary(&state, chat, Expansion::default()).await?,
    ))
}

/// Soft-delete a chat: it leaves the list (see `includeDeleted`) and can be restored.
#[utoipa::path(
    tag = "Chats",
    operation_id = "deleteChat",
    params(("chat_id" = String, Path, description = "The chat id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such chat of the caller", body = Problem, content_type = "application/problem+json")
    )
)]
#[delete("/v1/chats/{chat_id}")]
pub async fn delete_chat(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state
        .chats
        .delete(&caller, &chat_id(&path)?)
        .await
        .map_err(chat_error)?;
    Ok(HttpResponse::NoContent().finish())
}

/// Restore a soft-deleted chat.
#[utoipa::path(
    tag = "Chats",
    operation_id = "restoreChat",
    params(("chat_id" = String, Path, description = "The chat id")),
    responses(
        (status = 200, description = "The chat", body = ChatSummary),
        (status = 404, description = "No such chat of the caller", body = Problem, content_type = "application/problem+json")
    )
)]
#[post("/v1/chats/{chat_id}/restore")]
pub async fn restore_chat(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ChatSummary>, ApiError> {
    let chat = state
        .chats
        .restore(&caller, &chat_id(&path)?)
        .await
        .map_err(chat_error)?;
    Ok(web::Json(
        summary(&state, chat, Expansion::default()).await?,
    ))
}

/// Re-attach to the chat's running generation: everything produced so far, then live, in
/// the format `X-Stream-Format` selects. 204 when nothing is running.
#[utoipa::path(
    tag = "Chats",
    operation_id = "streamChat",
    params(
        ("chat_id" = String, Path, description = "The chat id"),
        ("X-Stream-Format" = Option<String>, Header, pattern = "^ai-sdk$", description = "`ai-sdk` selects the Vercel AI SDK UI message stream")
    ),
    responses(
        (status = 200, description = "The running generation's events (`text/event-stream`)"),
        (status = 204, description = "No generation is running on the chat"),
        (status = 404, description = "No such chat of the caller", body = Problem, content_type = "application/problem+json")
    )
)]
#[get("/v1/chats/{chat_id}/stream")]
pub async fn stream_chat(
    req: HttpRequest,
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let format = Format::of(&req)?;
    let id = chat_id(&path)?;
    let Some(attached) = state.chats.attach(&caller, &id).await.map_err(chat_error)? else {
        return Ok(HttpResponse::NoContent().finish());
    };
    let encoder = Encoder::new(format, &id, &attached.message);
    let body = chat_stream::body(attached.events, encoder, HEARTBEAT);
    let mut builder = HttpResponse::Ok();
    builder.insert_header(("X-Chat-Id", id.to_string()));
    Ok(chat_stream::sse(format, &mut builder, body))
}
