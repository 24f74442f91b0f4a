//! Per-organization and per-principal request budgets (GCRA), and per-peer budgets for the
//! token endpoint. The limiter is in-process by default and on Redis when `redis_url` is set,
//! so replicas share one budget. `RateLimit-Limit`, `RateLimit-Remaining` and
//! `RateLimit-Reset` describe the tightest budget a request drew from; a refusal is a 429
//! problem with `Retry-After`. When the limiter itself is unreachable, requests pass (and a
//! warning is logged): an outage of Redis must not become an outage of the API.

use std::{sync::Arc, time::Duration};

use actix_web::{HttpResponse, http::header::HeaderMap};
use tessera_kernel::Principal;
use tessera_limits::{Decision, Quota, RateLimiter};

use crate::problem::{ApiError, ProblemKind};

/// The limiter and the quotas it applies.
#[derive(Clone)]
pub struct Limits {
    pub limiter: Arc<dyn RateLimiter>,
    pub organization: Quota,
    pub principal: Quota,
    pub anonymous: Quota,
    pub enabled: bool,
}

fn ceil_secs(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

impl Limits {
    async fn draw(&self, keys: &[(String, Quota)]) -> Option<Decision> {
        if !self.enabled {
            return None;
        }
        let mut tightest: Option<Decision> = None;
        for (key, quota) in keys {
            match self.limiter.acquire(key, *quota).await {
                Ok(decision) => {
                    let tighter = tightest.is_none_or(|t| {
                        (!decision.allowed && t.allowed)
                            || (decision.allowed == t.allowed && decision.remaining < t.remaining)
                    });
                    if tighter {
                        tightest = Some(decision);
                    }
                    if !decision.allowed {
                        break;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "rate limiter unavailable; letting the request pass")
                }
            }
        }
        tightest
    }

    /// Draws from the budgets of the principal and its organization.
    pub async fn for_principal(&self, principal: &Principal) -> Option<Decision> {
        let organization = format!("org:{}", principal.organization_id);
        let subject = format!("sub:{}:{}", principal.organization_id, principal.subject);
        self.draw(&[(organization, self.organization), (subject, self.principal)])
            .await
    }

    /// Draws from an unauthenticated peer's budget (token requests).
    pub async fn for_peer(&self, peer: &str) -> Option<Decision> {
        self.draw(&[(format!("ip:{peer}"), self.anonymous)]).await
    }
}

/// Writes the `RateLimit-*` headers of a decision.
pub fn set_headers(headers: &mut HeaderMap, decision: &Decision) {
    let pairs = [
        ("ratelimit-limit", decision.limit.to_string()),
        ("ratelimit-remaining", decision.remaining.to_string()),
        (
            "ratelimit-reset",
            ceil_secs(decision.reset_after).to_string(),
        ),
    ];
    for (name, value) in pairs {
        if let Ok(value) = value.parse() {
            headers.insert(
                actix_web::http::header::HeaderName::from_static(name),
                value,
            );
        }
    }
}

/// The 429 answer for a refused decision.
pub fn refusal(decision: &Decision) -> HttpResponse {
    let retry = ceil_secs(decision.retry_after.unwrap_or_default()).max(1);
    let detail = format!(
        "rate limit of {} requests per minute exceeded; retry in {retry} s",
        decision.limit
    );
    let mut response = HttpResponse::from_error(ApiError::new(
        ProblemKind::RateLimited,
        ProblemKind::RateLimited.code(),
        detail,
    ));
    set_headers(response.headers_mut(), decision);
    if let Ok(value) = retry.to_string().parse() {
        response
            .headers_mut()
            .insert(actix_web::http::header::RETRY_AFTER, value);
    }
    response
}
