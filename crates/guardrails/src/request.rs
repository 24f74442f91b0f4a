//! The service the completion pipeline calls: [`Guardrails`] holds the hook port and starts
//! a [`GuardedRequest`] per request, which owns that request's vault and record and runs its
//! checks: the input texts (size, rules), the hook, the finished answer, and the restorer
//! for a streamed one.

use std::{borrow::Cow, sync::Arc};

use tracing::Instrument;

use crate::{
    Blocked, CheckKind, Direction, FailMode, GuardrailHook, GuardrailPolicy, GuardrailRecord,
    HookError, HookFailure, HookRequest, HookVerdict, NoHook, Pseudonyms, RuleId, StreamRestorer,
    record::{Effect, RuleOutcome},
};

/// Starts guarded requests; one per process, holding the hook adapter.
#[derive(Clone)]
pub struct Guardrails {
    hook: Arc<dyn GuardrailHook>,
}

impl Guardrails {
    pub fn new(hook: Arc<dyn GuardrailHook>) -> Self {
        Self { hook }
    }

    /// Without a hook client: policies that name a hook follow their fail mode.
    pub fn without_hook() -> Self {
        Self::new(Arc::new(NoHook))
    }

    /// A request checked against `policy` (the organization's refined by the model's), with
    /// a vault of its own.
    pub fn begin(&self, policy: GuardrailPolicy) -> GuardedRequest {
        GuardedRequest {
            policy,
            hook: Arc::clone(&self.hook),
            vault: Pseudonyms::new(),
            record: GuardrailRecord::default(),
            input_chars: 0,
        }
    }
}

/// One request's guardrails: its policy, vault and record.
pub struct GuardedRequest {
    policy: GuardrailPolicy,
    hook: Arc<dyn GuardrailHook>,
    vault: Pseudonyms,
    record: GuardrailRecord,
    input_chars: u64,
}

impl GuardedRequest {
    pub fn policy(&self) -> &GuardrailPolicy {
        &self.policy
    }

    /// Checks one input text (a message's content, a tool result) and returns what the
    /// provider may see. The size limit counts every input text of the request together.
    pub fn check_input<'t>(&mut self, text: &'t str) -> Result<Cow<'t, str>, Blocked> {
        if let Some(max) = self.policy.max_input_chars() {
            self.input_chars = self.input_chars.saturating_add(text.chars().count() as u64);
            if self.input_chars > max {
                let blocked = Blocked {
                    rule: RuleId::input_size(),
                    kind: CheckKind::InputSize,
                    direction: Direction::Input,
                    reason: Some(format!("the input holds more than {max} characters")),
                    hook_failure: None,
                };
                self.note(
                    &blocked.rule,
                    blocked.kind,
                    Direction::Input,
                    Effect::Blocked,
                    None,
                );
                return Err(blocked);
            }
        }
        self.policy
            .apply(text, Direction::Input, &mut self.vault, &mut self.record)
    }

    /// Asks the policy's hook about `texts` (already checked: what the provider would see,
    /// or the answer), if it applies to `direction`. A service that does not answer within
    /// the timeout, cannot be reached or answers nonsense lets the texts pass when the
    /// policy fails open, and refuses them when it fails closed.
    pub async fn consult_hook(
        &mut self,
        direction: Direction,
        texts: &[&str],
    ) -> Result<(), Blocked> {
        let Some(settings) = self
            .policy
            .hook()
            .filter(|hook| hook.applies_to.includes(direction))
        else {
            return Ok(());
        };
        let request = HookRequest { direction, texts };
        let span = tracing::info_span!(
            "guardrail hook",
            tessera.guardrail.direction = direction.as_str(),
            tessera.guardrail.verdict = tracing::field::Empty,
        );
        let answer = tokio::time::timeout(settings.timeout, self.hook.check(settings, request))
            .instrument(span.clone())
            .await
            .unwrap_or(Err(HookError::Timeout));
        let verdict = match &answer {
            Ok(HookVerdict::Allow) => "allow",
            Ok(HookVerdict::Block { .. }) => "block",
            Err(error) => HookFailure::from(error).as_str(),
        };
        span.record("tessera.guardrail.verdict", verdict);
        let rule = RuleId::hook();
        let blocked = |reason: Option<String>, hook_failure: Option<HookFailure>| Blocked {
            rule: RuleId::hook(),
            kind: CheckKind::Hook,
            direction,
            reason,
            hook_failure,
        };
        match answer {
            Ok(HookVerdict::Allow) => {
                self.note(&rule, CheckKind::Hook, direction, Effect::Passed, None);
                Ok(())
            }
            Ok(HookVerdict::Block { reason }) => {
                self.note(&rule, CheckKind::Hook, direction, Effect::Blocked, None);
                let reason: String = reason.chars().take(HookVerdict::MAX_REASON_CHARS).collect();
                Err(blocked(Some(reason), None))
            }
            Err(error) => {
                let failure = HookFailure::from(&error);
                match settings.fail_mode {
                    FailMode::Open => {
                        self.note(
                            &rule,
                            CheckKind::Hook,
                            direction,
                            Effect::Passed,
                            Some(failure),
                        );
                        Ok(())
                    }
                    FailMode::Closed => {
                        self.note(
                            &rule,
                            CheckKind::Hook,
                            direction,
                            Effect::Blocked,
                            Some(failure),
                        );
                        Err(blocked(None, Some(failure)))
                    }
                }
            }
        }
    }

    /// Checks a finished answer (as the model wrote it, placeholders included) and returns
    /// what the client may see: output rules applied, then this request's placeholders
    /// restored.
    pub fn check_output<'t>(&mut self, text: &'t str) -> Result<Cow<'t, str>, Blocked> {
        let checked =
            self.policy
                .apply(text, Direction::Output, &mut self.vault, &mut self.record)?;
        Ok(match checked {
            Cow::Borrowed(text) => self.vault.restore(text),
            Cow::Owned(text) => Cow::Owned(self.vault.restore(&text).into_owned()),
        })
    }

    /// A restorer for the answer's stream, with this request's vault.
    pub fn restorer(&self) -> StreamRestorer {
        StreamRestorer::new(self.vault.clone())
    }

    pub fn pseudonyms(&self) -> &Pseudonyms {
        &self.vault
    }

    pub fn record(&self) -> &GuardrailRecord {
        &self.record
    }

    pub fn into_record(self) -> GuardrailRecord {
        self.record
    }

    fn note(
        &mut self,
        rule: &RuleId,
        kind: CheckKind,
        direction: Direction,
        effect: Effect,
        hook_failure: Option<HookFailure>,
    ) {
        self.record.add(RuleOutcome {
            rule: rule.clone(),
            kind,
            direction,
            effect,
            count: 1,
            hook_failure,
        });
    }
}

impl std::fmt::Debug for GuardedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedRequest")
            .field("vault", &self.vault)
            .field("record", &self.record)
            .field("input_chars", &self.input_chars)
            .finish_non_exhaustive()
    }
}
