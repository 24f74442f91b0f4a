//! [`Blocked`]: a refusal, naming the rule and the kind of what it found, never the value.

use std::fmt;

use serde::{Deserialize, Serialize};
use tessera_kernel::{FieldError, LocSegment};

use crate::{CheckKind, Direction, HookFailure, RuleId};

/// Why a request or an answer was refused. Its message names the rule and the kind of
/// check, and for the hook the service's reason; never the text or the value that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
pub struct Blocked {
    pub rule: RuleId,
    pub kind: CheckKind,
    pub direction: Direction,
    /// The hook's reason, or the size limit that was passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Set when a hook that fails closed gave no verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_failure: Option<HookFailure>,
}

impl Blocked {
    /// The `type` of the validation error a refused input becomes.
    pub const ERROR_KIND: &'static str = "guardrail_blocked";

    /// The refusal as a validation error at `loc` (the message or field it concerns), for
    /// the API's 422 / 400 answers.
    pub fn field_error(&self, loc: impl IntoIterator<Item = LocSegment>) -> FieldError {
        FieldError::new(loc, self.to_string(), Self::ERROR_KIND)
    }
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            rule,
            kind,
            direction,
            reason,
            hook_failure,
        } = self;
        match (kind, reason, hook_failure) {
            (CheckKind::Hook, _, Some(_)) => write!(
                f,
                "the {direction} was blocked by guardrail rule `{rule}`: the guardrail service gave no verdict and the policy fails closed"
            ),
            (CheckKind::Hook, Some(reason), None) => write!(
                f,
                "the {direction} was blocked by guardrail rule `{rule}` (the guardrail service): {reason}"
            ),
            (CheckKind::InputSize, Some(reason), _) => {
                write!(
                    f,
                    "the {direction} was blocked by guardrail rule `{rule}`: {reason}"
                )
            }
            _ => write!(
                f,
                "the {direction} was blocked by guardrail rule `{rule}` ({kind})"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PiiKind;

    #[test]
    fn the_message_names_the_rule_and_kind() {
        let blocked = Blocked {
            rule: "cards".parse().unwrap(),
            kind: CheckKind::Pii(PiiKind::PaymentCard),
            direction: Direction::Input,
            reason: None,
            hook_failure: None,
        };
        assert_eq!(
            blocked.to_string(),
            "the input was blocked by guardrail rule `cards` (payment_card)"
        );
        let error =
            blocked.field_error(["body".into(), "messages".into(), 0.into(), "content".into()]);
        assert_eq!(error.kind, "guardrail_blocked");
        assert_eq!(
            serde_json::to_value(&blocked).unwrap(),
            serde_json::json!({"rule": "cards", "kind": "payment_card", "direction": "input"})
        );
    }
}
