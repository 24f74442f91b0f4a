//! A completion as every entry point starts it (`/v1/chats`, the OpenAI and Anthropic
//! dialects, the Responses API, MCP's `ask_model`): refused while the instance drains,
//! started by the chats service, its generation spawned so a caller that goes away loses
//! nothing, returned once its chat is stored; and its answer awaited when the caller wants
//! it whole. A request's `Cache-Control` directives reach the response cache through
//! [`RequestCache`], and the answer says whether the cache gave it with [`x_cache`].

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpRequest, HttpResponseBuilder, dev::Payload, http::header};
use tessera_chats::{
    CacheDirectives, CacheStatus, Chat, ChatError, CompletionRequest, GenerationEvent,
};
use tessera_kernel::DomainError;
use tessera_models::Usability;
use tessera_wire::v1::chats::CompletionOut;

use crate::{caller::Caller, chat_stream, problem::ApiError, state::AppState};
use tessera_http_actix::problem::chat_error;

/// 503 once this instance drains: running generations finish, new ones go elsewhere.
fn refuse_when_draining(state: &AppState) -> Result<(), ApiError> {
    if state.draining.is_draining() {
        return Err(ApiError::unavailable(
            "shutting_down",
            "this instance is shutting down and takes no new completions; retry (another \
             instance will serve it)",
        )
        .with_retry_after(1));
    }
    Ok(())
}

/// A completion whose generation runs in the background, its chat stored.
pub(crate) struct Running {
    pub chat: Chat,
    pub created: bool,
    pub message_id: tessera_chats::MessageId,
    pub truncated_messages: usize,
    pub usability: Usability,
    /// For a model opted in to the response cache: whether the answer is a replay.
    pub cache: Option<CacheStatus>,
    pub events: tessera_chats::EventStream,
}

/// A completion request's `Cache-Control` directives (`no-cache`: not answered from the
/// response cache; `no-store`: not kept in it). Only models opted in are cached.
pub(crate) struct RequestCache(pub CacheDirectives);

impl FromRequest for RequestCache {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(Self(directives(req.headers()))))
    }
}

/// The directives of every `Cache-Control` header (case-insensitive; others ignored).
fn directives(headers: &header::HeaderMap) -> CacheDirectives {
    let mut directives = CacheDirectives::default();
    let values = headers.get_all(header::CACHE_CONTROL);
    for directive in values
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
    {
        let name = directive.split('=').next().unwrap_or_default().trim();
        if name.eq_ignore_ascii_case("no-cache") {
            directives.no_cache = true;
        } else if name.eq_ignore_ascii_case("no-store") {
            directives.no_store = true;
        }
    }
    directives
}

/// `X-Cache: hit|miss` on an answer of a model opted in to the response cache.
pub(crate) fn x_cache(builder: &mut HttpResponseBuilder, status: Option<CacheStatus>) {
    if let Some(status) = status {
        builder.insert_header(("X-Cache", status.as_str()));
    }
}

/// Starts a completion for the caller (also the MCP tool `ask_model`): the generation runs
/// in the background, so a caller that goes away loses nothing; returns once the chat's
/// row has committed.
pub(crate) async fn start_completion(
    state: &AppState,
    caller: &Caller,
    request: CompletionRequest,
) -> Result<Running, ApiError> {
    start_completion_as(state, caller, request, chat_error).await
}

/// [`start_completion`], its failures answered by `problem` (a dialect's own problems).
pub(crate) async fn start_completion_as(
    state: &AppState,
    caller: &Caller,
    request: CompletionRequest,
    problem: impl Fn(ChatError) -> ApiError,
) -> Result<Running, ApiError> {
    refuse_when_draining(state)?;
    let started = state.chats.start(caller, request).await.map_err(&problem)?;
    tokio::spawn(started.generation);
    // A new chat's row commits while the model is asked; its id goes out once it has.
    started.stored.await.map_err(&problem)?;
    Ok(Running {
        chat: started.chat,
        created: started.created,
        message_id: started.message_id,
        truncated_messages: started.truncated_messages,
        usability: started.usability,
        cache: started.cache,
        events: started.events,
    })
}

/// Waits for the running completion's answer. A failed answer is stored with what it said
/// (and its chat in `error`): the problem names the chat and the message, with a
/// `Location`, so the client can read what was kept (issue 61).
pub(crate) async fn answer(running: Running) -> Result<CompletionOut, ApiError> {
    let outcome = chat_stream::final_event(running.events).await;
    let message = match outcome.as_deref() {
        Some(GenerationEvent::Finished(message)) => message,
        Some(GenerationEvent::Failed(error)) => {
            return Err(chat_error(error.clone())
                .with("chatId", running.chat.id.to_string())
                .with("messageId", running.message_id.to_string())
                .with_location(format!("/v1/chats/{}", running.chat.id)));
        }
        _ => {
            return Err(DomainError::internal("the generation ended without an answer").into());
        }
    };
    Ok(CompletionOut::answered(
        &running.chat,
        message,
        running.truncated_messages,
    ))
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{CACHE_CONTROL, HeaderMap, HeaderValue};

    use super::*;

    fn of(values: &[&str]) -> CacheDirectives {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(CACHE_CONTROL, HeaderValue::from_str(value).unwrap());
        }
        directives(&headers)
    }

    #[test]
    fn cache_control_directives_are_read_from_every_header() {
        assert_eq!(of(&[]), CacheDirectives::default());
        assert_eq!(
            of(&["No-Cache"]),
            CacheDirectives {
                no_cache: true,
                no_store: false
            }
        );
        assert_eq!(
            of(&["max-age=0, no-store"]),
            CacheDirectives {
                no_cache: false,
                no_store: true
            }
        );
        assert_eq!(
            of(&["no-cache=\"x\"", "no-store"]),
            CacheDirectives {
                no_cache: true,
                no_store: true
            }
        );
        assert_eq!(of(&["private, max-age=60"]), CacheDirectives::default());
    }
}
