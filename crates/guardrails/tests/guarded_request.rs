//! A request through the guardrails as the completion pipeline will run it: input texts
//! checked one by one against one size limit, the hook consulted with what the provider
//! would see (its verdicts, its timeout and both fail modes), the answer restored whole or
//! as it streams, and the record that stays.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use serde_json::json;
use tessera_guardrails::{
    CheckKind, Direction, Effect, GuardrailHook, GuardrailPolicy, Guardrails, HookError,
    HookFailure, HookRequest, HookSettings, HookVerdict, PolicySpec,
};
use tessera_kernel::TargetPolicy;

fn policy(value: serde_json::Value) -> GuardrailPolicy {
    let spec: PolicySpec = serde_json::from_value(value).unwrap();
    GuardrailPolicy::new(spec, TargetPolicy::default(), &[]).unwrap()
}

/// A hook that answers as told, after an optional delay, and keeps what it was asked.
struct ScriptedHook {
    answer: Result<HookVerdict, HookError>,
    delay: Duration,
    asked: Mutex<Vec<String>>,
}

impl ScriptedHook {
    fn new(answer: Result<HookVerdict, HookError>) -> Arc<Self> {
        Arc::new(Self {
            answer,
            delay: Duration::ZERO,
            asked: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl GuardrailHook for ScriptedHook {
    async fn check(
        &self,
        _settings: &HookSettings,
        request: HookRequest<'_>,
    ) -> Result<HookVerdict, HookError> {
        self.asked
            .lock()
            .unwrap()
            .extend(request.texts.iter().map(|text| (*text).to_owned()));
        tokio::time::sleep(self.delay).await;
        self.answer.clone()
    }
}

fn with_hook(fail_mode: &str) -> GuardrailPolicy {
    policy(json!({
        "pii": [{"id": "emails", "kind": "email", "action": "pseudonymise"}],
        "hook": {"url": "https://guard.example/check", "timeoutMs": 200, "failMode": fail_mode}
    }))
}

#[tokio::test]
async fn a_conversation_is_pseudonymised_checked_and_restored() {
    let hook = ScriptedHook::new(Ok(HookVerdict::Allow));
    let guardrails = Guardrails::new(hook.clone());
    let mut guard = guardrails.begin(with_hook("closed"));
    let messages = [
        "I am jane@example.org.",
        "Forward it to bob@example.org and jane@example.org.",
    ];
    let sent: Vec<String> = messages
        .iter()
        .map(|message| guard.check_input(message).unwrap().into_owned())
        .collect();
    assert_eq!(
        sent,
        ["I am ⟦EMAIL_1⟧.", "Forward it to ⟦EMAIL_2⟧ and ⟦EMAIL_1⟧."]
    );
    let texts: Vec<&str> = sent.iter().map(String::as_str).collect();
    guard.consult_hook(Direction::Input, &texts).await.unwrap();
    assert_eq!(
        *hook.asked.lock().unwrap(),
        sent,
        "the hook sees what the provider sees"
    );

    // The answer streams with a placeholder cut in two, and is restored whole as well.
    let deltas = ["Done: ⟦EMA", "IL_2⟧ has it, ⟦EMAIL_1⟧", " was copied."];
    let mut restorer = guard.restorer();
    let mut streamed: String = deltas
        .iter()
        .map(|delta| restorer.push(delta).into_owned())
        .collect();
    streamed.push_str(&restorer.finish());
    assert_eq!(
        streamed,
        "Done: bob@example.org has it, jane@example.org was copied."
    );
    assert_eq!(guard.check_output(&deltas.concat()).unwrap(), streamed);

    let record = guard.into_record();
    let outcomes: Vec<(&str, Direction, Effect, u32)> = record
        .outcomes()
        .iter()
        .map(|o| (o.rule.as_str(), o.direction, o.effect, o.count))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("emails", Direction::Input, Effect::Pseudonymised, 3),
            ("hook", Direction::Input, Effect::Passed, 1),
        ]
    );
    let stored = serde_json::to_string(&record).unwrap();
    assert!(!stored.contains("example.org"), "{stored}");
}

#[tokio::test]
async fn the_size_limit_counts_every_input_text() {
    let guardrails = Guardrails::without_hook();
    let mut guard = guardrails.begin(policy(json!({"maxInputChars": 10})));
    assert!(guard.check_input("ünïcödé").is_ok());
    let blocked = guard.check_input("four").unwrap_err();
    assert_eq!(
        (blocked.rule.as_str(), blocked.kind),
        ("max_input_chars", CheckKind::InputSize)
    );
    assert_eq!(
        blocked.to_string(),
        "the input was blocked by guardrail rule `max_input_chars`: the input holds more than 10 characters"
    );
    assert_eq!(
        guard.record().blocked().unwrap().rule.as_str(),
        "max_input_chars"
    );
}

#[tokio::test]
async fn the_hook_can_block_with_its_reason() {
    let hook = ScriptedHook::new(Ok(HookVerdict::Block {
        reason: "prompt injection detected".repeat(20),
    }));
    let mut guard = Guardrails::new(hook).begin(with_hook("open"));
    let blocked = guard
        .consult_hook(Direction::Input, &["hello"])
        .await
        .unwrap_err();
    assert_eq!(
        (blocked.rule.as_str(), blocked.kind),
        ("hook", CheckKind::Hook)
    );
    let reason = blocked.reason.unwrap();
    assert!(reason.starts_with("prompt injection detected"));
    assert_eq!(reason.chars().count(), HookVerdict::MAX_REASON_CHARS);
}

#[tokio::test(start_paused = true)]
async fn a_hook_that_times_out_follows_the_fail_mode() {
    for (fail_mode, passes) in [("open", true), ("closed", false)] {
        let hook = Arc::new(ScriptedHook {
            answer: Ok(HookVerdict::Allow),
            delay: Duration::from_secs(5),
            asked: Mutex::new(Vec::new()),
        });
        let mut guard = Guardrails::new(hook).begin(with_hook(fail_mode));
        let result = guard.consult_hook(Direction::Input, &["hello"]).await;
        assert_eq!(result.is_ok(), passes, "{fail_mode}");
        let outcome = &guard.record().outcomes()[0];
        assert_eq!(outcome.hook_failure, Some(HookFailure::Timeout));
        assert_eq!(
            outcome.effect,
            if passes {
                Effect::Passed
            } else {
                Effect::Blocked
            }
        );
        if let Err(blocked) = result {
            assert_eq!(blocked.hook_failure, Some(HookFailure::Timeout));
        }
    }
}

#[tokio::test]
async fn without_a_hook_client_the_fail_mode_decides() {
    let guardrails = Guardrails::without_hook();
    let mut open = guardrails.begin(with_hook("open"));
    assert!(open.consult_hook(Direction::Input, &["hi"]).await.is_ok());
    let mut closed = guardrails.begin(with_hook("closed"));
    let blocked = closed
        .consult_hook(Direction::Input, &["hi"])
        .await
        .unwrap_err();
    assert_eq!(blocked.hook_failure, Some(HookFailure::NotConfigured));
    // The hook applies to input only: answers are not sent to it.
    assert!(
        closed
            .consult_hook(Direction::Output, &["hi"])
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn vaults_are_never_shared_between_requests() {
    let guardrails = Guardrails::without_hook();
    let policy =
        policy(json!({"pii": [{"id": "emails", "kind": "email", "action": "pseudonymise"}]}));
    let mut first = guardrails.begin(policy.clone());
    let mut second = guardrails.begin(policy);
    assert_eq!(first.check_input("a@example.org").unwrap(), "⟦EMAIL_1⟧");
    assert_eq!(second.check_input("b@example.org").unwrap(), "⟦EMAIL_1⟧");
    assert_eq!(first.check_output("⟦EMAIL_1⟧").unwrap(), "a@example.org");
    assert_eq!(second.check_output("⟦EMAIL_1⟧").unwrap(), "b@example.org");
    let fresh = guardrails.begin(GuardrailPolicy::empty());
    let mut restorer = fresh.restorer();
    assert_eq!(restorer.push("⟦EMAIL_1⟧"), "⟦EMAIL_1⟧");
}

#[tokio::test]
async fn output_rules_apply_before_placeholders_are_restored() {
    let mut guard = Guardrails::without_hook().begin(policy(json!({"pii": [
        {"id": "emails", "kind": "email", "action": "pseudonymise"},
        {"id": "no-cards-out", "kind": "payment_card", "action": "block", "appliesTo": "output"}
    ]})));
    guard.check_input("me: jane@example.org").unwrap();
    assert_eq!(
        guard
            .check_output("Hi ⟦EMAIL_1⟧, a new one: bob@example.org")
            .unwrap(),
        "Hi jane@example.org, a new one: [REDACTED:EMAIL]"
    );
    let blocked = guard.check_output("Use 4111 1111 1111 1111.").unwrap_err();
    assert_eq!(
        (blocked.rule.as_str(), blocked.direction),
        ("no-cards-out", Direction::Output)
    );
}
