//! Recording what the HTTP layer and the background loops observe.

use std::time::Duration;

use super::names;

/// One HTTP request, labelled by its route template (`unmatched` when no route matched)
/// and a known method (`_OTHER` for the rest, as the OpenTelemetry conventions spell it).
pub fn http_request(method: &str, route: Option<&str>, status: u16, elapsed: Duration) {
    if !super::enabled() {
        return;
    }
    let method = match method {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "_OTHER",
    };
    metrics::histogram!(
        names::HTTP_REQUEST_DURATION,
        "http_request_method" => method,
        "http_route" => route.unwrap_or("unmatched").to_owned(),
        "http_response_status_code" => status.to_string(),
    )
    .record(elapsed.as_secs_f64());
}

/// A request refused by policy: `rate_limit`, `credit_budget` or `credential_budget`.
pub fn refused(reason: &'static str) {
    metrics::counter!(names::REFUSALS, "reason" => reason).increment(1);
}

/// What a guardrail rule did to `count` values of a completion: its check's `kind`,
/// `direction` and `effect` as `tessera-guardrails` spells them.
pub fn guardrail_decision(
    kind: &'static str,
    direction: &'static str,
    effect: &'static str,
    count: u32,
) {
    metrics::counter!(
        names::GUARDRAIL_DECISIONS,
        "kind" => kind,
        "direction" => direction,
        "effect" => effect,
    )
    .increment(u64::from(count));
}

/// How the response cache answered a completion of a model opted in: `hit` or `miss`.
pub fn response_cache_lookup(status: &'static str) {
    metrics::counter!(names::RESPONSE_CACHE_LOOKUPS, "status" => status).increment(1);
}

/// The state a processing attempt left its file in.
#[derive(Debug, Clone, Copy)]
pub enum FileJobState {
    Ready,
    Failed,
    Retrying,
    LeaseLost,
}

impl FileJobState {
    fn label(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Retrying => "retrying",
            Self::LeaseLost => "lease_lost",
        }
    }
}

/// One file-processing attempt and how long it took.
pub fn file_job(state: FileJobState, elapsed: Duration) {
    let state = state.label();
    metrics::counter!(names::FILE_JOBS, "state" => state).increment(1);
    metrics::histogram!(names::FILE_PROCESSING_DURATION, "state" => state)
        .record(elapsed.as_secs_f64());
}

/// What became of one webhook delivery attempt.
#[derive(Debug, Clone, Copy)]
pub enum WebhookOutcome {
    Delivered,
    Retrying,
    Failed,
}

pub fn webhook_delivery(outcome: WebhookOutcome) {
    let outcome = match outcome {
        WebhookOutcome::Delivered => "delivered",
        WebhookOutcome::Retrying => "retrying",
        WebhookOutcome::Failed => "failed",
    };
    metrics::counter!(names::WEBHOOK_DELIVERIES, "outcome" => outcome).increment(1);
}
