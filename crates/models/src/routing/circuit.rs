//! The circuit breaker: a deployment that keeps failing is cooled down (its circuit open)
//! for a period that grows each time it opens again, and closes on its next success. After
//! its cool-down a circuit is half open and admits one probe at a time: the other requests
//! go elsewhere until the probe answers or fails. The board is a port, so replicas can
//! share it (Redis) or keep it in the process.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// When circuits open and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CircuitPolicy {
    /// Consecutive failures that open a closed circuit.
    pub failures_to_open: u32,
    /// The first cool-down; it doubles with every reopening without a success between.
    pub first_cooldown: Duration,
    pub max_cooldown: Duration,
}

impl Default for CircuitPolicy {
    fn default() -> Self {
        Self {
            failures_to_open: 3,
            first_cooldown: Duration::from_secs(5),
            max_cooldown: Duration::from_secs(300),
        }
    }
}

impl CircuitPolicy {
    /// The cool-down of the `opens`-th opening in a row (1 for the first).
    pub fn cooldown(&self, opens: u32) -> Duration {
        let doubled = self
            .first_cooldown
            .saturating_mul(1 << opens.saturating_sub(1).min(16));
        doubled.min(self.max_cooldown)
    }

    /// The state after a failure at `at`.
    pub fn after_failure(&self, state: CircuitState, at: DateTime<Utc>) -> CircuitState {
        let failures = state.failures.saturating_add(1);
        // After a cool-down the circuit is half open: one failure opens it again.
        let threshold = if state.opens > 0 {
            1
        } else {
            self.failures_to_open.max(1)
        };
        if failures < threshold {
            return CircuitState { failures, ..state };
        }
        let opens = state.opens.saturating_add(1);
        let cooldown =
            chrono::Duration::from_std(self.cooldown(opens)).unwrap_or(chrono::Duration::MAX);
        CircuitState {
            failures: 0,
            opens,
            open_until: Some(at + cooldown),
        }
    }
}

/// A deployment's circuit: closed when `open_until` is past or unset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CircuitState {
    /// Consecutive failures since the last success or opening.
    pub failures: u32,
    /// Openings in a row without a success between.
    pub opens: u32,
    pub open_until: Option<DateTime<Utc>>,
}

impl CircuitState {
    pub fn is_open(&self, at: DateTime<Utc>) -> bool {
        self.open_until.is_some_and(|until| until > at)
    }

    /// What the circuit lets through at `at`.
    pub fn phase(&self, at: DateTime<Utc>) -> CircuitPhase {
        match self.open_until {
            Some(until) if until > at => CircuitPhase::Open { until },
            _ if self.opens > 0 => CircuitPhase::HalfOpen,
            _ => CircuitPhase::Closed,
        }
    }
}

/// A circuit as the router sees it at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitPhase {
    /// Serving.
    Closed,
    /// Cooling down: skipped (unless every deployment is) until `until`.
    Open { until: DateTime<Utc> },
    /// Its cool-down is over after an opening: its next attempt decides.
    HalfOpen,
}

/// Where circuits are kept. Implementations never fail a completion: a board that cannot
/// be read answers "closed" (and logs why).
#[async_trait]
pub trait CircuitBoard: Send + Sync {
    /// The state of each of `keys`, in order.
    async fn states(&self, keys: &[String]) -> Vec<CircuitState>;

    /// An attempt on `key` failed at `at`.
    async fn failed(&self, key: &str, at: DateTime<Utc>);

    /// An attempt on `key` answered: its circuit closes.
    async fn succeeded(&self, key: &str);

    /// Claims the one probe a half-open circuit admits: `true` for the caller that may try
    /// `key` now, `false` while another attempt holds the probe. The claim ends with that
    /// attempt's [`failed`](Self::failed) or [`succeeded`](Self::succeeded), or after
    /// `lease` (an attempt that never reports back). A board that cannot be read admits.
    async fn claim_probe(&self, key: &str, at: DateTime<Utc>, lease: Duration) -> bool;
}

/// Circuits of this process only.
#[derive(Debug, Default)]
pub struct InProcessCircuits {
    policy: CircuitPolicy,
    states: Mutex<Circuits>,
}

/// Each circuit's state, and the half-open ones' probes with the end of their lease.
#[derive(Debug, Default)]
struct Circuits {
    states: HashMap<String, CircuitState>,
    probes: HashMap<String, DateTime<Utc>>,
}

impl InProcessCircuits {
    pub fn new(policy: CircuitPolicy) -> Self {
        Self {
            policy,
            states: Mutex::default(),
        }
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, Circuits> {
        self.states
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl CircuitBoard for InProcessCircuits {
    async fn states(&self, keys: &[String]) -> Vec<CircuitState> {
        let circuits = self.locked();
        keys.iter()
            .map(|key| circuits.states.get(key).copied().unwrap_or_default())
            .collect()
    }

    async fn failed(&self, key: &str, at: DateTime<Utc>) {
        let mut circuits = self.locked();
        let state = circuits.states.entry(key.to_owned()).or_default();
        *state = self.policy.after_failure(*state, at);
        circuits.probes.remove(key);
    }

    async fn succeeded(&self, key: &str) {
        // Most answers come from healthy deployments: no write for those.
        let mut circuits = self.locked();
        if circuits.states.contains_key(key) {
            circuits.states.remove(key);
        }
        if circuits.probes.contains_key(key) {
            circuits.probes.remove(key);
        }
    }

    async fn claim_probe(&self, key: &str, at: DateTime<Utc>, lease: Duration) -> bool {
        let mut circuits = self.locked();
        if circuits.probes.get(key).is_some_and(|until| *until > at) {
            return false;
        }
        let lease = chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        circuits.probes.insert(key.to_owned(), at + lease);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    #[tokio::test]
    async fn three_failures_open_a_circuit_and_a_success_closes_it() {
        let board = InProcessCircuits::default();
        let key = ["m#a".to_owned()];
        board.failed("m#a", at(0)).await;
        board.failed("m#a", at(1)).await;
        assert!(!board.states(&key).await[0].is_open(at(1)));
        board.failed("m#a", at(2)).await;
        let state = board.states(&key).await[0];
        assert!(state.is_open(at(6)));
        assert!(!state.is_open(at(7)), "{state:?}");
        board.succeeded("m#a").await;
        assert_eq!(board.states(&key).await[0], CircuitState::default());
    }

    #[tokio::test]
    async fn a_failure_after_the_cooldown_reopens_for_longer() {
        let board = InProcessCircuits::default();
        for second in 0..3 {
            board.failed("m#a", at(second)).await;
        }
        // Half open after 5 s: one failure opens it again, for 10 s.
        board.failed("m#a", at(8)).await;
        let state = board.states(&["m#a".to_owned()]).await[0];
        assert_eq!(state.opens, 2);
        assert_eq!(state.open_until, Some(at(18)));
    }

    #[tokio::test]
    async fn a_half_open_circuit_admits_one_probe_until_it_reports_or_its_lease_ends() {
        let board = InProcessCircuits::default();
        let lease = Duration::from_secs(30);
        assert!(board.claim_probe("m#a", at(10), lease).await);
        assert!(
            !board.claim_probe("m#a", at(11), lease).await,
            "one at a time"
        );
        assert!(board.claim_probe("m#b", at(11), lease).await, "per circuit");
        board.failed("m#a", at(12)).await;
        assert!(
            board.claim_probe("m#a", at(13), lease).await,
            "a failure ends it"
        );
        board.succeeded("m#a").await;
        assert!(
            board.claim_probe("m#a", at(14), lease).await,
            "a success ends it"
        );
        assert!(!board.claim_probe("m#a", at(43), lease).await);
        assert!(
            board.claim_probe("m#a", at(44), lease).await,
            "so does its lease"
        );
    }

    #[test]
    fn phases_follow_the_cooldown() {
        let policy = CircuitPolicy::default();
        let closed = CircuitState::default();
        assert_eq!(closed.phase(at(0)), CircuitPhase::Closed);
        let failing = policy.after_failure(closed, at(0));
        assert_eq!(failing.phase(at(0)), CircuitPhase::Closed);
        let open = (1..3).fold(failing, |state, second| {
            policy.after_failure(state, at(second))
        });
        assert_eq!(open.phase(at(6)), CircuitPhase::Open { until: at(7) });
        assert_eq!(open.phase(at(7)), CircuitPhase::HalfOpen);
    }

    #[test]
    fn cooldowns_double_up_to_the_cap() {
        let policy = CircuitPolicy::default();
        assert_eq!(policy.cooldown(1), Duration::from_secs(5));
        assert_eq!(policy.cooldown(3), Duration::from_secs(20));
        assert_eq!(policy.cooldown(40), Duration::from_secs(300));
    }
}
