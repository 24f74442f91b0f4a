//! Rate limiting with the generic cell rate algorithm (GCRA): `Quota` (so many requests per
//! period, with bursts up to the limit), the `Decision` a limiter answers (allowed, remaining,
//! reset and retry delays, what the `RateLimit-*` headers say), the `RateLimiter` port, and
//! `InProcessRateLimiter`, the single-node default. A shared limiter for several replicas
//! implements the same port elsewhere (`tessera-limits-redis`). GCRA keeps one timestamp per
//! key (the theoretical arrival time), so a limiter needs no counters or windows.

mod gcra;
mod in_process;

use std::time::Duration;

use async_trait::async_trait;
use tessera_kernel::DomainError;

pub use gcra::{Quota, decide};
pub use in_process::InProcessRateLimiter;

/// A limiter's answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    /// Requests that could still be made right now.
    pub remaining: u32,
    /// Time until the quota is fully available again.
    pub reset_after: Duration,
    /// When refused: how long to wait before the next request can pass.
    pub retry_after: Option<Duration>,
}

/// Takes one request from a key's quota.
#[async_trait]
pub trait RateLimiter: Send + Sync {
    async fn acquire(&self, key: &str, quota: Quota) -> Result<Decision, DomainError>;
}
