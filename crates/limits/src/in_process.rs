use std::{
    collections::HashMap,
    sync::Mutex,
    time::{SystemTime, UNIX_EPOCH},
};

use async_trait::async_trait;
use tessera_kernel::DomainError;

use crate::{Decision, Quota, RateLimiter, decide};

/// Keys kept before idle ones are swept (their arrival time lies in the past, so they hold
/// nothing a new key would not).
const SWEEP_AT: usize = 100_000;

/// A limiter for one process: arrival times in a map behind a mutex.
#[derive(Debug, Default)]
pub struct InProcessRateLimiter {
    arrivals: Mutex<HashMap<String, i64>>,
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

impl InProcessRateLimiter {
    fn acquire_at(&self, key: &str, quota: Quota, now: i64) -> Decision {
        let mut arrivals = self
            .arrivals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if arrivals.len() >= SWEEP_AT {
            arrivals.retain(|_, tat| *tat > now);
        }
        let (decision, next) = decide(now, arrivals.get(key).copied(), quota);
        if let Some(tat) = next {
            arrivals.insert(key.to_owned(), tat);
        }
        decision
    }
}

#[async_trait]
impl RateLimiter for InProcessRateLimiter {
    async fn acquire(&self, key: &str, quota: Quota) -> Result<Decision, DomainError> {
        Ok(self.acquire_at(key, quota, now_micros()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_have_separate_budgets() {
        let limiter = InProcessRateLimiter::default();
        let quota = Quota::per_minute(2);
        assert!(limiter.acquire("a", quota).await.unwrap().allowed);
        assert!(limiter.acquire("a", quota).await.unwrap().allowed);
        assert!(!limiter.acquire("a", quota).await.unwrap().allowed);
        assert!(limiter.acquire("b", quota).await.unwrap().allowed);
    }

    #[test]
    fn sweeping_keeps_busy_keys() {
        let limiter = InProcessRateLimiter::default();
        let quota = Quota::per_minute(1);
        limiter.acquire_at("busy", quota, 1_000_000_000);
        for i in 0..SWEEP_AT {
            limiter.acquire_at(&format!("idle{i}"), quota, 0);
        }
        assert!(
            !limiter.acquire_at("busy", quota, 1_000_000_000).allowed,
            "the busy key kept its arrival time"
        );
    }
}
