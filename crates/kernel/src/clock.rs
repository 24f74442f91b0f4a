use std::sync::Mutex;

use chrono::{DateTime, Duration, DurationRound, Utc};

/// The source of "now" for domain services, so that time-dependent rules are testable.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The real wall clock, truncated to whole microseconds: the precision both databases
/// store, so a record read back equals the record written.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        let now = Utc::now();
        now.duration_trunc(Duration::microseconds(1)).unwrap_or(now)
    }
}

/// A clock that only moves when told to; for tests of time-dependent rules.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let start = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::seconds(90));
        assert_eq!(clock.now() - start, Duration::seconds(90));
    }
}
