//! [`GuardrailRecord`]: what the guardrails did to one request, rule by rule, for the
//! message it is stored with and the metrics counted from it. It holds rule ids, kinds,
//! directions, effects and counts, never a matched value.

use serde::{Deserialize, Serialize};

use crate::{CheckKind, Direction, HookFailure, RuleId};

/// What a rule did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Blocked,
    Redacted,
    Pseudonymised,
    /// The hook let the text pass (or failed open: see `hook_failure`).
    Passed,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blocked => "blocked",
            Self::Redacted => "redacted",
            Self::Pseudonymised => "pseudonymised",
            Self::Passed => "passed",
        }
    }
}

/// One rule's effect in one direction, and how many values it concerned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleOutcome {
    pub rule: RuleId,
    pub kind: CheckKind,
    pub direction: Direction,
    pub effect: Effect,
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_failure: Option<HookFailure>,
}

/// Every rule's outcome for one request, in the order they first happened.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GuardrailRecord {
    outcomes: Vec<RuleOutcome>,
}

impl GuardrailRecord {
    pub fn outcomes(&self) -> &[RuleOutcome] {
        &self.outcomes
    }

    pub fn is_empty(&self) -> bool {
        self.outcomes.is_empty()
    }

    /// The outcome that refused the request, if one did.
    pub fn blocked(&self) -> Option<&RuleOutcome> {
        self.outcomes
            .iter()
            .find(|outcome| outcome.effect == Effect::Blocked)
    }

    /// Adds `count` to the outcome of the same rule, direction, effect and failure, or
    /// records a new one.
    pub(crate) fn add(&mut self, outcome: RuleOutcome) {
        let same = self.outcomes.iter_mut().find(|known| {
            known.rule == outcome.rule
                && known.direction == outcome.direction
                && known.effect == outcome.effect
                && known.hook_failure == outcome.hook_failure
        });
        match same {
            Some(known) => known.count = known.count.saturating_add(outcome.count),
            None => self.outcomes.push(outcome),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PiiKind;

    #[test]
    fn outcomes_of_one_rule_add_up() {
        let mut record = GuardrailRecord::default();
        let outcome = |count| RuleOutcome {
            rule: "emails".parse().unwrap(),
            kind: CheckKind::Pii(PiiKind::Email),
            direction: Direction::Input,
            effect: Effect::Pseudonymised,
            count,
            hook_failure: None,
        };
        record.add(outcome(2));
        record.add(outcome(3));
        assert_eq!(record.outcomes(), [outcome(5)]);
        assert!(record.blocked().is_none());
        assert_eq!(
            serde_json::to_value(&record).unwrap(),
            serde_json::json!([{"rule": "emails", "kind": "email", "direction": "input",
                                "effect": "pseudonymised", "count": 5}])
        );
    }
}
