use std::time::Duration;

use crate::Decision;

/// `limit` requests per `period`, with bursts of up to `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub limit: u32,
    pub period: Duration,
}

impl Quota {
    pub fn per_minute(limit: u32) -> Self {
        Self {
            limit: limit.max(1),
            period: Duration::from_secs(60),
        }
    }

    /// Microseconds between two requests at the sustained rate.
    pub fn interval_micros(&self) -> i64 {
        let period = i64::try_from(self.period.as_micros()).unwrap_or(i64::MAX);
        (period / i64::from(self.limit.max(1))).max(1)
    }
}

fn micros(value: i64) -> Duration {
    Duration::from_micros(u64::try_from(value.max(0)).unwrap_or_default())
}

/// The GCRA rule. `tat` is the key's theoretical arrival time (absent for a new key); returns
/// the decision and, when allowed, the new arrival time to store. Times are microseconds.
pub fn decide(now: i64, tat: Option<i64>, quota: Quota) -> (Decision, Option<i64>) {
    let interval = quota.interval_micros();
    let burst = interval.saturating_mul(i64::from(quota.limit));
    let tat = tat.unwrap_or(now).max(now);
    let new_tat = tat.saturating_add(interval);
    let allow_at = new_tat - burst;
    if now < allow_at {
        let decision = Decision {
            allowed: false,
            limit: quota.limit,
            remaining: 0,
            reset_after: micros(tat - now),
            retry_after: Some(micros(allow_at - now)),
        };
        return (decision, None);
    }
    let remaining = u32::try_from((now + burst - new_tat) / interval).unwrap_or_default();
    let decision = Decision {
        allowed: true,
        limit: quota.limit,
        remaining,
        reset_after: micros(new_tat - now),
        retry_after: None,
    };
    (decision, Some(new_tat))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000;

    #[test]
    fn a_burst_of_limit_passes_then_one_per_interval() {
        let quota = Quota::per_minute(3);
        let mut tat = None;
        let mut remaining = Vec::new();
        for _ in 0..3 {
            let (decision, next) = decide(0, tat, quota);
            assert!(decision.allowed);
            remaining.push(decision.remaining);
            tat = next;
        }
        assert_eq!(remaining, vec![2, 1, 0]);
        let (refused, next) = decide(0, tat, quota);
        assert!(!refused.allowed && next.is_none());
        assert_eq!(
            refused.retry_after,
            Some(Duration::from_secs(20)),
            "one request every 20 s"
        );
        assert!(!decide(19 * SECOND, tat, quota).0.allowed);
        let (later, _) = decide(20 * SECOND, tat, quota);
        assert!(later.allowed);
        assert_eq!(later.remaining, 0);
    }

    #[test]
    fn an_idle_key_regains_its_full_burst() {
        let quota = Quota::per_minute(60);
        let (_, tat) = decide(0, None, quota);
        let (decision, _) = decide(120 * SECOND, tat, quota);
        assert_eq!(decision.remaining, 59);
        assert_eq!(decision.reset_after, Duration::from_secs(1));
    }
}
