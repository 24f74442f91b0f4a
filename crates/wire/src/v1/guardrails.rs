//! The bodies of `/v1/guardrails`: a guardrail policy as written (the request of a `PUT`,
//! the same shape as `tessera_guardrails::PolicySpec`, unknown fields refused so a misspelt
//! setting is an error rather than a rule silently absent) and as stored (with its scope and
//! who wrote it when).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tessera_guardrails::{
    Action, AppliesTo, DenyRuleSpec, FailMode, HookSpec, ListSpec, PiiKind, PiiRuleSpec,
    PolicyScope, PolicySpec, StoredPolicy,
};
use utoipa::ToSchema;
use validator::Validate;

use crate::itemized;

/// A guardrail policy as written. Rules are checked when it is written: each problem is a
/// 422 located where it is (`body.deny.0.patterns.2`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, Validate)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GuardrailPolicyIn {
    /// What to do with each kind of personal or secret data.
    #[serde(default)]
    pub pii: Vec<PiiRuleIn>,
    /// Words and patterns that must not pass.
    #[serde(default)]
    pub deny: Vec<DenyRuleIn>,
    /// Words and patterns whose matches are exempt from every PII and deny rule.
    #[serde(default)]
    pub allow: Option<ListIn>,
    /// The most characters (Unicode scalar values) a request's input texts may hold
    /// together.
    #[serde(default)]
    pub max_input_chars: Option<u64>,
    /// An external guardrail service asked about every request.
    #[serde(default)]
    pub hook: Option<HookIn>,
}

/// One kind of PII and what to do with it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PiiRuleIn {
    /// The rule's name (1–64 of `a-z0-9-_.`), unique in the policy, named in refusals and
    /// records.
    #[schema(example = "emails")]
    pub id: String,
    /// `email`, `phone`, `payment_card`, `iban`, `ip_address`, `secret`, `us_ssn`,
    /// `uk_nino`, `fr_nir`, `es_dni`, `it_codice_fiscale`, `nl_bsn`, `in_aadhaar` or
    /// `de_tax_id`.
    #[schema(value_type = String, example = "email")]
    pub kind: PiiKind,
    /// `block`, `redact` or `pseudonymise` (input only).
    #[schema(value_type = String, example = "redact")]
    pub action: Action,
    /// `input`, `output` or `both` (the default).
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "both")]
    pub applies_to: AppliesTo,
}

/// Words and patterns that must not pass, and what to do when they appear.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DenyRuleIn {
    #[schema(example = "projects")]
    pub id: String,
    /// Whole words or phrases, matched case-insensitively.
    #[serde(default)]
    pub words: Vec<String>,
    /// Regular expressions (Rust `regex` syntax), at most 500 characters each.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// `block` (the default), `redact` or `pseudonymise`.
    #[serde(default = "block")]
    #[schema(value_type = Option<String>, example = "block")]
    pub action: Action,
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "both")]
    pub applies_to: AppliesTo,
}

fn block() -> Action {
    Action::Block
}

/// Words and patterns.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListIn {
    #[serde(default)]
    pub words: Vec<String>,
    #[serde(default)]
    pub patterns: Vec<String>,
}

/// The external guardrail service.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookIn {
    #[schema(example = "https://guard.example.com/check")]
    pub url: String,
    /// Milliseconds to wait for its answer (1,000 by default).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// `open` (a request passes when the service fails) or `closed` (it is refused).
    #[schema(value_type = String, example = "closed")]
    pub fail_mode: FailMode,
    /// `input` (the default), `output` or `both`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub applies_to: Option<AppliesTo>,
}

impl From<GuardrailPolicyIn> for PolicySpec {
    fn from(policy: GuardrailPolicyIn) -> Self {
        // Defaults the domain's own deserializer would fill (timeout, hook direction) come
        // from a round trip through it, so they are stated once, there.
        let hook = policy.hook.map(|hook| {
            let mut value = serde_json::json!({ "url": hook.url, "failMode": hook.fail_mode });
            if let Some(timeout) = hook.timeout_ms {
                value["timeoutMs"] = timeout.into();
            }
            if let Some(applies_to) = hook.applies_to {
                value["appliesTo"] = serde_json::to_value(applies_to).unwrap_or_default();
            }
            serde_json::from_value::<HookSpec>(value)
        });
        PolicySpec {
            pii: (policy.pii.into_iter())
                .map(|rule| PiiRuleSpec {
                    id: rule.id,
                    kind: rule.kind,
                    action: rule.action,
                    applies_to: rule.applies_to,
                })
                .collect(),
            deny: (policy.deny.into_iter())
                .map(|rule| DenyRuleSpec {
                    id: rule.id,
                    words: rule.words,
                    patterns: rule.patterns,
                    action: rule.action,
                    applies_to: rule.applies_to,
                })
                .collect(),
            allow: policy
                .allow
                .map(|list| ListSpec {
                    words: list.words,
                    patterns: list.patterns,
                })
                .unwrap_or_default(),
            max_input_chars: policy.max_input_chars,
            // The fields are those of `HookSpec`, so the round trip cannot fail.
            hook: hook.and_then(Result::ok),
        }
    }
}

/// A stored guardrail policy.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailPolicyOut {
    /// `organization` (every completion of the organization) or `model` (a model's,
    /// refining the organization's).
    #[schema(example = "organization")]
    pub scope: String,
    /// The model, for a model's policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "local/smollm2-135m")]
    pub model_id: Option<String>,
    /// The policy as written (the body of its `PUT`).
    #[schema(value_type = GuardrailPolicyIn)]
    pub policy: serde_json::Value,
    pub updated_at: DateTime<Utc>,
    /// Who wrote it last (a user's subject, a client's id).
    pub updated_by: String,
}

impl From<StoredPolicy> for GuardrailPolicyOut {
    fn from(stored: StoredPolicy) -> Self {
        Self {
            scope: stored.scope.kind().to_owned(),
            model_id: match stored.scope {
                PolicyScope::Organization => None,
                PolicyScope::Model(model) => Some(model),
            },
            policy: serde_json::to_value(&stored.spec).unwrap_or_default(),
            updated_at: stored.updated_at,
            updated_by: stored.updated_by,
        }
    }
}

itemized!(GuardrailPolicyOut => GuardrailPolicyList, "The organization's model policies, by model id.");
