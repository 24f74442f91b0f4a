//! The `WebhookSender` port over HTTP(S): one reqwest client (rustls, the Mozilla roots) that
//! POSTs signed deliveries with a total timeout and never follows redirects, so a receiver
//! cannot bounce a delivery to a host the URL checks would have refused. Unless the target
//! policy allows private targets, a delivery is refused when its host is a private address
//! or resolves only to such addresses, checked on the addresses it then connects to. Any
//! answer is a result (its status decides delivery); only a failure to get one is an error.

mod resolver;

use std::{error::Error as _, net::IpAddr, time::Duration};

use async_trait::async_trait;
use reqwest::{header::CONTENT_TYPE, redirect};
use tessera_kernel::TraceHeaders;
use tessera_webhooks::{
    OutgoingRequest, SendError, TargetPolicy, WebhookSender, is_private_address,
};

pub use resolver::PublicAddressResolver;

/// The private address `url` names literally, when `policy` refuses private targets (a
/// literal is never resolved, so `PublicAddressResolver` does not see it).
pub fn private_literal(url: &reqwest::Url, policy: TargetPolicy) -> Option<IpAddr> {
    if policy.allow_private_targets {
        return None;
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return None,
    };
    is_private_address(literal).then_some(literal)
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("webhook HTTP client: {0}")]
pub struct ClientError(String);

/// Sends deliveries with reqwest.
#[derive(Clone)]
pub struct HttpWebhookSender {
    http: reqwest::Client,
    policy: TargetPolicy,
    trace_headers: Option<TraceHeaders>,
}

/// The error and its causes on one line; the causes say what failed (refused connection,
/// DNS, TLS). Shared by the adapters that call out with reqwest.
pub fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl HttpWebhookSender {
    /// A sender whose attempts give up after `timeout` (connecting, sending and reading the
    /// answer's head together), reaching only the targets `policy` allows.
    pub fn new(timeout: Duration, policy: TargetPolicy) -> Result<Self, ClientError> {
        // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(redirect::Policy::none())
            .user_agent(concat!("tessera-webhooks/", env!("CARGO_PKG_VERSION")));
        if !policy.allow_private_targets {
            builder = builder.dns_resolver(PublicAddressResolver::shared());
        }
        let http = builder.build().map_err(|e| ClientError(error_chain(&e)))?;
        Ok(Self {
            http,
            policy,
            trace_headers: None,
        })
    }

    /// Sends the current trace's context (W3C `traceparent`) with every delivery.
    pub fn with_trace_headers(mut self, headers: TraceHeaders) -> Self {
        self.trace_headers = Some(headers);
        self
    }

    /// A literal private address in the URL (never resolved, so the resolver does not see it).
    fn refuse_private_literal(&self, url: &str) -> Result<(), SendError> {
        let url = reqwest::Url::parse(url).map_err(|e| SendError(format!("invalid URL: {e}")))?;
        match private_literal(&url, self.policy) {
            Some(ip) => Err(SendError(format!(
                "{ip} is a private, loopback or link-local address, which webhooks may not target"
            ))),
            None => Ok(()),
        }
    }
}

#[async_trait]
impl WebhookSender for HttpWebhookSender {
    async fn post(&self, request: &OutgoingRequest) -> Result<u16, SendError> {
        self.refuse_private_literal(&request.url)?;
        let mut builder = self
            .http
            .post(&request.url)
            .header(CONTENT_TYPE, "application/json")
            .body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        for (name, value) in self
            .trace_headers
            .map(|headers| headers())
            .unwrap_or_default()
        {
            builder = builder.header(name, value);
        }
        let response = builder.send().await.map_err(|e| {
            if e.is_timeout() {
                SendError("the receiver did not answer in time".into())
            } else {
                SendError(error_chain(&e))
            }
        })?;
        Ok(response.status().as_u16())
    }
}
