//! One upstream resource (`…/chat/completions`, `…/messages`, `…/embeddings`) and how it is
//! called: the HTTP client, the credentials' headers, the timeouts and the retries; and how a
//! failed attempt becomes a `ProviderError`.

use std::{
    error::Error as _,
    fmt,
    hash::{BuildHasher, RandomState},
    time::{Duration, Instant},
};

use reqwest::{
    StatusCode, Url,
    header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue},
};
use tessera_kernel::TraceHeaders;
use tessera_models::ProviderError;

use crate::{
    errors::{clip, error_details},
    settings::{ApiKey, ConfigError, RetryPolicy, UpstreamSettings},
    thread_clients::{ClientSettings, ThreadClients},
};

/// The most of an error body read for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// One resource of a provider and how it is called: the HTTP client, the credentials, the
/// timeouts and the retries.
pub struct Upstream {
    http: ThreadClients,
    endpoint: Url,
    /// The credentials and fixed headers of every request (values marked sensitive).
    headers: Vec<(HeaderName, HeaderValue)>,
    trace_headers: Option<TraceHeaders>,
    first_byte_timeout: Duration,
    idle_timeout: Duration,
    retry: RetryPolicy,
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("endpoint", &self.endpoint.as_str())
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, value)| {
                        (
                            name.as_str(),
                            if value.is_sensitive() {
                                "<redacted>"
                            } else {
                                value.to_str().unwrap_or("?")
                            },
                        )
                    })
                    .collect::<Vec<_>>(),
            )
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl Upstream {
    /// Checks the settings and builds the HTTP client for `endpoint`, whose every request
    /// carries `headers` (credentials: build them with [`credential_header`]). No request is
    /// made.
    pub fn connect(
        settings: &UpstreamSettings,
        endpoint: Url,
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Self, ConfigError> {
        if settings.first_byte_timeout.is_zero() {
            return Err(ConfigError::ZeroTimeout("first-byte"));
        }
        if settings.idle_timeout.is_zero() {
            return Err(ConfigError::ZeroTimeout("idle"));
        }
        let mut client = ClientSettings {
            connect_timeout: settings.connect_timeout.min(settings.first_byte_timeout),
            extra_roots: Vec::new(),
        };
        if let Some(pem) = &settings.extra_roots_pem {
            let certificates = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .map_err(|e| ConfigError::RootCertificates(e.to_string()))?;
            if certificates.is_empty() {
                return Err(ConfigError::RootCertificates(
                    "the PEM bundle holds no certificate".into(),
                ));
            }
            client.extra_roots = certificates;
        }
        let http = client
            .clients()
            .map_err(|e| ConfigError::Client(error_chain(&e)))?;
        Ok(Self {
            http,
            endpoint,
            headers,
            trace_headers: settings.trace_headers,
            first_byte_timeout: settings.first_byte_timeout,
            idle_timeout: settings.idle_timeout,
            retry: settings.retry,
        })
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// The longest silence allowed between two chunks of an answer.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// Sends the request until an answer begins, retrying what may be retried.
    pub async fn send(&self, body: &[u8]) -> Result<reqwest::Response, ProviderError> {
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
        for (name, value) in &self.headers {
            request = request.header(name, value.clone());
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
            // 529: Anthropic's "overloaded".
            429 | 503 | 529 => ProviderError::Unavailable {
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

/// `base_url` + `/` + `resource` (unless it already ends so).
pub fn endpoint_of(base_url: &str, resource: &str) -> Result<Url, ConfigError> {
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

/// The header value carrying a key (`prefix` + the key, e.g. `Bearer sk-…`), marked
/// sensitive so that no log shows it. The key must be printable ASCII without spaces.
pub fn credential_header(prefix: &str, key: &ApiKey) -> Result<HeaderValue, ConfigError> {
    let key = key.expose();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_graphic()) {
        return Err(ConfigError::ApiKey);
    }
    let mut header =
        HeaderValue::from_str(&format!("{prefix}{key}")).map_err(|_| ConfigError::ApiKey)?;
    header.set_sensitive(true);
    Ok(header)
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
pub fn error_chain(error: &reqwest::Error) -> String {
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

    fn upstream(retry: RetryPolicy) -> Upstream {
        Upstream::connect(
            &UpstreamSettings {
                connect_timeout: Duration::from_secs(1),
                first_byte_timeout: Duration::from_secs(1),
                idle_timeout: Duration::from_secs(1),
                retry,
                extra_roots_pem: None,
                trace_headers: None,
            },
            endpoint_of("http://127.0.0.1:1/v1", "messages").unwrap(),
            vec![(
                HeaderName::from_static("x-api-key"),
                credential_header("", &ApiKey::new("sk-topsecret")).unwrap(),
            )],
        )
        .unwrap()
    }

    #[test]
    fn the_endpoint_is_the_base_url_with_the_resource() {
        let url = |base: &str| endpoint_of(base, "chat/completions").map(|u| u.to_string());
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
                matches!(url(bad), Err(ConfigError::BaseUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_settings_are_refused_and_secrets_never_show() {
        let settings = |first_byte: Duration, pem: Option<&str>| UpstreamSettings {
            connect_timeout: Duration::from_secs(1),
            first_byte_timeout: first_byte,
            idle_timeout: Duration::from_secs(1),
            retry: RetryPolicy::none(),
            extra_roots_pem: pem.map(str::to_owned),
            trace_headers: None,
        };
        let endpoint = endpoint_of("http://127.0.0.1:1/v1", "messages").unwrap();
        assert_eq!(
            Upstream::connect(
                &settings(Duration::ZERO, None),
                endpoint.clone(),
                Vec::new()
            )
            .err()
            .map(|e| e.to_string()),
            Some(ConfigError::ZeroTimeout("first-byte").to_string())
        );
        assert!(matches!(
            Upstream::connect(
                &settings(Duration::from_secs(1), Some("no certificate here")),
                endpoint,
                Vec::new()
            ),
            Err(ConfigError::RootCertificates(_))
        ));
        assert_eq!(
            credential_header("Bearer ", &ApiKey::new("sk bad")).err(),
            Some(ConfigError::ApiKey)
        );
        let text = format!("{:?}", upstream(RetryPolicy::none()));
        assert!(!text.contains("topsecret"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
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
        let upstream = upstream(RetryPolicy {
            max_attempts: 5,
            backoff_base: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
        });
        for _ in 0..50 {
            let first = upstream.delay(1, None);
            assert!((50..=100).contains(&first.as_millis()), "{first:?}");
            let second = upstream.delay(2, None);
            assert!((100..=200).contains(&second.as_millis()), "{second:?}");
            let capped = upstream.delay(9, None);
            assert!((150..=300).contains(&capped.as_millis()), "{capped:?}");
        }
        assert_eq!(
            upstream.delay(1, Some(Duration::from_millis(120))),
            Duration::from_millis(120)
        );
        assert_eq!(
            upstream.delay(1, Some(Duration::from_secs(60))),
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
