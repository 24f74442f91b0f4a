//! The `GuardrailHook` port over HTTP(S): one reqwest client (rustls, the Mozilla roots)
//! that POSTs what a policy's hook is asked about and reads its verdict. It never follows
//! redirects and, unless the target policy allows private targets, refuses a service on
//! the deployment's own network, by literal address or by what its name resolves to (the
//! webhook sender's `PublicAddressResolver`, checked on the addresses it connects to).
//!
//! The protocol (decision 0060): `POST <url>` with `Content-Type: application/json` and
//! `{"direction": "input" | "output", "texts": ["…", …]}`; the service answers 200 with
//! `{"action": "allow"}` or `{"action": "block", "reason": "…"}` (the reason optional).
//! Any other status is the service being unavailable; any other body is an invalid
//! answer. The texts are what the provider would read (masked and pseudonymised), or the
//! answer as the model wrote it.

use async_trait::async_trait;
use reqwest::{header::CONTENT_TYPE, redirect};
use serde::{Deserialize, Serialize};
use tessera_guardrails::{
    Direction, GuardrailHook, HookError, HookRequest, HookSettings, HookVerdict,
};
use tessera_kernel::TargetPolicy;
use tessera_webhooks_http::{PublicAddressResolver, error_chain, private_literal};

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("guardrail hook HTTP client: {0}")]
pub struct ClientError(String);

/// The most bytes of a verdict read; a longer answer is invalid.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Asks guardrail services with reqwest.
#[derive(Clone)]
pub struct HttpGuardrailHook {
    http: reqwest::Client,
    targets: TargetPolicy,
}

#[derive(Serialize)]
struct Question<'a> {
    direction: Direction,
    texts: &'a [&'a str],
}

#[derive(Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
enum Answer {
    Allow,
    Block {
        #[serde(default)]
        reason: Option<String>,
    },
}

impl HttpGuardrailHook {
    /// A client reaching only the targets `targets` allows. Each call's timeout is its
    /// policy's (`HookSettings::timeout`).
    pub fn new(targets: TargetPolicy) -> Result<Self, ClientError> {
        // reqwest's rustls backend needs a process-wide crypto provider; keep the one the
        // process installed, or install the same one the API does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .redirect(redirect::Policy::none())
            .user_agent(concat!("tessera-guardrails/", env!("CARGO_PKG_VERSION")));
        if !targets.allow_private_targets {
            builder = builder.dns_resolver(PublicAddressResolver::shared());
        }
        let http = builder.build().map_err(|e| ClientError(error_chain(&e)))?;
        Ok(Self { http, targets })
    }

    /// A literal private address in the URL (never resolved, so the resolver does not see it).
    fn refuse_private_literal(&self, url: &reqwest::Url) -> Result<(), HookError> {
        match private_literal(url, self.targets) {
            Some(ip) => Err(HookError::Unavailable(format!(
                "{ip} is a private, loopback or link-local address, which guardrail hooks may not target"
            ))),
            None => Ok(()),
        }
    }
}

fn failed(error: reqwest::Error) -> HookError {
    if error.is_timeout() {
        HookError::Timeout
    } else {
        HookError::Unavailable(error_chain(&error))
    }
}

#[async_trait]
impl GuardrailHook for HttpGuardrailHook {
    async fn check(
        &self,
        settings: &HookSettings,
        request: HookRequest<'_>,
    ) -> Result<HookVerdict, HookError> {
        let url = reqwest::Url::parse(&settings.url)
            .map_err(|e| HookError::Unavailable(format!("invalid URL: {e}")))?;
        self.refuse_private_literal(&url)?;
        let question = Question {
            direction: request.direction,
            texts: request.texts,
        };
        let body = serde_json::to_vec(&question)
            .map_err(|e| HookError::Unavailable(format!("could not write the question: {e}")))?;
        let mut response = (self.http.post(url))
            .timeout(settings.timeout)
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(failed)?;
        let status = response.status();
        if !status.is_success() {
            return Err(HookError::Unavailable(format!("it answered HTTP {status}")));
        }
        let mut answer = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(HookError::InvalidAnswer(format!(
                    "it is longer than {MAX_ANSWER_BYTES} bytes"
                )));
            }
            answer.extend_from_slice(&chunk);
        }
        match serde_json::from_slice(&answer) {
            Ok(Answer::Allow) => Ok(HookVerdict::Allow),
            Ok(Answer::Block { reason }) => Ok(HookVerdict::Block {
                reason: reason.unwrap_or_default(),
            }),
            Err(error) => Err(HookError::InvalidAnswer(error.to_string())),
        }
    }
}
