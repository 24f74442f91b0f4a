//! [`Pseudonyms`]: one request's vault of pseudonymised values. A value gets a placeholder
//! `⟦LABEL_n⟧` (mathematical white square brackets U+27E6 and U+27E7, the kind's label,
//! and a number counted per label from 1 within the request); the same value gets the
//! same placeholder again. Models copy such a token faithfully: it is short, has no spaces,
//! and looks like nothing they would rephrase. User text cannot forge one: when a policy
//! pseudonymises, the brackets in input texts are replaced by their CJK look-alikes
//! `〚` and `〛` first ([`escape_brackets`]), so in what the provider sees, only the vault
//! writes `⟦`.
//!
//! A vault is a request's own value: there is no way to share one or to serialize it, its
//! `Debug` shows only how many entries it holds, and it restores only the placeholders it
//! made, so a placeholder from another request (or tenant) stays as it is.

use std::{borrow::Cow, collections::HashMap, fmt};

/// Opens a placeholder.
pub const OPEN: char = '⟦';
/// Closes a placeholder.
pub const CLOSE: char = '⟧';
/// What an input's own `⟦` becomes, so it cannot open a placeholder.
pub const OPEN_ESCAPED: char = '〚';
/// What an input's own `⟧` becomes.
pub const CLOSE_ESCAPED: char = '〛';

/// The longest placeholder in bytes: both brackets (3 bytes each), a label of up to 16
/// bytes, `_` and up to 10 digits.
pub(crate) const MAX_PLACEHOLDER_BYTES: usize = 3 + 16 + 1 + 10 + 3;

/// `text` with its own placeholder brackets replaced by their look-alikes (same length in
/// bytes, so ranges found before escaping stay valid after it).
pub fn escape_brackets(text: &str) -> Cow<'_, str> {
    if text.contains([OPEN, CLOSE]) {
        Cow::Owned(
            text.chars()
                .map(|c| match c {
                    OPEN => OPEN_ESCAPED,
                    CLOSE => CLOSE_ESCAPED,
                    other => other,
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// What starts at a `⟦` in a text, for the vault.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AtOpen<'v> {
    /// A placeholder of this vault, `length` bytes long, standing for `value`.
    Placeholder { length: usize, value: &'v str },
    /// The text ends within what could still be one of this vault's placeholders.
    Partial,
    /// Nothing of this vault.
    Nothing,
}

/// One request's pseudonymised values and their placeholders.
#[derive(Clone, Default)]
pub struct Pseudonyms {
    placeholders: Vec<String>,
    values: Vec<String>,
    by_value: HashMap<String, usize>,
    by_placeholder: HashMap<String, usize>,
    counters: HashMap<&'static str, u32>,
}

impl Pseudonyms {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The placeholder of `value`: the one it already has, or a new one with `label`
    /// (upper-case ASCII letters and `_`, at most 16 bytes: a kind's label).
    pub fn placeholder_for(&mut self, label: &'static str, value: &str) -> &str {
        let index = match self.by_value.get(value) {
            Some(&index) => index,
            None => {
                let counter = self.counters.entry(label).or_insert(0);
                *counter += 1;
                let placeholder = format!("{OPEN}{label}_{counter}{CLOSE}");
                let index = self.values.len();
                self.by_value.insert(value.to_owned(), index);
                self.by_placeholder.insert(placeholder.clone(), index);
                self.placeholders.push(placeholder);
                self.values.push(value.to_owned());
                index
            }
        };
        &self.placeholders[index]
    }

    /// The value a placeholder of this vault stands for.
    pub fn value_of(&self, placeholder: &str) -> Option<&str> {
        self.by_placeholder
            .get(placeholder)
            .map(|&index| self.values[index].as_str())
    }

    /// What starts at `text`, which starts with [`OPEN`].
    pub(crate) fn at_open<'v>(&'v self, text: &str) -> AtOpen<'v> {
        let window = &text[..floor_char_boundary(text, MAX_PLACEHOLDER_BYTES)];
        if let Some(close) = window.find(CLOSE) {
            let length = close + CLOSE.len_utf8();
            return match self.value_of(&text[..length]) {
                Some(value) => AtOpen::Placeholder { length, value },
                None => AtOpen::Nothing,
            };
        }
        let partial = text.len() < MAX_PLACEHOLDER_BYTES
            && self
                .placeholders
                .iter()
                .any(|placeholder| placeholder.len() > text.len() && placeholder.starts_with(text));
        if partial {
            AtOpen::Partial
        } else {
            AtOpen::Nothing
        }
    }

    /// `text` with every placeholder of this vault replaced by its value; anything else,
    /// other placeholders included, unchanged.
    pub fn restore<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.is_empty() || !text.contains(OPEN) {
            return Cow::Borrowed(text);
        }
        let mut restored = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find(OPEN) {
            restored.push_str(&rest[..open]);
            rest = &rest[open..];
            match self.at_open(rest) {
                AtOpen::Placeholder { length, value } => {
                    restored.push_str(value);
                    rest = &rest[length..];
                }
                AtOpen::Partial | AtOpen::Nothing => {
                    restored.push(OPEN);
                    rest = &rest[OPEN.len_utf8()..];
                }
            }
        }
        restored.push_str(rest);
        Cow::Owned(restored)
    }
}

/// The largest char boundary of `text` at or before `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&index| text.is_char_boundary(index))
        .unwrap_or(0)
}

impl fmt::Debug for Pseudonyms {
    /// The number of entries only: the values are what the vault hides.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pseudonyms")
            .field("entries", &self.values.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_value_gets_the_same_placeholder() {
        let mut vault = Pseudonyms::new();
        assert_eq!(vault.placeholder_for("EMAIL", "a@example.org"), "⟦EMAIL_1⟧");
        assert_eq!(
            vault.placeholder_for("PHONE", "+1 415 555 2671"),
            "⟦PHONE_1⟧"
        );
        assert_eq!(vault.placeholder_for("EMAIL", "b@example.org"), "⟦EMAIL_2⟧");
        assert_eq!(vault.placeholder_for("EMAIL", "a@example.org"), "⟦EMAIL_1⟧");
        assert_eq!(vault.len(), 3);
        assert_eq!(vault.value_of("⟦EMAIL_2⟧"), Some("b@example.org"));
        assert_eq!(vault.value_of("⟦EMAIL_3⟧"), None);
    }

    #[test]
    fn restores_its_own_placeholders_only() {
        let mut vault = Pseudonyms::new();
        vault.placeholder_for("EMAIL", "a@example.org");
        assert_eq!(
            vault.restore("Mail ⟦EMAIL_1⟧, not ⟦EMAIL_2⟧ nor ⟦EMAIL_1 or ⟦⟧."),
            "Mail a@example.org, not ⟦EMAIL_2⟧ nor ⟦EMAIL_1 or ⟦⟧."
        );
        let other = Pseudonyms::new();
        assert_eq!(other.restore("⟦EMAIL_1⟧"), "⟦EMAIL_1⟧");
    }

    #[test]
    fn debug_never_shows_values() {
        let mut vault = Pseudonyms::new();
        vault.placeholder_for("EMAIL", "secret@example.org");
        let shown = format!("{vault:?}");
        assert_eq!(shown, "Pseudonyms { entries: 1 }");
    }

    #[test]
    fn escaping_keeps_byte_offsets() {
        let text = "a ⟦EMAIL_1⟧ b";
        let escaped = escape_brackets(text);
        assert_eq!(escaped, "a 〚EMAIL_1〛 b");
        assert_eq!(escaped.len(), text.len());
        assert!(matches!(escape_brackets("plain"), Cow::Borrowed(_)));
    }
}
