use serde_json::json;
use tessera_kernel::{DomainError, FieldError, LocSegment, TargetPolicy};

use super::*;

fn spec(value: serde_json::Value) -> PolicySpec {
    serde_json::from_value(value).unwrap()
}

fn errors(value: serde_json::Value) -> Vec<FieldError> {
    match GuardrailPolicy::new(spec(value), TargetPolicy::default(), &["body".into()]) {
        Err(DomainError::Validation(errors)) => errors,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

fn loc(error: &FieldError) -> String {
    error
        .loc
        .iter()
        .map(|segment| match segment {
            LocSegment::Field(name) => name.clone(),
            LocSegment::Index(index) => index.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn located(errors: &[FieldError]) -> Vec<(String, &str)> {
    errors
        .iter()
        .map(|error| (loc(error), error.kind.as_str()))
        .collect()
}

#[test]
fn a_valid_policy_keeps_its_spec() {
    let written = json!({
        "pii": [
            {"id": "emails", "kind": "email", "action": "pseudonymise"},
            {"id": "cards", "kind": "payment_card", "action": "block", "appliesTo": "input"}
        ],
        "deny": [{"id": "codenames", "words": ["Project Falcon"], "patterns": ["(?i)falcon-\\d+"]}],
        "allow": {"words": ["support@tessera.dev"]},
        "maxInputChars": 100000,
        "hook": {"url": "https://guard.example/check", "timeoutMs": 500, "failMode": "open"}
    });
    let policy = GuardrailPolicy::new(spec(written.clone()), TargetPolicy::default(), &[]).unwrap();
    assert!(!policy.is_empty());
    assert!(policy.pseudonymises_input());
    assert_eq!(policy.rules().len(), 3);
    assert_eq!(policy.max_input_chars(), Some(100_000));
    assert_eq!(
        policy.hook().unwrap().timeout,
        std::time::Duration::from_millis(500)
    );
    let again = serde_json::to_value(&policy).unwrap();
    assert_eq!(spec(again), spec(written));
    assert!(GuardrailPolicy::empty().is_empty());
}

#[test]
fn bad_and_too_complex_patterns_are_located() {
    let found = errors(json!({
        "deny": [{"id": "d", "patterns": ["ok", "(unclosed", "\\w{1000}", "x*"]}],
        "allow": {"patterns": ["[z-a]"]}
    }));
    assert_eq!(
        located(&found),
        [
            ("body.deny.0.patterns.1".into(), "pattern_invalid"),
            ("body.deny.0.patterns.2".into(), "pattern_too_complex"),
            ("body.deny.0.patterns.3".into(), "pattern_matches_empty"),
            ("body.allow.patterns.0".into(), "pattern_invalid"),
        ]
    );
    assert_eq!(
        found[0].msg,
        "not a valid regular expression: unclosed group"
    );
    assert!(found[1].msg.starts_with("too complex"), "{}", found[1].msg);
}

#[test]
fn too_long_patterns_and_words_are_located() {
    let long_pattern = "a".repeat(limits::MAX_PATTERN_CHARS + 1);
    let long_word = "w".repeat(limits::MAX_WORD_CHARS + 1);
    let found = errors(json!({
        "deny": [{"id": "d", "words": ["fine", " ", long_word, "tab\u{7}"], "patterns": [long_pattern]}]
    }));
    assert_eq!(
        located(&found),
        [
            ("body.deny.0.words.1".into(), "too_short"),
            ("body.deny.0.words.2".into(), "too_long"),
            ("body.deny.0.words.3".into(), "value_error"),
            ("body.deny.0.patterns.0".into(), "pattern_too_long"),
        ]
    );
}

#[test]
fn rule_ids_are_valid_unique_and_not_reserved() {
    let found = errors(json!({
        "pii": [
            {"id": "Emails", "kind": "email", "action": "redact"},
            {"id": "same", "kind": "phone", "action": "redact"},
            {"id": "hook", "kind": "iban", "action": "redact"}
        ],
        "deny": [{"id": "same", "words": ["x"]}]
    }));
    assert_eq!(
        located(&found),
        [
            ("body.pii.0.id".into(), "rule_id_invalid"),
            ("body.pii.2.id".into(), "rule_id_reserved"),
            ("body.deny.0.id".into(), "rule_id_duplicate"),
        ]
    );
}

#[test]
fn actions_sizes_and_the_hook_are_checked() {
    let found = errors(json!({
        "pii": [{"id": "e", "kind": "email", "action": "pseudonymise", "appliesTo": "output"}],
        "deny": [{"id": "empty"}],
        "maxInputChars": 0,
        "hook": {"url": "http://127.0.0.1:9000/check", "timeoutMs": 0, "failMode": "closed"}
    }));
    assert_eq!(
        located(&found),
        [
            ("body.pii.0.action".into(), "value_error"),
            ("body.deny.0".into(), "missing"),
            ("body.maxInputChars".into(), "range"),
            ("body.hook.url".into(), "invalid_url"),
            ("body.hook.timeoutMs".into(), "range"),
        ]
    );
    let allowed = TargetPolicy {
        allow_private_targets: true,
    };
    let local_hook =
        spec(json!({"hook": {"url": "http://127.0.0.1:9000/check", "failMode": "closed"}}));
    assert!(GuardrailPolicy::new(local_hook, allowed, &[]).is_ok());
}

#[test]
fn too_many_rules_are_refused() {
    let rules: Vec<_> = (0..=limits::MAX_RULES)
        .map(|index| json!({"id": format!("r{index}"), "kind": "email", "action": "redact"}))
        .collect();
    assert_eq!(
        located(&errors(json!({"pii": rules}))),
        [("body".into(), "too_long")]
    );
}

/// An unknown kind is refused when the JSON is read; the wire crate's parser locates serde's
/// errors by their path, which names the field.
#[test]
fn an_unknown_kind_is_refused_at_its_path() {
    let text = r#"{"pii": [{"id": "e", "kind": "email", "action": "redact"},
                         {"id": "p", "kind": "passport", "action": "redact"}]}"#;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let error = serde_path_to_error::deserialize::<_, PolicySpec>(&mut deserializer).unwrap_err();
    assert_eq!(error.path().to_string(), "pii[1].kind");
    assert!(
        error
            .inner()
            .to_string()
            .contains("unknown variant `passport`"),
        "{}",
        error.inner()
    );
}

#[test]
fn a_model_policy_refines_the_organization_policy() {
    let organization = GuardrailPolicy::new(
        spec(json!({
            "pii": [
                {"id": "emails", "kind": "email", "action": "block"},
                {"id": "cards", "kind": "payment_card", "action": "block"}
            ],
            "allow": {"words": ["acme"]},
            "maxInputChars": 1000,
            "hook": {"url": "https://org.example/check", "failMode": "closed"}
        })),
        TargetPolicy::default(),
        &[],
    )
    .unwrap();
    let model = GuardrailPolicy::new(
        spec(json!({
            "pii": [{"id": "emails", "kind": "email", "action": "pseudonymise"}],
            "deny": [{"id": "codenames", "words": ["falcon"], "action": "redact"}],
            "allow": {"words": ["tessera", "acme"]},
            "maxInputChars": 5000
        })),
        TargetPolicy::default(),
        &[],
    )
    .unwrap();
    let refined = organization.refined_by(&model);
    let ids: Vec<&str> = refined
        .rules()
        .iter()
        .map(|rule| rule.id.as_str())
        .collect();
    assert_eq!(ids, ["emails", "codenames", "cards"]);
    assert_eq!(refined.rules()[0].action, Action::Pseudonymise);
    assert_eq!(refined.max_input_chars(), Some(1000));
    assert_eq!(refined.hook().unwrap().url, "https://org.example/check");
    assert_eq!(refined.allow().len(), 2);
    let spec = refined.spec();
    assert_eq!(spec.pii.len(), 2);
    assert_eq!(spec.allow.words, ["acme", "tessera"]);
    assert_eq!(spec.max_input_chars, Some(1000));
}

#[test]
fn a_policy_checks_output_when_a_rule_or_its_hook_applies_to_answers() {
    let policy = |value| GuardrailPolicy::new(spec(value), TargetPolicy::default(), &[]).unwrap();
    let input_only = json!({
        "pii": [{"id": "emails", "kind": "email", "action": "pseudonymise", "appliesTo": "input"}],
        "hook": {"url": "https://guard.example/check", "failMode": "open", "appliesTo": "input"}
    });
    assert!(!policy(input_only).checks_output());
    assert!(!GuardrailPolicy::empty().checks_output());
    let both = json!({"pii": [{"id": "emails", "kind": "email", "action": "redact"}]});
    assert!(policy(both).checks_output());
    let deny_output = json!({"deny": [{"id": "w", "words": ["falcon"], "appliesTo": "output"}]});
    assert!(policy(deny_output).checks_output());
    let hook_output = json!({
        "hook": {"url": "https://guard.example/check", "failMode": "closed", "appliesTo": "both"}
    });
    assert!(policy(hook_output).checks_output());
}
