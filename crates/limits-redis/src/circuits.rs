//! `RedisCircuits`: the routing's `CircuitBoard` on Redis, so every replica sees a
//! deployment cooled down as soon as one opens its circuit. The policy stays in the domain
//! (`CircuitPolicy::after_failure`); Redis keeps each circuit as a hash and a small script
//! writes the next state only if the state it was computed from is still there
//! (compare-and-set, retried), so concurrent failures on several replicas all count. A
//! half-open circuit's one probe is a key set only if absent (`SET NX PX`): one replica
//! claims it, the others fall back until it reports or its lease expires.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use redis::{Script, aio::ConnectionManager};
use tessera_kernel::DomainError;
use tessera_models::{CircuitBoard, CircuitPolicy, CircuitState};

use crate::{RedisServer, client, manager_config};

/// KEYS[1] = circuit; ARGV[1..3] = expected failures, opens, open_until (ms, "" for none);
/// ARGV[4..6] = the new ones; ARGV[7] = time to live (ms). Returns 1 when written.
const COMPARE_AND_SET: &str = r#"
local current = redis.call('HMGET', KEYS[1], 'failures', 'opens', 'open_until')
if (current[1] or '0') ~= ARGV[1] or (current[2] or '0') ~= ARGV[2] or (current[3] or '') ~= ARGV[3] then
  return 0
end
redis.call('HSET', KEYS[1], 'failures', ARGV[4], 'opens', ARGV[5], 'open_until', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return 1
"#;

/// Circuits shared by every replica through a Redis server.
#[derive(Clone)]
pub struct RedisCircuits {
    connection: ConnectionManager,
    script: Script,
    prefix: String,
    policy: CircuitPolicy,
}

impl RedisCircuits {
    /// A board that connects at its first use and reconnects after failures; it fails only
    /// on an invalid URL. While Redis does not answer, every circuit reads closed.
    pub fn connect_lazily(
        server: &RedisServer,
        prefix: &str,
        policy: CircuitPolicy,
    ) -> Result<Self, DomainError> {
        let connection = ConnectionManager::new_lazy_with_config(client(server)?, manager_config())
            .map_err(|e| DomainError::Unavailable {
                message: format!("cannot set up the Redis connection: {e}"),
            })?;
        Ok(Self {
            connection,
            script: Script::new(COMPARE_AND_SET),
            prefix: prefix.to_owned(),
            policy,
        })
    }

    fn key(&self, circuit: &str) -> String {
        format!("{}{circuit}", self.prefix)
    }

    /// The key of the circuit's probe while one is claimed.
    fn probe_key(&self, circuit: &str) -> String {
        format!("{}{circuit}:probe", self.prefix)
    }

    async fn forget_probe(&self, circuit: &str) {
        let deleted: redis::RedisResult<i64> = redis::cmd("DEL")
            .arg(self.probe_key(circuit))
            .query_async(&mut self.connection.clone())
            .await;
        if let Err(error) = deleted {
            tracing::warn!(%error, %circuit, "could not end a deployment's probe in Redis");
        }
    }

    async fn read(&self, circuits: &[String]) -> redis::RedisResult<Vec<CircuitState>> {
        let mut pipeline = redis::pipe();
        for circuit in circuits {
            pipeline
                .cmd("HMGET")
                .arg(self.key(circuit))
                .arg("failures")
                .arg("opens")
                .arg("open_until");
        }
        let rows: Vec<(Option<u32>, Option<u32>, Option<String>)> =
            pipeline.query_async(&mut self.connection.clone()).await?;
        Ok(rows
            .into_iter()
            .map(|(failures, opens, open_until)| CircuitState {
                failures: failures.unwrap_or(0),
                opens: opens.unwrap_or(0),
                open_until: open_until
                    .and_then(|ms| ms.parse().ok())
                    .and_then(DateTime::from_timestamp_millis),
            })
            .collect())
    }

    async fn record_failure(&self, circuit: &str, at: DateTime<Utc>) -> redis::RedisResult<()> {
        let fields = |state: &CircuitState| {
            (
                state.failures.to_string(),
                state.opens.to_string(),
                state
                    .open_until
                    .map(|until| until.timestamp_millis().to_string())
                    .unwrap_or_default(),
            )
        };
        // A circuit is forgotten once it could no longer matter.
        let ttl = self
            .policy
            .max_cooldown
            .saturating_mul(2)
            .max(Duration::from_secs(60));
        for _ in 0..5 {
            let current = self.read(&[circuit.to_owned()]).await?[0];
            let next = self.policy.after_failure(current, at);
            let (failures, opens, until) = fields(&current);
            let (new_failures, new_opens, new_until) = fields(&next);
            let written: i64 = self
                .script
                .key(self.key(circuit))
                .arg(failures)
                .arg(opens)
                .arg(until)
                .arg(new_failures)
                .arg(new_opens)
                .arg(new_until)
                .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
                .invoke_async(&mut self.connection.clone())
                .await?;
            if written == 1 {
                return Ok(());
            }
        }
        tracing::warn!(%circuit, "a deployment's failure was not counted: its circuit kept changing");
        Ok(())
    }
}

#[async_trait]
impl CircuitBoard for RedisCircuits {
    async fn states(&self, circuits: &[String]) -> Vec<CircuitState> {
        match self.read(circuits).await {
            Ok(states) => states,
            Err(error) => {
                tracing::warn!(%error, "Redis is unreachable: every deployment counts as healthy");
                vec![CircuitState::default(); circuits.len()]
            }
        }
    }

    async fn failed(&self, circuit: &str, at: DateTime<Utc>) {
        if let Err(error) = self.record_failure(circuit, at).await {
            tracing::warn!(%error, %circuit, "could not count a deployment's failure in Redis");
        }
        self.forget_probe(circuit).await;
    }

    async fn succeeded(&self, circuit: &str) {
        let deleted: redis::RedisResult<i64> = redis::cmd("DEL")
            .arg(self.key(circuit))
            .arg(self.probe_key(circuit))
            .query_async(&mut self.connection.clone())
            .await;
        if let Err(error) = deleted {
            tracing::warn!(%error, %circuit, "could not close a deployment's circuit in Redis");
        }
    }

    async fn claim_probe(&self, circuit: &str, _at: DateTime<Utc>, lease: Duration) -> bool {
        // Redis keeps the lease's time itself; at least a millisecond, as PX requires.
        let lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX).max(1);
        let claimed: redis::RedisResult<Option<String>> = redis::cmd("SET")
            .arg(self.probe_key(circuit))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(lease_ms)
            .query_async(&mut self.connection.clone())
            .await;
        match claimed {
            Ok(reply) => reply.is_some(),
            Err(error) => {
                tracing::warn!(%error, %circuit, "Redis is unreachable: the probe is admitted");
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Needs the Redis server at `TESSERA_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`);
    /// fails, never skips, when it is not there.
    fn boards() -> (RedisCircuits, RedisCircuits) {
        let url = std::env::var("TESSERA_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let prefix = format!("tessera-test:{}:", uuid::Uuid::now_v7().simple());
        let server = RedisServer::new(&url, None).unwrap();
        let board =
            || RedisCircuits::connect_lazily(&server, &prefix, CircuitPolicy::default()).unwrap();
        (board(), board())
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    #[tokio::test]
    async fn replicas_share_circuits_as_the_policy_says() {
        let (one, other) = boards();
        let key = ["acme/chat#primary".to_owned()];
        one.failed(&key[0], at(0)).await;
        other.failed(&key[0], at(1)).await;
        assert_eq!(one.states(&key).await[0].failures, 2);
        one.failed(&key[0], at(2)).await;
        // Opened by one replica, seen open by the other, for the first cool-down.
        let state = other.states(&key).await[0];
        assert_eq!(
            state,
            CircuitPolicy::default().after_failure(
                CircuitState {
                    failures: 2,
                    opens: 0,
                    open_until: None
                },
                at(2),
            )
        );
        assert!(state.is_open(at(6)) && !state.is_open(at(7)));
        // Half open after it: one failure reopens it for twice as long.
        other.failed(&key[0], at(8)).await;
        assert_eq!(one.states(&key).await[0].open_until, Some(at(18)));
        one.succeeded(&key[0]).await;
        assert_eq!(other.states(&key).await[0], CircuitState::default());
    }

    #[tokio::test]
    async fn concurrent_failures_are_all_counted() {
        let (one, other) = boards();
        let one = Arc::new(one);
        let other = Arc::new(other);
        let key = "acme/chat#busy";
        let mut tasks = Vec::new();
        for index in 0..2 {
            let board = if index == 0 {
                one.clone()
            } else {
                other.clone()
            };
            tasks.push(tokio::spawn(async move { board.failed(key, at(0)).await }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(one.states(&[key.to_owned()]).await[0].failures, 2);
    }

    #[tokio::test]
    async fn one_replica_claims_a_half_open_circuits_probe_until_it_reports() {
        let (one, other) = boards();
        let lease = Duration::from_secs(30);
        let circuit = "acme/chat#half-open";
        assert!(one.claim_probe(circuit, at(0), lease).await);
        assert!(!other.claim_probe(circuit, at(0), lease).await);
        assert!(!one.claim_probe(circuit, at(0), lease).await);
        one.failed(circuit, at(1)).await;
        assert!(
            other.claim_probe(circuit, at(2), lease).await,
            "a failure ends it"
        );
        other.succeeded(circuit).await;
        assert!(
            one.claim_probe(circuit, at(3), Duration::from_millis(50))
                .await
        );
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(
            other.claim_probe(circuit, at(4), lease).await,
            "so does its lease"
        );
    }

    #[tokio::test]
    async fn unreachable_redis_reads_closed() {
        let server = RedisServer::new("redis://127.0.0.1:1", None).unwrap();
        let board = RedisCircuits::connect_lazily(&server, "x:", CircuitPolicy::default()).unwrap();
        board.failed("m#a", at(0)).await;
        assert_eq!(
            board.states(&["m#a".to_owned()]).await,
            [CircuitState::default()]
        );
        assert!(
            board
                .claim_probe("m#a", at(0), Duration::from_secs(1))
                .await
        );
    }
}
