use serde_json::json;
use tessera_kernel::TargetPolicy;

use super::*;
use crate::PolicySpec;

fn policy(value: serde_json::Value) -> GuardrailPolicy {
    let spec: PolicySpec = serde_json::from_value(value).unwrap();
    GuardrailPolicy::new(spec, TargetPolicy::default(), &[]).unwrap()
}

fn apply(
    policy: &GuardrailPolicy,
    text: &str,
    direction: Direction,
) -> (Result<String, Blocked>, Pseudonyms, GuardrailRecord) {
    let mut vault = Pseudonyms::new();
    let mut record = GuardrailRecord::default();
    let result = policy
        .apply(text, direction, &mut vault, &mut record)
        .map(Cow::into_owned);
    (result, vault, record)
}

#[test]
fn redacts_with_masks_naming_the_kind() {
    let policy = policy(json!({"pii": [
        {"id": "emails", "kind": "email", "action": "redact"},
        {"id": "cards", "kind": "payment_card", "action": "redact"}
    ]}));
    let (result, vault, record) = apply(
        &policy,
        "Mail jane@example.org, card 4111 1111 1111 1111, or bob@example.org.",
        Direction::Input,
    );
    assert_eq!(
        result.unwrap(),
        "Mail [REDACTED:EMAIL], card [REDACTED:CARD], or [REDACTED:EMAIL]."
    );
    assert!(vault.is_empty());
    let counts: Vec<(&str, Effect, u32)> = record
        .outcomes()
        .iter()
        .map(|outcome| (outcome.rule.as_str(), outcome.effect, outcome.count))
        .collect();
    assert_eq!(
        counts,
        [
            ("emails", Effect::Redacted, 2),
            ("cards", Effect::Redacted, 1)
        ]
    );
}

#[test]
fn pseudonymises_and_the_answer_is_restored() {
    let policy = policy(json!({"pii": [
        {"id": "emails", "kind": "email", "action": "pseudonymise"},
        {"id": "phones", "kind": "phone", "action": "pseudonymise"}
    ]}));
    let text = "jane@example.org and +1 415 555 2671; again jane@example.org";
    let (result, vault, record) = apply(&policy, text, Direction::Input);
    let sent = result.unwrap();
    assert_eq!(sent, "⟦EMAIL_1⟧ and ⟦PHONE_1⟧; again ⟦EMAIL_1⟧");
    assert_eq!(vault.restore(&sent), text);
    assert_eq!(record.outcomes()[0].count, 2);
    // A record never holds a value.
    let stored = serde_json::to_string(&record).unwrap();
    assert!(!stored.contains("jane") && !stored.contains("415"));
}

#[test]
fn blocks_naming_the_rule_never_the_value() {
    let policy = policy(json!({"pii": [
        {"id": "emails", "kind": "email", "action": "redact"},
        {"id": "no-ibans", "kind": "iban", "action": "block", "appliesTo": "input"}
    ]}));
    let (result, _, record) = apply(
        &policy,
        "a@example.org pays DE89 3704 0044 0532 0130 00",
        Direction::Input,
    );
    let blocked = result.unwrap_err();
    assert_eq!(
        (blocked.rule.as_str(), blocked.kind),
        ("no-ibans", CheckKind::Pii(PiiKind::Iban))
    );
    assert!(!blocked.to_string().contains("DE89"));
    assert_eq!(record.blocked().unwrap().rule.as_str(), "no-ibans");
    // The rule applies to input only: the same text passes as output, the email redacted.
    let (result, _, _) = apply(
        &policy,
        "a@example.org pays DE89 3704 0044 0532 0130 00",
        Direction::Output,
    );
    assert_eq!(
        result.unwrap(),
        "[REDACTED:EMAIL] pays DE89 3704 0044 0532 0130 00"
    );
}

#[test]
fn a_block_inside_a_longer_mask_still_blocks() {
    let policy = policy(json!({
        "pii": [{"id": "emails", "kind": "email", "action": "redact"}],
        "deny": [{"id": "competitor", "words": ["globex"]}]
    }));
    let (result, _, _) = apply(&policy, "write to sales@globex.com", Direction::Input);
    assert_eq!(result.unwrap_err().rule.as_str(), "competitor");
}

#[test]
fn allow_lists_exempt_what_they_contain() {
    let policy = policy(json!({
        "pii": [{"id": "emails", "kind": "email", "action": "block"}],
        "deny": [{"id": "words", "words": ["internal"], "action": "redact"}],
        "allow": {"words": ["support@tessera.dev", "jane"], "patterns": ["internal use only"]}
    }));
    let (result, _, _) = apply(
        &policy,
        "Ask support@tessera.dev (internal use only) about internal",
        Direction::Input,
    );
    assert_eq!(
        result.unwrap(),
        "Ask support@tessera.dev (internal use only) about [REDACTED:DENIED]"
    );
    let (result, _, _) = apply(&policy, "jane@example.org", Direction::Input);
    assert_eq!(result.unwrap_err().rule.as_str(), "emails");
}

#[test]
fn overlapping_findings_keep_the_longest_then_the_earliest() {
    let policy = policy(json!({
        "pii": [{"id": "emails", "kind": "email", "action": "redact"}],
        "deny": [
            {"id": "short", "words": ["example"], "action": "redact"},
            {"id": "later-pair", "patterns": ["bc"], "action": "redact"},
            {"id": "pair", "patterns": ["ab"], "action": "redact"},
            {"id": "same", "patterns": ["zz-top"], "action": "redact"},
            {"id": "same-later", "patterns": ["zz-top"], "action": "pseudonymise"}
        ]
    }));
    let Scan::Findings(findings) = policy.scan("jane@example.org abc zz-top", Direction::Input)
    else {
        panic!("not blocked");
    };
    let found: Vec<(&str, Range<usize>)> = findings
        .iter()
        .map(|finding| (finding.rule.as_str(), finding.range.clone()))
        .collect();
    assert_eq!(
        found,
        [("emails", 0..16), ("pair", 17..19), ("same", 21..27)]
    );
}

#[test]
fn pseudonymise_masks_as_redact_on_output() {
    let policy =
        policy(json!({"pii": [{"id": "emails", "kind": "email", "action": "pseudonymise"}]}));
    let (result, vault, record) = apply(&policy, "from bob@example.org", Direction::Output);
    assert_eq!(result.unwrap(), "from [REDACTED:EMAIL]");
    assert!(vault.is_empty());
    assert_eq!(record.outcomes()[0].effect, Effect::Redacted);
}

#[test]
fn input_brackets_cannot_forge_a_placeholder() {
    let policy =
        policy(json!({"pii": [{"id": "emails", "kind": "email", "action": "pseudonymise"}]}));
    let (result, vault, _) = apply(
        &policy,
        "⟦EMAIL_1⟧ is mine, a@example.org is not",
        Direction::Input,
    );
    let sent = result.unwrap();
    assert_eq!(sent, "〚EMAIL_1〛 is mine, ⟦EMAIL_1⟧ is not");
    assert_eq!(
        vault.restore(&sent),
        "〚EMAIL_1〛 is mine, a@example.org is not"
    );
}

#[test]
fn nothing_found_borrows_the_text() {
    let policy = policy(json!({"pii": [{"id": "emails", "kind": "email", "action": "redact"}]}));
    let mut vault = Pseudonyms::new();
    let mut record = GuardrailRecord::default();
    let result = policy
        .apply("nothing here", Direction::Input, &mut vault, &mut record)
        .unwrap();
    assert!(matches!(result, Cow::Borrowed("nothing here")));
    assert!(record.is_empty());
}
