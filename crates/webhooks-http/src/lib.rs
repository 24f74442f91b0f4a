//! The `WebhookSender` port over HTTP(S): one reqwest client (rustls, the Mozilla roots) that
//! POSTs signed deliveries with a total timeout and never follows redirects, so a receiver
//! cannot bounce a delivery to a host the URL checks would have refused. Any answer is a
//! result (its status decides delivery); only a failure to get one is an error.

use std::{error::Error as _, time::Duration};

use async_trait::async_trait;
use reqwest::{header::CONTENT_TYPE, redirect};
use tessera_webhooks::{OutgoingRequest, SendError, WebhookSender};

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("webhook HTTP client: {0}")]
pub struct ClientError(String);

/// Sends deliveries with reqwest.
#[derive(Clone)]
pub struct HttpWebhookSender {
    http: reqwest::Client,
}

fn error_chain(error: &reqwest::Error) -> String {
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
    /// answer's head together).
    pub fn new(timeout: Duration) -> Result<Self, ClientError> {
        // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(redirect::Policy::none())
            .user_agent(concat!("tessera-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError(error_chain(&e)))?;
        Ok(Self { http })
    }
}

#[async_trait]
impl WebhookSender for HttpWebhookSender {
    async fn post(&self, request: &OutgoingRequest) -> Result<u16, SendError> {
        let mut builder = self
            .http
            .post(&request.url)
            .header(CONTENT_TYPE, "application/json")
            .body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
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
