//! rmcp's `StreamableHttpClient` (the HTTP half of its Streamable HTTP transport) over the
//! workspace's reqwest 0.12, following the SDK's own reqwest client: POSTs that answer with
//! JSON or an SSE stream, the optional GET stream, the session's DELETE, each with the
//! endpoint's headers. Answer bodies are bounded (the SDK's limits). The first failure to
//! reach the server is kept in a [`Failures`] slot, so the call can report it as such
//! whatever the SDK's lifecycle wraps it in.

use std::{
    borrow::Cow,
    collections::HashMap,
    error::Error as _,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream::BoxStream};
use reqwest::{
    StatusCode,
    header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue},
};
use rmcp::{
    model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage},
    transport::{
        common::http_header::{
            EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
        },
        streamable_http_client::{
            HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError,
            StreamableHttpPostResponse, StreamableHttpResponseLimits,
        },
    },
};
use sse_stream::{Sse, SseStream};
use tessera_mcp::CallError;
use tessera_webhooks_http::error_chain;

use crate::policy::TargetRefused;

/// The largest SSE event (the SDK's default), for the entry points not given a limit.
const MAX_SSE_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// How much of an HTTP error's body is kept for its message.
const ERROR_BODY_PREVIEW_BYTES: usize = 512;

/// A failure of the HTTP exchange itself (the SDK's `StreamableHttpError::Client`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpFailure(String);

type Failure = StreamableHttpError<HttpFailure>;

/// The first failure to reach the server during one call.
#[derive(Debug, Clone, Default)]
pub struct Failures(Arc<Mutex<Option<CallError>>>);

impl Failures {
    fn record(&self, error: CallError) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(error);
        }
    }

    pub fn take(&self) -> Option<CallError> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// One call's HTTP client: the shared reqwest client, the endpoint's headers (sent on every
/// request, never logged) and where failures are kept.
#[derive(Clone)]
pub struct McpHttp {
    pub http: reqwest::Client,
    pub headers: Arc<HeaderMap>,
    pub failures: Failures,
}

fn refusal(error: &reqwest::Error) -> Option<&TargetRefused> {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<TargetRefused>() {
            return Some(refused);
        }
        source = cause.source();
    }
    None
}

/// `text` without the endpoint's header values (nor the words of 8 characters or more in
/// them, such as a bearer token without its scheme), which a server may echo in an error.
fn redact(text: &str, headers: &HeaderMap) -> String {
    let mut text = text.to_owned();
    for value in headers.values() {
        let Ok(value) = value.to_str() else { continue };
        let secrets =
            std::iter::once(value).chain(value.split_whitespace().filter(|w| w.len() >= 8));
        for secret in secrets {
            if !secret.trim().is_empty() && text.contains(secret) {
                text = text.replace(secret, "[redacted]");
            }
        }
    }
    text
}

/// Whether a `Content-Type` value names `expected` (case and parameters aside).
fn media_type_is(value: &HeaderValue, expected: &str) -> bool {
    value
        .to_str()
        .ok()
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

impl McpHttp {
    /// A failed exchange: the target policy's refusal, or the server unreachable.
    fn send_failed(&self, error: reqwest::Error) -> Failure {
        let call_error = match refusal(&error) {
            Some(refused) => CallError::Refused(refused.to_string()),
            None => CallError::Unreachable(error_chain(&error)),
        };
        let message = call_error.to_string();
        self.failures.record(call_error);
        StreamableHttpError::Client(HttpFailure(message))
    }

    /// An HTTP error answer to a request.
    fn http_error(&self, status: StatusCode, body: &str) -> Failure {
        let body = redact(body.trim(), &self.headers);
        let detail = if body.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {body}")
        };
        self.failures.record(CallError::Unreachable(detail.clone()));
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            HttpStatusError::new(status.as_u16(), None).into()
        } else {
            StreamableHttpError::UnexpectedServerResponse(Cow::Owned(detail))
        }
    }

    fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        session_id: Option<&str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut headers = (*self.headers).clone();
        // The SDK's own headers (protocol version, standard MCP headers) after the endpoint's.
        for (name, value) in custom_headers {
            headers.insert(name, value);
        }
        if let Some(session_id) = session_id
            && let Ok(value) = HeaderValue::from_str(session_id)
        {
            headers.insert(HEADER_SESSION_ID, value);
        }
        let mut builder = self.http.request(method, uri).headers(headers);
        if let Some(token) = auth_header {
            builder = builder.bearer_auth(token);
        }
        builder
    }
}

/// The body as a stream of chunks (reqwest's `stream` feature is not needed for this).
fn body_stream(
    response: reqwest::Response,
) -> impl Stream<Item = Result<Bytes, HttpFailure>> + Send + 'static {
    futures_util::stream::unfold(Some(response), |response| async move {
        let mut response = response?;
        match response.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), Some(response))),
            Ok(None) => None,
            Err(error) => Some((Err(HttpFailure(error_chain(&error))), None)),
        }
    })
}

/// The whole body, refused past `max` bytes.
async fn read_bounded(response: reqwest::Response, max: usize) -> Result<Vec<u8>, Failure> {
    if response
        .content_length()
        .is_some_and(|length| length > max as u64)
    {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    let mut body = Vec::new();
    let mut chunks = std::pin::pin!(body_stream(response));
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(StreamableHttpError::Client)?;
        if chunk.len() > max - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most `max` bytes of the body, for an error's message.
async fn read_prefix(response: reqwest::Response, max: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = std::pin::pin!(body_stream(response));
    while body.len() < max {
        match chunks.next().await {
            Some(Ok(chunk)) => {
                let take = chunk.len().min(max - body.len());
                body.extend_from_slice(&chunk[..take]);
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// An SSE stream whose events may not exceed `max_event` bytes (the SDK's limit, which its
/// own clients enforce on the raw bytes before parsing).
fn sse_events(
    response: reqwest::Response,
    max_event: usize,
    failures: Option<Failures>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let bounded = BoundedEvents {
        inner: Box::pin(body_stream(response)),
        failures,
        max_event,
        event: 0,
        line: 0,
        after_cr: false,
        failed: false,
    };
    SseStream::from_bytes_stream(bounded).boxed()
}

#[derive(Debug, thiserror::Error)]
enum SseBodyError {
    #[error("{0}")]
    Body(HttpFailure),
    #[error("an SSE event exceeded {0} bytes")]
    TooLarge(usize),
}

struct BoundedEvents<S> {
    inner: Pin<Box<S>>,
    /// Where a broken answer stream is recorded (the POSTs' streams, not the GET's).
    failures: Option<Failures>,
    max_event: usize,
    /// Bytes of the event so far (its finished lines), and of the line being read.
    event: usize,
    line: usize,
    after_cr: bool,
    failed: bool,
}

impl<S> BoundedEvents<S> {
    /// Counts `chunk`; false once an event is too large. A blank line ends an event; CR, LF
    /// and CRLF end lines.
    fn observe(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            let after_cr = std::mem::take(&mut self.after_cr);
            match byte {
                b'\n' if after_cr => {}
                b'\r' | b'\n' => {
                    if self.line == 0 {
                        self.event = 0;
                    } else {
                        self.event += self.line + 1;
                        self.line = 0;
                    }
                    self.after_cr = byte == b'\r';
                }
                _ => self.line += 1,
            }
            if self.event + self.line > self.max_event {
                return false;
            }
        }
        true
    }
}

impl<S> Stream for BoundedEvents<S>
where
    S: Stream<Item = Result<Bytes, HttpFailure>>,
{
    type Item = Result<Bytes, SseBodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                if self.observe(&chunk) {
                    Poll::Ready(Some(Ok(chunk)))
                } else {
                    self.failed = true;
                    Poll::Ready(Some(Err(SseBodyError::TooLarge(self.max_event))))
                }
            }
            Poll::Ready(Some(Err(error))) => {
                self.failed = true;
                if let Some(failures) = &self.failures {
                    failures.record(CallError::Unreachable(format!(
                        "the answer's event stream broke: {error}"
                    )));
                }
                Poll::Ready(Some(Err(SseBodyError::Body(error))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl StreamableHttpClient for McpHttp {
    type Error = HttpFailure;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let session_attached = session_id.is_some();
        let response = self
            .request(
                reqwest::Method::POST,
                &uri,
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )
            .header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .json(&message)
            .send()
            .await
            .map_err(|error| self.send_failed(error))?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let awaits_no_response = !matches!(message, ClientJsonRpcMessage::Request(_));
        let content_type = response.headers().get(CONTENT_TYPE).cloned();
        let is_json = content_type
            .as_ref()
            .is_some_and(|value| media_type_is(value, JSON_MIME_TYPE));
        let new_session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if !status.is_success() {
            if status == StatusCode::NOT_FOUND && session_attached {
                self.failures.record(CallError::Unreachable(
                    "HTTP 404: the server no longer knows the session".into(),
                ));
                return Err(StreamableHttpError::SessionExpired);
            }
            // A JSON-RPC error sent with an HTTP error status is the server's answer.
            if is_json && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                let body = read_bounded(response, limits.max_json_response_size).await?;
                if let Ok(error @ JsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(error, new_session));
                }
                let preview =
                    String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_PREVIEW_BYTES)])
                        .into_owned();
                return Err(self.http_error(status, &preview));
            }
            let preview = read_prefix(response, ERROR_BODY_PREVIEW_BYTES).await;
            return Err(self.http_error(status, &preview));
        }
        if awaits_no_response && response.content_length() == Some(0) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        match content_type {
            Some(value) if media_type_is(&value, EVENT_STREAM_MIME_TYPE) => {
                Ok(StreamableHttpPostResponse::Sse(
                    sse_events(
                        response,
                        limits.max_sse_event_size,
                        Some(self.failures.clone()),
                    ),
                    new_session,
                ))
            }
            Some(value) if media_type_is(&value, JSON_MIME_TYPE) => {
                let body = read_bounded(response, limits.max_json_response_size).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                    Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                    Err(error) => Err(StreamableHttpError::Deserialize(error)),
                }
            }
            // Servers that answer a notification with an empty 200 and no content type.
            _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()),
            )),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        let response = self
            .request(
                reqwest::Method::DELETE,
                &uri,
                Some(&session_id),
                auth_header,
                custom_headers,
            )
            .send()
            .await
            .map_err(|error| StreamableHttpError::Client(HttpFailure(error_chain(&error))))?;
        // 405: the server does not let clients end sessions; it will expire the session.
        if response.status().is_success() || response.status() == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {} ending the session", response.status()),
            )))
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            MAX_SSE_EVENT_BYTES,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        let mut request = self
            .request(
                reqwest::Method::GET,
                &uri,
                session_id.as_deref(),
                auth_header,
                custom_headers,
            )
            .header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            );
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        // The GET stream only carries what the server sends unasked; its failures are not
        // the call's (a server without one answers 405).
        let response = request
            .send()
            .await
            .map_err(|error| StreamableHttpError::Client(HttpFailure(error_chain(&error))))?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} opening the event stream"),
            )));
        }
        match response.headers().get(CONTENT_TYPE) {
            Some(value)
                if media_type_is(value, EVENT_STREAM_MIME_TYPE)
                    || media_type_is(value, JSON_MIME_TYPE) => {}
            other => {
                return Err(StreamableHttpError::UnexpectedContentType(other.map(
                    |value| String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )));
            }
        }
        Ok(sse_events(response, max_sse_event_size, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_lose_the_header_values_they_echo() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            HeaderValue::from_static("Bearer s3cret-token"),
        );
        headers.insert("x-tenant", HeaderValue::from_static("acme"));
        assert_eq!(
            redact(
                "bad token s3cret-token for acme (Bearer s3cret-token)",
                &headers
            ),
            "bad token [redacted] for [redacted] ([redacted])"
        );
    }

    #[test]
    fn oversized_events_are_refused_and_blank_lines_end_events() {
        let chunks = futures_util::stream::iter(Vec::<Result<Bytes, HttpFailure>>::new());
        let mut events = BoundedEvents {
            inner: Box::pin(chunks),
            failures: None,
            max_event: 16,
            event: 0,
            line: 0,
            after_cr: false,
            failed: false,
        };
        assert!(events.observe(b"data: 0123456\r\n\r\ndata: 0123456\n\n"));
        assert!(!events.observe(b"data: 0123456\ndata: 01"));
    }
}
