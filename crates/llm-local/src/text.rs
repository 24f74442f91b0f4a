//! Turning generated tokens into text deltas: whole UTF-8 characters only, and text that
//! could be the start of a stop string held back until it is known not to be one.

/// Accumulates the bytes of generated tokens and releases text that is safe to emit.
#[derive(Debug, Default)]
pub(crate) struct TextOutput {
    /// Bytes of an incomplete UTF-8 character (at most 3).
    partial: Vec<u8>,
    /// Decoded text not emitted yet (a possible prefix of a stop string).
    pending: String,
    stops: Vec<String>,
}

/// What pushing a token's bytes produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Text to emit (possibly empty); generation goes on.
    Continue(String),
    /// A stop string was reached: emit the text before it, then stop.
    Stopped(String),
}

impl TextOutput {
    pub(crate) fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> Step {
        self.partial.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.partial) {
            Ok(text) => text.len(),
            // An invalid sequence (not merely an unfinished one) becomes U+FFFD, as lossy
            // decoding would; an unfinished one waits for the next token's bytes.
            Err(e) if e.error_len().is_some() => self.partial.len(),
            Err(e) => e.valid_up_to(),
        };
        let complete: Vec<u8> = self.partial.drain(..valid).collect();
        self.pending.push_str(&String::from_utf8_lossy(&complete));

        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.pending.find(s.as_str()))
            .min()
        {
            let text = self.pending[..at].to_owned();
            self.pending.clear();
            self.partial.clear();
            return Step::Stopped(text);
        }
        let hold = self
            .stops
            .iter()
            .map(|stop| held_back(&self.pending, stop))
            .max()
            .unwrap_or(0);
        let emit = self.pending.len() - hold;
        Step::Continue(self.pending.drain(..emit).collect())
    }

    /// What is left when generation ends without a stop string: held-back text and any
    /// unfinished character (as U+FFFD).
    pub(crate) fn finish(&mut self) -> String {
        let mut text = std::mem::take(&mut self.pending);
        text.push_str(&String::from_utf8_lossy(&std::mem::take(&mut self.partial)));
        text
    }
}

/// Length in bytes of the longest suffix of `text` that is a proper prefix of `stop`.
fn held_back(text: &str, stop: &str) -> usize {
    (1..stop.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && stop.is_char_boundary(n)
                && text.ends_with(&stop[..n])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_splits_a_character() {
        let mut out = TextOutput::new(&[]);
        let euro = "€".as_bytes();
        assert_eq!(out.push(&euro[..1]), Step::Continue(String::new()));
        assert_eq!(out.push(&euro[1..2]), Step::Continue(String::new()));
        assert_eq!(out.push(&[euro[2], b'!']), Step::Continue("€!".into()));
        assert_eq!(out.push(&[0xF0]), Step::Continue(String::new()));
        assert_eq!(out.finish(), "\u{FFFD}");
    }

    #[test]
    fn holds_back_a_possible_stop_string_and_stops_on_it() {
        let mut out = TextOutput::new(&["END".into()]);
        assert_eq!(out.push(b"abc E"), Step::Continue("abc ".into()));
        assert_eq!(out.push(b"x E"), Step::Continue("Ex ".into()));
        assert_eq!(out.push(b"N"), Step::Continue(String::new()));
        assert_eq!(out.push(b"Dtail"), Step::Stopped(String::new()));
        let mut out = TextOutput::new(&["END".into()]);
        assert_eq!(out.push(b"a EN"), Step::Continue("a ".into()));
        assert_eq!(out.finish(), "EN");
    }
}
