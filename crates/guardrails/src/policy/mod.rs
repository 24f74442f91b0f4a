//! Guardrail policies: [`PolicySpec`], a policy as written (serde data), and
//! [`GuardrailPolicy`], the same checked and compiled once, what requests are checked
//! against. A policy is configured for an organization and for a model; the model's refines
//! the organization's ([`GuardrailPolicy::refined_by`]).

pub mod limits;
mod matcher;
mod spec;
mod validate;

use std::{collections::HashSet, sync::Arc};

use serde::{Serialize, Serializer};
use tessera_kernel::{DomainError, LocSegment, TargetPolicy};

pub(crate) use matcher::Matcher;
pub use spec::{DenyRuleSpec, HookSpec, ListSpec, PiiRuleSpec, PolicySpec};

use crate::{Action, AppliesTo, CheckKind, Direction, HookSettings, PiiKind, RuleId};

/// A checked policy: rule ids valid and unique, patterns compiled within their bounds, the
/// hook's URL allowed. Cheap to clone (shared); serializes as its [`PolicySpec`].
#[derive(Debug, Clone)]
pub struct GuardrailPolicy {
    inner: Arc<Compiled>,
}

#[derive(Debug)]
pub(crate) struct Compiled {
    spec: PolicySpec,
    /// PII rules, then deny rules, in the order written: the order breaks ties.
    rules: Vec<Rule>,
    allow: Vec<Arc<Matcher>>,
    max_input_chars: Option<u64>,
    hook: Option<HookSettings>,
}

/// One rule, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) id: RuleId,
    pub(crate) action: Action,
    pub(crate) applies_to: AppliesTo,
    pub(crate) target: Target,
}

/// What a rule looks for.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Pii(PiiKind),
    Deny(Arc<Matcher>),
}

impl Rule {
    pub(crate) fn kind(&self) -> CheckKind {
        match self.target {
            Target::Pii(kind) => CheckKind::Pii(kind),
            Target::Deny(_) => CheckKind::Denied,
        }
    }

    /// What the rule does to a match in `direction`: pseudonymising is for input, and masks
    /// as redacting does on output.
    pub(crate) fn action_in(&self, direction: Direction) -> Action {
        match (self.action, direction) {
            (Action::Pseudonymise, Direction::Output) => Action::Redact,
            (action, _) => action,
        }
    }
}

impl GuardrailPolicy {
    /// Checks `spec`; every problem is a validation error located under `at` (for instance
    /// `["body"]`). `targets` says which hosts the hook's URL may name.
    pub fn new(
        spec: PolicySpec,
        targets: TargetPolicy,
        at: &[LocSegment],
    ) -> Result<Self, DomainError> {
        let compiled = validate::compile(spec, targets, at).map_err(DomainError::Validation)?;
        Ok(Self {
            inner: Arc::new(compiled),
        })
    }

    /// The policy without rules: every check passes.
    pub fn empty() -> Self {
        Self {
            inner: Arc::new(Compiled {
                spec: PolicySpec::default(),
                rules: Vec::new(),
                allow: Vec::new(),
                max_input_chars: None,
                hook: None,
            }),
        }
    }

    pub fn spec(&self) -> &PolicySpec {
        &self.inner.spec
    }

    /// Whether no check would ever do anything, so a pipeline can skip them all.
    pub fn is_empty(&self) -> bool {
        self.inner.rules.is_empty()
            && self.inner.max_input_chars.is_none()
            && self.inner.hook.is_none()
    }

    pub fn max_input_chars(&self) -> Option<u64> {
        self.inner.max_input_chars
    }

    pub fn hook(&self) -> Option<&HookSettings> {
        self.inner.hook.as_ref()
    }

    /// Whether answers are checked (a rule or the hook applies to output), so a pipeline
    /// must see a streamed answer whole before the client does.
    pub fn checks_output(&self) -> bool {
        let output = |applies_to: AppliesTo| applies_to.includes(Direction::Output);
        self.inner.rules.iter().any(|rule| output(rule.applies_to))
            || self.hook().is_some_and(|hook| output(hook.applies_to))
    }

    /// The policy a model's requests are checked against: this (the organization's)
    /// refined by `model`'s. The model's rules come first and replace the organization's
    /// rules of the same id; the organization's other rules stay (so where both match the
    /// same text, a `block` of either still blocks); the allow lists add up; the smaller
    /// size limit applies; the model's hook replaces the organization's.
    pub fn refined_by(&self, model: &GuardrailPolicy) -> GuardrailPolicy {
        let (organization, model) = (&self.inner, &model.inner);
        let replaced: HashSet<&str> = model.rules.iter().map(|rule| rule.id.as_str()).collect();
        let kept = |id: &str| !replaced.contains(id);
        let rules = model
            .rules
            .iter()
            .chain(
                organization
                    .rules
                    .iter()
                    .filter(|rule| kept(rule.id.as_str())),
            )
            .cloned()
            .collect();
        let max_input_chars = match (organization.max_input_chars, model.max_input_chars) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let hook = model.hook.clone().or_else(|| organization.hook.clone());
        let spec = PolicySpec {
            pii: model
                .spec
                .pii
                .iter()
                .chain(organization.spec.pii.iter().filter(|rule| kept(&rule.id)))
                .cloned()
                .collect(),
            deny: model
                .spec
                .deny
                .iter()
                .chain(organization.spec.deny.iter().filter(|rule| kept(&rule.id)))
                .cloned()
                .collect(),
            allow: organization.spec.allow.merged(&model.spec.allow),
            max_input_chars,
            hook: model
                .spec
                .hook
                .clone()
                .or_else(|| organization.spec.hook.clone()),
        };
        GuardrailPolicy {
            inner: Arc::new(Compiled {
                spec,
                rules,
                allow: organization
                    .allow
                    .iter()
                    .chain(&model.allow)
                    .cloned()
                    .collect(),
                max_input_chars,
                hook,
            }),
        }
    }

    pub(crate) fn rules(&self) -> &[Rule] {
        &self.inner.rules
    }

    pub(crate) fn allow(&self) -> &[Arc<Matcher>] {
        &self.inner.allow
    }

    /// Whether some rule pseudonymises input, so input texts must not carry placeholder
    /// brackets of their own.
    pub(crate) fn pseudonymises_input(&self) -> bool {
        self.inner.rules.iter().any(|rule| {
            rule.applies_to.includes(Direction::Input) && rule.action == Action::Pseudonymise
        })
    }
}

impl Serialize for GuardrailPolicy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.inner.spec.serialize(serializer)
    }
}

#[cfg(test)]
mod tests;
