//! [`StreamRestorer`]: puts pseudonymised values back into an answer as it streams. Each
//! delta is released at once, restored, except a trailing piece that could still become
//! one of the vault's placeholders (at most one placeholder's length), which waits for the
//! next delta; [`StreamRestorer::finish`] releases what is left as it is. So a placeholder
//! split across deltas is restored, and text that merely looks like the start of one is
//! delayed by a delta at most.

use std::borrow::Cow;

use crate::pseudonyms::{AtOpen, OPEN, Pseudonyms};

/// Restores one streamed answer with its request's vault.
#[derive(Debug, Clone)]
pub struct StreamRestorer {
    vault: Pseudonyms,
    held: String,
}

impl StreamRestorer {
    pub fn new(vault: Pseudonyms) -> Self {
        Self {
            vault,
            held: String::new(),
        }
    }

    /// The restored text to send for `delta`: possibly less (a possible placeholder's start
    /// is held back) or more (what was held back before) than it.
    pub fn push<'d>(&mut self, delta: &'d str) -> Cow<'d, str> {
        if self.held.is_empty() && (self.vault.is_empty() || !delta.contains(OPEN)) {
            return Cow::Borrowed(delta);
        }
        let mut text = std::mem::take(&mut self.held);
        text.push_str(delta);
        let mut restored = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(open) = rest.find(OPEN) {
            restored.push_str(&rest[..open]);
            rest = &rest[open..];
            match self.vault.at_open(rest) {
                AtOpen::Placeholder { length, value } => {
                    restored.push_str(value);
                    rest = &rest[length..];
                }
                AtOpen::Partial => {
                    self.held = rest.to_owned();
                    return Cow::Owned(restored);
                }
                AtOpen::Nothing => {
                    restored.push(OPEN);
                    rest = &rest[OPEN.len_utf8()..];
                }
            }
        }
        restored.push_str(rest);
        Cow::Owned(restored)
    }

    /// What is still held back, released as it is: the answer ended within something that
    /// only looked like a placeholder.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn vault() -> Pseudonyms {
        let mut vault = Pseudonyms::new();
        vault.placeholder_for("EMAIL", "jane@example.org");
        vault.placeholder_for("PHONE", "+1 415 555 2671");
        vault.placeholder_for("CARD", "4111 1111 1111 1111");
        vault
    }

    /// What the restorer sends for each delta and at the end, and all of it together.
    fn streamed(vault: Pseudonyms, deltas: &[&str]) -> (Vec<String>, String) {
        let mut restorer = StreamRestorer::new(vault);
        let mut sent: Vec<String> = deltas
            .iter()
            .map(|delta| restorer.push(delta).into_owned())
            .collect();
        sent.push(restorer.finish());
        let text = sent.concat();
        (sent, text)
    }

    #[test]
    fn a_placeholder_split_across_deltas_is_restored() {
        let (sent, text) = streamed(
            vault(),
            &["Write to ⟦EM", "AIL_", "1⟧ or call ⟦", "PHONE_1⟧."],
        );
        assert_eq!(text, "Write to jane@example.org or call +1 415 555 2671.");
        assert_eq!(sent[0], "Write to ");
        assert_eq!(sent[2], "jane@example.org or call ");
    }

    #[test]
    fn look_alikes_are_released() {
        let (sent, text) = streamed(vault(), &["a ⟦EMAIL_9⟧ b ⟦X", "Y⟧ c ⟦EMA"]);
        assert_eq!(text, "a ⟦EMAIL_9⟧ b ⟦XY⟧ c ⟦EMA");
        assert_eq!(sent[0], "a ⟦EMAIL_9⟧ b ⟦X");
        assert_eq!(sent.last().unwrap(), "⟦EMA");
    }

    #[test]
    fn without_pseudonyms_deltas_pass_as_they_are() {
        let mut restorer = StreamRestorer::new(Pseudonyms::new());
        assert!(matches!(restorer.push("⟦EMAIL_1⟧"), Cow::Borrowed(_)));
        assert_eq!(restorer.finish(), "");
    }

    /// Pieces an answer is made of: placeholders of the vault, look-alikes, and prose.
    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "⟦EMAIL_1⟧",
            "⟦PHONE_1⟧",
            "⟦CARD_1⟧",
            "⟦EMAIL_2⟧",
            "⟦EMAIL_",
            "⟦",
            "⟧",
            "⟦PHONE_1",
            "⟦⟦CARD_1⟧",
            "Dear ",
            "customer",
            ", ",
            "ü",
            "\n",
            "⟦x⟧",
            "EMAIL_1",
            " ",
        ])
    }

    proptest! {
        /// However an answer is split into deltas, the streamed restoration equals restoring
        /// the whole answer at once.
        #[test]
        fn any_split_restores_like_the_whole(
            pieces in prop::collection::vec(piece(), 0..40),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let answer: String = pieces.concat();
            let boundaries: Vec<usize> = answer.char_indices().map(|(index, _)| index).collect();
            let mut points: Vec<usize> = cuts
                .iter()
                .filter(|_| !boundaries.is_empty())
                .map(|cut| boundaries[cut.index(boundaries.len())])
                .collect();
            points.push(0);
            points.push(answer.len());
            points.sort_unstable();
            points.dedup();
            let deltas: Vec<&str> = points.windows(2).map(|pair| &answer[pair[0]..pair[1]]).collect();
            let vault = vault();
            let whole = vault.restore(&answer).into_owned();
            let (_, streamed_text) = streamed(vault, &deltas);
            prop_assert_eq!(streamed_text, whole);
        }
    }
}
