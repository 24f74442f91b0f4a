//! Server-Sent Events for chat generations, in the two wire formats clients choose with
//! `X-Stream-Format`: Tessera's own chunks (`{id, delta, finished}`, the interface's
//! default) and the Vercel AI SDK UI message stream (`ai-sdk`); `/openai/v1` adds OpenAI's
//! chunks and the Responses events, `/anthropic/v1` Anthropic's message events. The
//! encoders are `tessera_wire`'s; here they meet the HTTP response (headers, heartbeats,
//! bytes). All but Anthropic's end with `data: [DONE]`; comment lines keep idle
//! connections open through proxies.

use std::{convert::Infallible, sync::Arc, time::Duration};

use actix_web::{HttpResponse, http::header, web::Bytes};
use futures_util::{Stream, StreamExt, stream};
use tessera_chats::{ChatError, ChatId, EventStream, GenerationEvent, MessageId};
use tessera_wire::chat_stream::{AiSdkEncoder, TesseraEncoder};

use crate::problem::{ApiError, chat_error};

/// The header that selects the stream format, and its one alternative value.
pub const STREAM_FORMAT: &str = "x-stream-format";
pub const AI_SDK: &str = "ai-sdk";
/// How long a stream may stay silent before a keep-alive comment is sent.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// The wire format of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Tessera,
    AiSdk,
    /// OpenAI's `chat.completion.chunk` stream (`/openai/v1`; never chosen by header).
    OpenAi,
    /// Anthropic's message events (`/anthropic/v1`; never chosen by header).
    Anthropic,
}

impl Format {
    pub fn of(request: &actix_web::HttpRequest) -> Result<Self, ApiError> {
        match request.headers().get(STREAM_FORMAT).map(|v| v.to_str()) {
            None => Ok(Format::Tessera),
            Some(Ok(value)) if value.eq_ignore_ascii_case(AI_SDK) => Ok(Format::AiSdk),
            Some(Ok(value)) if value.eq_ignore_ascii_case("default") => Ok(Format::Tessera),
            Some(_) => Err(ApiError::validation(vec![tessera_kernel::FieldError::new(
                ["header".into(), "X-Stream-Format".into()],
                "must be `ai-sdk` (or absent for the default format)",
                "enum",
            )])),
        }
    }
}

/// A stream's encoder, by format.
pub enum Encoder {
    Tessera(TesseraEncoder),
    AiSdk(AiSdkEncoder),
    OpenAi(tessera_wire::openai::stream::ChunkEncoder),
    /// The Responses API's events (boxed: it keeps the request's echo).
    Responses(Box<tessera_wire::openai::response_stream::ResponseEncoder>),
    /// Anthropic's message events.
    Anthropic(tessera_wire::anthropic::stream::MessageEncoder),
}

impl Encoder {
    /// The encoder of a `/v1` stream (a dialect's stream builds its own encoder).
    pub fn new(format: Format, chat: &ChatId, message: &MessageId) -> Self {
        match format {
            Format::Tessera | Format::OpenAi | Format::Anthropic => {
                Encoder::Tessera(TesseraEncoder::new(chat.clone(), problem))
            }
            Format::AiSdk => Encoder::AiSdk(AiSdkEncoder::new(message.clone())),
        }
    }

    fn encode(&mut self, event: &GenerationEvent) -> Vec<Bytes> {
        match self {
            Encoder::Tessera(encoder) => frames(encoder.encode(event)),
            Encoder::AiSdk(encoder) => frames(encoder.encode(event)),
            Encoder::OpenAi(encoder) => frames(encoder.encode(event)),
            Encoder::Responses(encoder) => frames(encoder.encode(event)),
            Encoder::Anthropic(encoder) => frames(encoder.encode(event)),
        }
    }
}

/// A failed generation's problem, as the error response would carry it.
fn problem(error: &ChatError) -> serde_json::Value {
    chat_error(error.clone()).body()
}

/// Frames encoded as text, as the body's bytes.
fn frames(frames: Vec<String>) -> Vec<Bytes> {
    frames.into_iter().map(Bytes::from).collect()
}

pub use tessera_chats::final_event;

/// The body of an SSE response: the events encoded, with a keep-alive comment whenever
/// the generation is silent for `heartbeat`. A listener that disconnects only drops its
/// own subscription; the generation goes on.
pub fn body(
    events: EventStream,
    mut encoder: Encoder,
    heartbeat: Duration,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    let encoded = events.flat_map(move |event: Arc<GenerationEvent>| {
        stream::iter(encoder.encode(&event).into_iter().map(Some))
    });
    stream::unfold(Box::pin(encoded), move |mut encoded| async move {
        let next = tokio::time::timeout(heartbeat, encoded.next()).await;
        match next {
            Ok(Some(Some(bytes))) => Some((Ok(bytes), encoded)),
            Ok(Some(None) | None) => None,
            Err(_) => Some((Ok(Bytes::from_static(b": keep-alive\n\n")), encoded)),
        }
    })
}

/// An SSE response with the headers that keep proxies from buffering it.
pub fn sse(
    format: Format,
    builder: &mut actix_web::HttpResponseBuilder,
    body: impl Stream<Item = Result<Bytes, Infallible>> + 'static,
) -> HttpResponse {
    builder
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache, no-transform"))
        .insert_header(("X-Accel-Buffering", "no"));
    if format == Format::AiSdk {
        builder.insert_header(("x-vercel-ai-ui-message-stream", "v1"));
    }
    builder.streaming(body)
}
