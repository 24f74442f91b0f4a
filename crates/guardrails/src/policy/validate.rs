//! Checking a written policy into its compiled form: every problem becomes a `FieldError`
//! located under the caller's prefix (`body.deny.0.patterns.2`), all reported at once.

use std::{collections::HashSet, sync::Arc, time::Duration};

use regex::Regex;
use tessera_kernel::{FieldError, LocSegment, TargetPolicy};

use super::{
    Compiled, Rule, Target,
    limits::{
        HOOK_TIMEOUT_MS, MAX_HOOK_URL_CHARS, MAX_INPUT_CHARS, MAX_PATTERNS, MAX_RULES,
        MAX_WORD_CHARS, MAX_WORDS,
    },
    matcher::{Matcher, compile_pattern},
    spec::{HookSpec, PolicySpec},
};
use crate::{Action, AppliesTo, HookSettings, RuleId};

/// Collects errors located under a prefix.
struct Errors<'a> {
    at: &'a [LocSegment],
    found: Vec<FieldError>,
}

impl Errors<'_> {
    fn push(&mut self, path: &[LocSegment], msg: impl Into<String>, kind: &str) {
        let loc = self.at.iter().chain(path).cloned();
        self.found.push(FieldError::new(loc, msg, kind));
    }
}

pub(super) fn compile(
    spec: PolicySpec,
    targets: TargetPolicy,
    at: &[LocSegment],
) -> Result<Compiled, Vec<FieldError>> {
    let mut errors = Errors {
        at,
        found: Vec::new(),
    };
    if spec.pii.len() + spec.deny.len() > MAX_RULES {
        errors.push(
            &[],
            format!("at most {MAX_RULES} PII and deny rules together"),
            "too_long",
        );
    }
    let mut ids = HashSet::new();
    let mut rules = Vec::with_capacity(spec.pii.len() + spec.deny.len());
    for (index, rule) in spec.pii.iter().enumerate() {
        let path = ["pii".into(), index.into()];
        let id = rule_id(&mut errors, &path, &rule.id, &mut ids);
        check_action(&mut errors, &path, rule.action, rule.applies_to);
        if let Some(id) = id {
            rules.push(Rule {
                id,
                action: rule.action,
                applies_to: rule.applies_to,
                target: Target::Pii(rule.kind),
            });
        }
    }
    for (index, rule) in spec.deny.iter().enumerate() {
        let path = ["deny".into(), index.into()];
        let id = rule_id(&mut errors, &path, &rule.id, &mut ids);
        check_action(&mut errors, &path, rule.action, rule.applies_to);
        if rule.words.is_empty() && rule.patterns.is_empty() {
            errors.push(
                &path,
                "a deny rule needs at least one word or pattern",
                "missing",
            );
        }
        let matcher = list(&mut errors, &path, &rule.words, &rule.patterns);
        if let (Some(id), Some(matcher)) = (id, matcher) {
            rules.push(Rule {
                id,
                action: rule.action,
                applies_to: rule.applies_to,
                target: Target::Deny(Arc::new(matcher)),
            });
        }
    }
    let allow = list(
        &mut errors,
        &["allow".into()],
        &spec.allow.words,
        &spec.allow.patterns,
    )
    .filter(|matcher| !matcher.is_empty())
    .map(Arc::new);
    if let Some(max) = spec.max_input_chars
        && !(1..=MAX_INPUT_CHARS).contains(&max)
    {
        errors.push(
            &["maxInputChars".into()],
            format!("must be between 1 and {MAX_INPUT_CHARS}"),
            "range",
        );
    }
    let hook = spec
        .hook
        .as_ref()
        .and_then(|hook| hook_settings(&mut errors, hook, targets));
    if !errors.found.is_empty() {
        return Err(errors.found);
    }
    Ok(Compiled {
        max_input_chars: spec.max_input_chars,
        spec,
        rules,
        allow: allow.into_iter().collect(),
        hook,
    })
}

fn rule_id(
    errors: &mut Errors<'_>,
    path: &[LocSegment; 2],
    text: &str,
    ids: &mut HashSet<RuleId>,
) -> Option<RuleId> {
    let loc = [path[0].clone(), path[1].clone(), "id".into()];
    match text.parse::<RuleId>() {
        Err(error) => {
            errors.push(&loc, error.to_string(), "rule_id_invalid");
            None
        }
        Ok(id) if id.is_reserved() => {
            errors.push(
                &loc,
                format!("`{id}` is reserved for a built-in check"),
                "rule_id_reserved",
            );
            None
        }
        Ok(id) if !ids.insert(id.clone()) => {
            errors.push(
                &loc,
                format!("another rule already has the id `{id}`"),
                "rule_id_duplicate",
            );
            None
        }
        Ok(id) => Some(id),
    }
}

fn check_action(
    errors: &mut Errors<'_>,
    path: &[LocSegment; 2],
    action: Action,
    applies_to: AppliesTo,
) {
    if action == Action::Pseudonymise && applies_to == AppliesTo::Output {
        errors.push(
            &[path[0].clone(), path[1].clone(), "action".into()],
            "pseudonymise hides values from the provider, so it applies to input; use redact for output",
            "value_error",
        );
    }
}

/// A list's words and patterns, each checked where it stands.
fn list(
    errors: &mut Errors<'_>,
    path: &[LocSegment],
    words: &[String],
    patterns: &[String],
) -> Option<Matcher> {
    let before = errors.found.len();
    let at = |field: &str, index: Option<usize>| {
        let mut loc = path.to_vec();
        loc.push(field.into());
        loc.extend(index.map(LocSegment::from));
        loc
    };
    if words.len() > MAX_WORDS {
        errors.push(
            &at("words", None),
            format!("at most {MAX_WORDS} words"),
            "too_long",
        );
    }
    for (index, word) in words.iter().enumerate() {
        let trimmed = word.trim();
        if trimmed.is_empty() {
            errors.push(
                &at("words", Some(index)),
                "a word must not be blank",
                "too_short",
            );
        } else if trimmed.chars().count() > MAX_WORD_CHARS {
            errors.push(
                &at("words", Some(index)),
                format!("at most {MAX_WORD_CHARS} characters"),
                "too_long",
            );
        } else if trimmed.chars().any(char::is_control) {
            errors.push(
                &at("words", Some(index)),
                "control characters are not allowed",
                "value_error",
            );
        }
    }
    if patterns.len() > MAX_PATTERNS {
        errors.push(
            &at("patterns", None),
            format!("at most {MAX_PATTERNS} patterns"),
            "too_long",
        );
    }
    let mut compiled: Vec<Regex> = Vec::with_capacity(patterns.len());
    for (index, pattern) in patterns.iter().enumerate() {
        match compile_pattern(pattern) {
            Ok(regex) => compiled.push(regex),
            Err(error) => errors.push(
                &at("patterns", Some(index)),
                error.to_string(),
                error.kind(),
            ),
        }
    }
    if errors.found.len() > before {
        return None;
    }
    match Matcher::new(words, compiled) {
        Ok(matcher) => Some(matcher),
        Err(error) => {
            errors.push(&at("words", None), error.to_string(), error.kind());
            None
        }
    }
}

fn hook_settings(
    errors: &mut Errors<'_>,
    hook: &HookSpec,
    targets: TargetPolicy,
) -> Option<HookSettings> {
    let before = errors.found.len();
    if let Err(message) = targets.check(&hook.url, MAX_HOOK_URL_CHARS) {
        errors.push(&["hook".into(), "url".into()], message, "invalid_url");
    }
    if !HOOK_TIMEOUT_MS.contains(&hook.timeout_ms) {
        errors.push(
            &["hook".into(), "timeoutMs".into()],
            format!(
                "must be between {} and {} milliseconds",
                HOOK_TIMEOUT_MS.start(),
                HOOK_TIMEOUT_MS.end()
            ),
            "range",
        );
    }
    (errors.found.len() == before).then(|| HookSettings {
        url: hook.url.clone(),
        timeout: Duration::from_millis(hook.timeout_ms),
        fail_mode: hook.fail_mode,
        applies_to: hook.applies_to,
    })
}
