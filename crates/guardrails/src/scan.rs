//! Checking one text against a policy in one direction ([`GuardrailPolicy::scan`]): every
//! applicable rule's matches, minus those an allow list exempts, and then either the
//! refusal of a `block` rule or the matches to mask, overlaps resolved; and applying them
//! ([`GuardrailPolicy::apply`]).
//!
//! Allow lists: a match of a PII or deny rule that lies entirely within a match of an allow
//! word or pattern is exempt (allowing `support@tessera.dev` lets that address through;
//! allowing `jane` does not let `jane@example.org` through). A `block` match refuses the
//! text even where a longer match of another rule overlaps it, so no rule can shadow a
//! refusal; the first refusing match in the text is the one reported. Overlapping masks are
//! resolved deterministically: the longest match wins, then the earliest, then the rule
//! written first.

use std::{borrow::Cow, collections::BTreeMap, ops::Range};

use crate::{
    Action, Blocked, CheckKind, Direction, GuardrailPolicy, GuardrailRecord, PiiKind, Pseudonyms,
    RuleId,
    policy::Target,
    pseudonyms::escape_brackets,
    record::{Effect, RuleOutcome},
};

/// A value a rule matched, to be masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding<'p> {
    pub rule: &'p RuleId,
    pub kind: CheckKind,
    /// What is done to it in this direction (`redact` or `pseudonymise`).
    pub action: Action,
    /// Byte range in the text.
    pub range: Range<usize>,
}

/// The result of checking one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan<'p> {
    /// A `block` rule matched.
    Blocked(Blocked),
    /// What to mask, in text order, not overlapping (empty when nothing matched).
    Findings(Vec<Finding<'p>>),
}

/// A match of the rule at index `rule`.
#[derive(Debug, Clone)]
struct Hit {
    range: Range<usize>,
    rule: usize,
}

impl GuardrailPolicy {
    /// Checks `text` as a `direction` text.
    pub fn scan(&self, text: &str, direction: Direction) -> Scan<'_> {
        let rules = self.rules();
        let mut hits: Vec<Hit> = Vec::new();
        let mut detected: Vec<(PiiKind, Vec<Range<usize>>)> = Vec::new();
        let mut ranges = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if !rule.applies_to.includes(direction) {
                continue;
            }
            match &rule.target {
                Target::Pii(kind) => {
                    // Two rules of one kind (one per direction, say) share one detection.
                    let found = match detected.iter().position(|(known, _)| known == kind) {
                        Some(position) => &detected[position].1,
                        None => {
                            let mut found = Vec::new();
                            crate::detect::find_into(*kind, text, &mut found);
                            detected.push((*kind, found));
                            &detected[detected.len() - 1].1
                        }
                    };
                    hits.extend(found.iter().map(|range| Hit {
                        range: range.clone(),
                        rule: index,
                    }));
                }
                Target::Deny(matcher) => {
                    ranges.clear();
                    matcher.find_into(text, &mut ranges);
                    hits.extend(ranges.drain(..).map(|range| Hit { range, rule: index }));
                }
            }
        }
        if hits.is_empty() {
            return Scan::Findings(Vec::new());
        }
        if !self.allow().is_empty() {
            let mut allowed = Vec::new();
            for matcher in self.allow() {
                matcher.find_into(text, &mut allowed);
            }
            hits.retain(|hit| {
                !allowed
                    .iter()
                    .any(|allow| allow.start <= hit.range.start && hit.range.end <= allow.end)
            });
        }
        let refusal = hits
            .iter()
            .filter(|hit| rules[hit.rule].action_in(direction) == Action::Block)
            .min_by_key(|hit| (hit.range.start, hit.rule));
        if let Some(hit) = refusal {
            let rule = &rules[hit.rule];
            return Scan::Blocked(Blocked {
                rule: rule.id.clone(),
                kind: rule.kind(),
                direction,
                reason: None,
                hook_failure: None,
            });
        }
        hits.sort_by(|a, b| {
            b.range
                .len()
                .cmp(&a.range.len())
                .then(a.range.start.cmp(&b.range.start))
                .then(a.rule.cmp(&b.rule))
        });
        let mut kept: BTreeMap<usize, Hit> = BTreeMap::new();
        for hit in hits {
            let overlaps = kept
                .range(..hit.range.end)
                .next_back()
                .is_some_and(|(_, before)| before.range.end > hit.range.start);
            if !overlaps {
                kept.insert(hit.range.start, hit);
            }
        }
        Scan::Findings(
            kept.into_values()
                .map(|hit| {
                    let rule = &rules[hit.rule];
                    Finding {
                        rule: &rule.id,
                        kind: rule.kind(),
                        action: rule.action_in(direction),
                        range: hit.range,
                    }
                })
                .collect(),
        )
    }

    /// Checks `text` as a `direction` text and applies what the rules say: refuses it,
    /// or masks its findings (`[REDACTED:EMAIL]`) and replaces them with placeholders from
    /// `vault` (`⟦EMAIL_1⟧`). Input texts of a policy that pseudonymises have their own
    /// placeholder brackets escaped first. What happened is added to `record`.
    pub fn apply<'t>(
        &self,
        text: &'t str,
        direction: Direction,
        vault: &mut Pseudonyms,
        record: &mut GuardrailRecord,
    ) -> Result<Cow<'t, str>, Blocked> {
        let text = if direction == Direction::Input && self.pseudonymises_input() {
            escape_brackets(text)
        } else {
            Cow::Borrowed(text)
        };
        let findings = match self.scan(&text, direction) {
            Scan::Blocked(blocked) => {
                record.add(RuleOutcome {
                    rule: blocked.rule.clone(),
                    kind: blocked.kind,
                    direction,
                    effect: Effect::Blocked,
                    count: 1,
                    hook_failure: None,
                });
                return Err(blocked);
            }
            Scan::Findings(findings) if findings.is_empty() => return Ok(text),
            Scan::Findings(findings) => findings,
        };
        let mut masked = String::with_capacity(text.len() + findings.len() * 8);
        let mut copied = 0;
        for finding in &findings {
            masked.push_str(&text[copied..finding.range.start]);
            let value = &text[finding.range.clone()];
            let label = finding.kind.label();
            let effect = match finding.action {
                Action::Pseudonymise => {
                    masked.push_str(vault.placeholder_for(label, value));
                    Effect::Pseudonymised
                }
                Action::Redact | Action::Block => {
                    masked.push_str("[REDACTED:");
                    masked.push_str(label);
                    masked.push(']');
                    Effect::Redacted
                }
            };
            copied = finding.range.end;
            record.add(RuleOutcome {
                rule: finding.rule.clone(),
                kind: finding.kind,
                direction,
                effect,
                count: 1,
                hook_failure: None,
            });
        }
        masked.push_str(&text[copied..]);
        Ok(Cow::Owned(masked))
    }
}

#[cfg(test)]
mod tests;
