//! The adapter: building it, calling the upstream, retrying, and classifying failures.

use std::{
    error::Error as _,
    fmt,
    hash::{BuildHasher, RandomState},
    sync::Arc,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use reqwest::{
    StatusCode, Url,
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue},
};
use tessera_kernel::TraceHeaders;
use tessera_models::{
    Capabilities, ChatModel, ChatRequest, ChatStream, JsonSchemaStyle, ProviderError,
};
use tessera_prompts::TokenCounter;
use tessera_tokenizer::{Encoding, TiktokenCounter};

use crate::{
    config::{ConfigError, OpenAiConfig, RetryPolicy},
    estimate, events,
    request::WireRequest,
    thread_clients::{ClientSettings, ThreadClients},
    translate::{clip, error_details},
};

/// The most of an error body read for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A chat model behind an OpenAI-compatible endpoint. Cheap to share (`Arc`); one instance
/// serves every model of its endpoint (the request names the model).
pub struct OpenAiChatModel {
    upstream: Upstream,
    capabilities: Capabilities,
    json_schema_style: JsonSchemaStyle,
    tokenizer: Arc<dyn TokenCounter>,
}

/// One resource of an OpenAI-compatible server (`…/chat/completions`, `…/embeddings`) and
/// how it is called: the HTTP client, the key, the timeouts and the retries.
pub(crate) struct Upstream {
    http: ThreadClients,
    endpoint: Url,
    authorization: Option<HeaderValue>,
    trace_headers: Option<TraceHeaders>,
    first_byte_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    retry: RetryPolicy,
}

impl fmt::Debug for OpenAiChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModel")
            .field("upstream", &self.upstream)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("endpoint", &self.endpoint.as_str())
            .field(
                "api_key",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl OpenAiChatModel {
    /// Checks the configuration and builds the HTTP client (no request is made).
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        let upstream = Upstream::connect(&config, CHAT_COMPLETIONS)?;
        let tokenizer = TiktokenCounter::shared(Encoding::O200kBase)
            .map_err(|e| ConfigError::Tokenizer(e.to_string()))?;
        Ok(Self {
            upstream,
            capabilities: config.capabilities,
            json_schema_style: config.json_schema_style,
            tokenizer: Arc::new(tokenizer),
        })
    }

    /// Counts tokens with another tokenizer (a model that does not use `o200k_base`).
    pub fn with_tokenizer(mut self, tokenizer: Arc<dyn TokenCounter>) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// The URL requests go to (`…/chat/completions`).
    pub fn endpoint(&self) -> &Url {
        &self.upstream.endpoint
    }
}

impl Upstream {
    #[cfg(test)]
    pub(crate) fn endpoint_str(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Checks the configuration and builds the HTTP client for `base_url` + `/resource`
    /// (no request is made).
    pub(crate) fn connect(config: &OpenAiConfig, resource: &str) -> Result<Self, ConfigError> {
        let endpoint = endpoint_of(&config.base_url, resource)?;
        if config.first_byte_timeout.is_zero() {
            return Err(ConfigError::ZeroTimeout("first-byte"));
        }
        if config.idle_timeout.is_zero() {
            return Err(ConfigError::ZeroTimeout("idle"));
        }
        let authorization = match config.api_key.as_ref().map(|key| key.expose()) {
            None | Some("") => None,
            Some(key) => {
                if !key.chars().all(|c| c.is_ascii_graphic()) {
                    return Err(ConfigError::ApiKey);
                }
                let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                    .map_err(|_| ConfigError::ApiKey)?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let mut settings = ClientSettings {
            connect_timeout: config.connect_timeout.min(config.first_byte_timeout),
            extra_roots: Vec::new(),
        };
        if let Some(pem) = &config.extra_roots_pem {
            let certificates = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .map_err(|e| ConfigError::RootCertificates(e.to_string()))?;
            if certificates.is_empty() {
                return Err(ConfigError::RootCertificates(
                    "the PEM bundle holds no certificate".into(),
                ));
            }
            settings.extra_roots = certificates;
        }
        let http = settings
            .clients()
            .map_err(|e| ConfigError::Client(error_chain(&e)))?;
        Ok(Self {
            http,
            endpoint,
            authorization,
            trace_headers: config.trace_headers,
            first_byte_timeout: config.first_byte_timeout,
            idle_timeout: config.idle_timeout,
            retry: config.retry,
        })
    }

    /// Sends the request until an answer begins, retrying what may be retried.
    pub(crate) async fn send(&self, body: &[u8]) -> Result<reqwest::Response, ProviderError> {
        let attempts = self.retry.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let failure = match self.attempt(body).await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => Failure::of_response(response, self.idle_timeout).await,
                Err(failure) => failure,
            };
            if !failure.retryable || attempt >= attempts {
                tracing::debug!(
                    endpoint = %self.endpoint,
                    attempt,
                    error = %failure.error,
                    "the model provider failed"
                );
                return Err(failure.error);
            }
            let delay = self.delay(attempt, failure.retry_after);
            tracing::warn!(
                endpoint = %self.endpoint,
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %failure.error,
                "retrying the model provider"
            );
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// One request, up to the response's headers.
    async fn attempt(&self, body: &[u8]) -> Result<reqwest::Response, Failure> {
        let http = self.http.get().map_err(|e| Failure::of_transport(&e))?;
        let mut request = http
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream, application/json")
            .body(body.to_vec());
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        for (name, value) in self
            .trace_headers
            .map(|headers| headers())
            .unwrap_or_default()
        {
            request = request.header(name, value);
        }
        match tokio::time::timeout(self.first_byte_timeout, request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(Failure::of_transport(&e)),
            Err(_) => Err(Failure {
                error: ProviderError::Timeout,
                retryable: false,
                retry_after: None,
            }),
        }
    }

    /// How long to wait before attempt `attempt + 1`.
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let cap = self.retry.max_delay;
        if let Some(asked) = retry_after {
            return asked.min(cap);
        }
        let exponent = attempt.saturating_sub(1).min(20);
        let backoff = self
            .retry
            .backoff_base
            .saturating_mul(1 << exponent)
            .min(cap);
        // Jitter in [50 %, 100 %] so that many clients rate limited together do not retry
        // together.
        let factor = 0.5 + 0.5 * unit_random();
        Duration::try_from_secs_f64(backoff.as_secs_f64() * factor).unwrap_or(backoff)
    }
}

#[async_trait]
impl ChatModel for OpenAiChatModel {
    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn tokenizer(&self) -> Arc<dyn TokenCounter> {
        Arc::clone(&self.tokenizer)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ChatStream, ProviderError> {
        let body = serde_json::to_vec(&WireRequest::new(&request, self.json_schema_style))
            .map_err(|e| {
                ProviderError::InvalidRequest(format!("the request cannot be encoded: {e}"))
            })?;
        let response = self.upstream.send(&body).await?;
        let events = events::answer(response, self.upstream.idle_timeout).await?;
        Ok(estimate::fill_missing_usage(
            events,
            Arc::clone(&self.tokenizer),
            request,
        ))
    }
}

/// A failed attempt: the error it would be, and whether another attempt may help.
struct Failure {
    error: ProviderError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn of_transport(error: &reqwest::Error) -> Self {
        let detail = error_chain(error);
        if error.is_timeout() {
            Self {
                error: ProviderError::Timeout,
                retryable: false,
                retry_after: None,
            }
        } else if error.is_connect() {
            Self {
                error: ProviderError::Unavailable {
                    message: format!("cannot connect to the provider: {detail}"),
                    retry_after: None,
                },
                retryable: true,
                retry_after: None,
            }
        } else {
            // Typically a kept-alive connection the server closed before answering.
            Self {
                error: ProviderError::Upstream {
                    status: None,
                    message: format!("the request to the provider failed: {detail}"),
                },
                retryable: error.is_request(),
                retry_after: None,
            }
        }
    }

    async fn of_response(response: reqwest::Response, idle_timeout: Duration) -> Self {
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = error_body(response, idle_timeout).await;
        let message = error_message(status, &body);
        let code = status.as_u16();
        let error = match code {
            429 | 503 => ProviderError::Unavailable {
                message,
                retry_after,
            },
            400 | 404 | 413 | 422 => ProviderError::InvalidRequest(message),
            401 | 403 => ProviderError::Upstream {
                status: Some(code),
                message: format!("the provider rejected the credentials (HTTP {code}): {message}"),
            },
            408 => ProviderError::Timeout,
            _ => ProviderError::Upstream {
                status: Some(code),
                message,
            },
        };
        Self {
            error,
            retryable: code == 429 || status.is_server_error(),
            retry_after,
        }
    }
}

const CHAT_COMPLETIONS: &str = "chat/completions";

/// `base_url` + `/chat/completions` (unless it already ends so).
#[cfg(test)]
fn endpoint(base_url: &str) -> Result<Url, ConfigError> {
    endpoint_of(base_url, CHAT_COMPLETIONS)
}

/// `base_url` + `/` + `resource` (unless it already ends so).
fn endpoint_of(base_url: &str, resource: &str) -> Result<Url, ConfigError> {
    let refuse = |reason: &str| ConfigError::BaseUrl {
        url: base_url.to_owned(),
        reason: reason.to_owned(),
    };
    let mut url = Url::parse(base_url.trim()).map_err(|e| refuse(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse("the scheme must be http or https"));
    }
    if url.cannot_be_a_base() || url.host().is_none() {
        return Err(refuse("it has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("credentials belong in the API key, not in the URL"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(refuse("it must have no query or fragment"));
    }
    let path = url.path().trim_end_matches('/').to_owned();
    if !path.ends_with(&format!("/{resource}")) {
        url.set_path(&format!("{path}/{resource}"));
    }
    Ok(url)
}

/// `Retry-After` in seconds, or `retry-after-ms` (OpenAI, Azure) in milliseconds. The
/// HTTP-date form is ignored (the backoff applies).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.trim().parse::<f64>().ok())
    };
    number("retry-after-ms")
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
        .or_else(|| number("retry-after").and_then(|s| Duration::try_from_secs_f64(s).ok()))
}

/// The start of an error response's body, read within the idle timeout (empty if not).
async fn error_body(mut response: reqwest::Response, idle_timeout: Duration) -> Vec<u8> {
    let read = async {
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = MAX_ERROR_BODY.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= MAX_ERROR_BODY {
                break;
            }
        }
        body
    };
    let started = Instant::now();
    match tokio::time::timeout(idle_timeout, read).await {
        Ok(body) => body,
        Err(_) => {
            tracing::debug!(
                waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                "the provider's error body did not arrive in time"
            );
            Vec::new()
        }
    }
}

/// The upstream's own words: `error.message` of its JSON, else its text, else the status.
fn error_message(status: StatusCode, body: &[u8]) -> String {
    let from_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|document| error_details(&document).0);
    if let Some(message) = from_json.filter(|m| !m.is_empty()) {
        return message;
    }
    let text = clip(&String::from_utf8_lossy(body));
    if !text.is_empty() {
        return text;
    }
    match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    }
}

/// An error and its sources, without the URL.
pub(crate) fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    if let Some(url) = error.url() {
        text = text.replace(&format!(" ({url})"), "");
        text = text.replace(url.as_str(), "the provider");
    }
    text
}

/// A number in [0, 1), good enough for jitter.
fn unit_random() -> f64 {
    let bits = RandomState::new().hash_one(Instant::now()) >> 11;
    bits as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_the_base_url_with_chat_completions() {
        let url = |base: &str| endpoint(base).map(|u| u.to_string());
        assert_eq!(
            url("https://api.openai.com/v1").unwrap(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url("http://127.0.0.1:11434/v1/").unwrap(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            url("http://localhost:8080").unwrap(),
            "http://localhost:8080/chat/completions"
        );
        assert_eq!(
            url("http://h/v1/chat/completions").unwrap(),
            "http://h/v1/chat/completions"
        );
        for bad in [
            "ftp://h/v1",
            "not a url",
            "https://user:pw@h/v1",
            "https://h/v1?key=1",
            "mailto:a@b",
        ] {
            assert!(
                matches!(endpoint(bad), Err(ConfigError::BaseUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_configurations_are_refused() {
        let config = OpenAiConfig::new("http://127.0.0.1:1/v1");
        assert_eq!(
            OpenAiChatModel::new(config.clone().with_api_key("sk bad")).err(),
            Some(ConfigError::ApiKey)
        );
        assert_eq!(
            OpenAiChatModel::new(
                config
                    .clone()
                    .with_timeouts(Duration::ZERO, Duration::from_secs(1))
            )
            .err(),
            Some(ConfigError::ZeroTimeout("first-byte"))
        );
        let mut roots = config.clone();
        roots.extra_roots_pem = Some("no certificate here".into());
        assert!(matches!(
            OpenAiChatModel::new(roots),
            Err(ConfigError::RootCertificates(_))
        ));
        let model = OpenAiChatModel::new(config.with_api_key("sk-topsecret")).unwrap();
        let text = format!("{model:?}");
        assert!(!text.contains("topsecret"), "{text}");
        assert_eq!(model.tokenizer().encoding(), "o200k_base");
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&dated), None);
        dated.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&dated), None);
    }

    #[test]
    fn the_delay_doubles_with_jitter_and_is_capped() {
        let model = OpenAiChatModel::new(OpenAiConfig::new("http://127.0.0.1:1/v1").with_retry(
            RetryPolicy {
                max_attempts: 5,
                backoff_base: Duration::from_millis(100),
                max_delay: Duration::from_millis(300),
            },
        ))
        .unwrap();
        for _ in 0..50 {
            let first = model.upstream.delay(1, None);
            assert!((50..=100).contains(&first.as_millis()), "{first:?}");
            let second = model.upstream.delay(2, None);
            assert!((100..=200).contains(&second.as_millis()), "{second:?}");
            let capped = model.upstream.delay(9, None);
            assert!((150..=300).contains(&capped.as_millis()), "{capped:?}");
        }
        assert_eq!(
            model.upstream.delay(1, Some(Duration::from_millis(120))),
            Duration::from_millis(120)
        );
        assert_eq!(
            model.upstream.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(300)
        );
    }

    #[test]
    fn error_messages_prefer_the_upstream_json() {
        assert_eq!(
            error_message(
                StatusCode::BAD_REQUEST,
                br#"{"error":{"message":"context too long","type":"invalid_request_error"}}"#
            ),
            "context too long"
        );
        assert_eq!(
            error_message(StatusCode::BAD_GATEWAY, b"  upstream down \n"),
            "upstream down"
        );
        assert_eq!(
            error_message(StatusCode::SERVICE_UNAVAILABLE, b""),
            "HTTP 503 Service Unavailable"
        );
    }
}
