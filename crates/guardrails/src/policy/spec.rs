//! A policy as written: plain data the API reads from JSON and a store keeps, checked by
//! `GuardrailPolicy::new`. Field names are camelCase, like the `/v1` API's; unknown fields
//! are refused, so a misspelt setting is an error rather than a rule silently absent.

use serde::{Deserialize, Serialize};

use crate::{Action, AppliesTo, FailMode, PiiKind};

/// Every rule of a policy, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicySpec {
    /// What to do with each kind of personal or secret data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pii: Vec<PiiRuleSpec>,
    /// Words and patterns that must not pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<DenyRuleSpec>,
    /// Words and patterns whose matches are exempt from every PII and deny rule.
    #[serde(default, skip_serializing_if = "ListSpec::is_empty")]
    pub allow: ListSpec,
    /// The most characters (Unicode scalar values) a request's input texts may hold
    /// together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_chars: Option<u64>,
    /// An external guardrail service asked about every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<HookSpec>,
}

/// One kind of PII and what to do with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PiiRuleSpec {
    pub id: String,
    pub kind: PiiKind,
    pub action: Action,
    #[serde(default)]
    pub applies_to: AppliesTo,
}

/// Words and patterns that must not pass, and what to do when they appear.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DenyRuleSpec {
    pub id: String,
    /// Whole words or phrases, matched case-insensitively.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<String>,
    /// Regular expressions (the `regex` crate's syntax), bounded in length and size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    #[serde(default = "block")]
    pub action: Action,
    #[serde(default)]
    pub applies_to: AppliesTo,
}

fn block() -> Action {
    Action::Block
}

/// Words and patterns, as an allow list holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
}

impl ListSpec {
    pub fn is_empty(&self) -> bool {
        self.words.is_empty() && self.patterns.is_empty()
    }

    /// This list and `other`'s entries after it, each entry once.
    pub(crate) fn merged(&self, other: &ListSpec) -> ListSpec {
        let mut merged = self.clone();
        for word in &other.words {
            if !merged.words.contains(word) {
                merged.words.push(word.clone());
            }
        }
        for pattern in &other.patterns {
            if !merged.patterns.contains(pattern) {
                merged.patterns.push(pattern.clone());
            }
        }
        merged
    }
}

/// The external guardrail service: where it is, how long to wait, what a failure means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookSpec {
    pub url: String,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Whether a request passes (`open`) or is refused (`closed`) when the service does not
    /// answer in time or answers nonsense.
    pub fail_mode: FailMode,
    #[serde(default = "input")]
    pub applies_to: AppliesTo,
}

fn default_timeout_ms() -> u64 {
    1_000
}

fn input() -> AppliesTo {
    AppliesTo::Input
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_json_with_defaults() {
        let spec: PolicySpec = serde_json::from_value(serde_json::json!({
            "pii": [{"id": "emails", "kind": "email", "action": "pseudonymise"}],
            "deny": [{"id": "codenames", "words": ["Project Falcon"]}],
            "allow": {"words": ["support@tessera.dev"]},
            "maxInputChars": 100000,
            "hook": {"url": "https://guard.example/check", "failMode": "closed"}
        }))
        .unwrap();
        assert_eq!(spec.pii[0].applies_to, AppliesTo::Both);
        assert_eq!(spec.deny[0].action, Action::Block);
        let hook = spec.hook.as_ref().unwrap();
        assert_eq!(
            (hook.timeout_ms, hook.applies_to),
            (1_000, AppliesTo::Input)
        );
        let again: PolicySpec =
            serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(again, spec);
    }

    #[test]
    fn refuses_unknown_fields() {
        let result = serde_json::from_value::<PolicySpec>(serde_json::json!({"maxInputChar": 10}));
        assert!(result.is_err());
    }
}
