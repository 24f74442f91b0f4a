//! Tessera's Redis adapters for what replicas must share: `RedisRateLimiter`, the
//! `RateLimiter` port on Redis, so every replica draws from one budget per key, and
//! `RedisCircuits`, the routing's circuit board (`circuits`), both on one `RedisServer`
//! (`server`: plain or TLS). The GCRA step runs as one Lua
//! script (atomic, no read-modify-write race) and uses Redis's own clock, so replicas with
//! skewed clocks still agree. Keys expire when their quota is fully replenished.

mod circuits;
mod server;

use std::time::Duration;

pub use circuits::RedisCircuits;
pub use server::{RedisServer, RedisSetupError};

use async_trait::async_trait;
use redis::{
    Script,
    aio::{ConnectionManager, ConnectionManagerConfig},
};
use tessera_kernel::DomainError;
use tessera_limits::{Decision, Quota, RateLimiter};

/// KEYS[1] = key; ARGV[1] = interval (µs); ARGV[2] = limit.
/// Returns {allowed, remaining, retry_after_µs, reset_after_µs}.
const GCRA: &str = r#"
local interval = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - interval * limit
if now < allow_at then
  return {0, 0, allow_at - now, tat - now}
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {1, math.floor((now + interval * limit - new_tat) / interval), 0, new_tat - now}
"#;

/// A rate limiter on a Redis server.
#[derive(Clone)]
pub struct RedisRateLimiter {
    connection: ConnectionManager,
    script: Script,
    prefix: String,
}

impl RedisRateLimiter {
    /// Connects (failing now, not at the first request, when Redis is unreachable).
    pub async fn connect(server: &RedisServer, prefix: &str) -> Result<Self, DomainError> {
        let connection = ConnectionManager::new_with_config(server.client(), manager_config())
            .await
            .map_err(|e| DomainError::Unavailable {
                message: format!("cannot connect to Redis: {e}"),
            })?;
        Ok(Self::over(connection, prefix))
    }

    /// A limiter that connects at its first use and reconnects after failures; it fails
    /// only on an invalid URL. Until Redis answers, each `acquire` is `Unavailable`.
    pub fn connect_lazily(server: &RedisServer, prefix: &str) -> Result<Self, DomainError> {
        let connection = ConnectionManager::new_lazy_with_config(client(server)?, manager_config())
            .map_err(|e| DomainError::Unavailable {
                message: format!("cannot set up the Redis connection: {e}"),
            })?;
        Ok(Self::over(connection, prefix))
    }

    fn over(connection: ConnectionManager, prefix: &str) -> Self {
        Self {
            connection,
            script: Script::new(GCRA),
            prefix: prefix.to_owned(),
        }
    }
}

/// The server's client (fallible like the ports' other setup steps, though it no longer
/// fails: the URL was checked when the `RedisServer` was made).
fn client(server: &RedisServer) -> Result<redis::Client, DomainError> {
    Ok(server.client())
}

/// A limiter answers within a request's time: bounded connection attempts and replies.
fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(200))
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(1)))
}

fn micros(value: i64) -> Duration {
    Duration::from_micros(u64::try_from(value.max(0)).unwrap_or_default())
}

#[async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn acquire(&self, key: &str, quota: Quota) -> Result<Decision, DomainError> {
        let mut connection = self.connection.clone();
        let (allowed, remaining, retry_after, reset_after): (i64, i64, i64, i64) = self
            .script
            .key(format!("{}{key}", self.prefix))
            .arg(quota.interval_micros())
            .arg(quota.limit)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| DomainError::Unavailable {
                message: format!("rate limiter unavailable: {e}"),
            })?;
        Ok(Decision {
            allowed: allowed == 1,
            limit: quota.limit,
            remaining: u32::try_from(remaining).unwrap_or_default(),
            reset_after: micros(reset_after),
            retry_after: (allowed != 1).then(|| micros(retry_after)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs the Redis server at `TESSERA_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`); fails, never
    /// skips, when it is not there.
    async fn limiter() -> RedisRateLimiter {
        let url = std::env::var("TESSERA_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        RedisRateLimiter::connect(
            &RedisServer::new(&url, None).unwrap(),
            &format!("tessera-test:{}:", uuid::Uuid::now_v7().simple()),
        )
        .await
        .expect("Redis is reachable")
    }

    #[tokio::test]
    async fn follows_gcra_like_the_in_process_limiter() {
        let limiter = limiter().await;
        let quota = Quota::per_minute(3);
        let mut remaining = Vec::new();
        for _ in 0..3 {
            let decision = limiter.acquire("k", quota).await.unwrap();
            assert!(decision.allowed);
            remaining.push(decision.remaining);
        }
        assert_eq!(remaining, vec![2, 1, 0]);
        let refused = limiter.acquire("k", quota).await.unwrap();
        assert!(!refused.allowed);
        let retry = refused.retry_after.unwrap();
        assert!(
            retry > Duration::from_secs(19) && retry <= Duration::from_secs(20),
            "{retry:?}"
        );
        assert!(limiter.acquire("other", quota).await.unwrap().allowed);
    }

    #[tokio::test]
    async fn two_limiters_share_one_budget() {
        let a = limiter().await;
        let b = RedisRateLimiter {
            prefix: a.prefix.clone(),
            ..limiter().await
        };
        let quota = Quota::per_minute(2);
        assert!(a.acquire("shared", quota).await.unwrap().allowed);
        assert!(b.acquire("shared", quota).await.unwrap().allowed);
        assert!(!a.acquire("shared", quota).await.unwrap().allowed);
        assert!(!b.acquire("shared", quota).await.unwrap().allowed);
    }

    #[tokio::test]
    async fn unreachable_redis_is_reported_at_connect() {
        let server = RedisServer::new("redis://127.0.0.1:1", None).unwrap();
        let error = RedisRateLimiter::connect(&server, "x").await.err().unwrap();
        assert!(matches!(error, DomainError::Unavailable { .. }));
    }
}
