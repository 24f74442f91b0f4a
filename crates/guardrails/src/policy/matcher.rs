//! Deny and allow lists, compiled: the words of a list as one case-insensitive regular
//! expression of whole words (a word boundary on each side that starts or ends with a letter,
//! digit or `_`; any run of white space inside a phrase matches any other), and each pattern
//! as its own expression, every one built with the size limits of `limits`.

use std::ops::Range;

use regex::{Regex, RegexBuilder};

use super::limits::{
    MAX_PATTERN_CHARS, PATTERN_DFA_SIZE_LIMIT, PATTERN_SIZE_LIMIT, WORDS_SIZE_LIMIT,
};

/// A list's words and patterns, compiled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Matcher {
    words: Option<Regex>,
    patterns: Vec<Regex>,
}

/// Why a pattern is refused; each is one validation error `type`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PatternError {
    #[error("at most {MAX_PATTERN_CHARS} characters")]
    TooLong,
    #[error("not a valid regular expression: {0}")]
    Invalid(String),
    #[error(
        "too complex: it compiles to more than {0} bytes; use fewer or smaller counted repetitions and narrower classes"
    )]
    TooComplex(usize),
    #[error("matches the empty text, so it would match everywhere")]
    MatchesEmpty,
}

impl PatternError {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::TooLong => "pattern_too_long",
            Self::Invalid(_) => "pattern_invalid",
            Self::TooComplex(_) => "pattern_too_complex",
            Self::MatchesEmpty => "pattern_matches_empty",
        }
    }
}

fn regex_error(error: regex::Error) -> PatternError {
    match error {
        regex::Error::CompiledTooBig(limit) => PatternError::TooComplex(limit),
        // The syntax error's last line says what is wrong ("error: unclosed group").
        other => {
            let text = other.to_string();
            let reason = text
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("error: "))
                .unwrap_or(&text);
            PatternError::Invalid(reason.to_owned())
        }
    }
}

/// One pattern, bounded.
pub(crate) fn compile_pattern(pattern: &str) -> Result<Regex, PatternError> {
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(PatternError::TooLong);
    }
    let regex = RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .dfa_size_limit(PATTERN_DFA_SIZE_LIMIT)
        .build()
        .map_err(regex_error)?;
    if regex.is_match("") {
        return Err(PatternError::MatchesEmpty);
    }
    Ok(regex)
}

/// The expression that matches any of `words` as a whole word, case-insensitively.
fn words_expression(words: &[String]) -> String {
    let mut sorted: Vec<&str> = words.iter().map(|word| word.trim()).collect();
    // Longer first, so that of two words starting at the same place the longer is taken.
    sorted.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    sorted.dedup();
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let alternatives: Vec<String> = sorted
        .iter()
        .map(|word| {
            let body: Vec<String> = word.split_whitespace().map(regex::escape).collect();
            format!(
                "{}{}{}",
                if is_word(word.chars().next()) {
                    r"\b"
                } else {
                    ""
                },
                body.join(r"\s+"),
                if is_word(word.chars().next_back()) {
                    r"\b"
                } else {
                    ""
                },
            )
        })
        .collect();
    format!("(?i:{})", alternatives.join("|"))
}

impl Matcher {
    /// `words` are checked one by one by the caller (non-empty, bounded); this fails only
    /// when the list as a whole is past the size limit.
    pub(crate) fn new(words: &[String], patterns: Vec<Regex>) -> Result<Self, PatternError> {
        let words = if words.is_empty() {
            None
        } else {
            Some(
                RegexBuilder::new(&words_expression(words))
                    .size_limit(WORDS_SIZE_LIMIT)
                    .dfa_size_limit(PATTERN_DFA_SIZE_LIMIT)
                    .build()
                    .map_err(regex_error)?,
            )
        };
        Ok(Self { words, patterns })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.words.is_none() && self.patterns.is_empty()
    }

    /// Appends the byte ranges of every non-empty match in `text` to `out`.
    pub(crate) fn find_into(&self, text: &str, out: &mut Vec<Range<usize>>) {
        for regex in self.words.iter().chain(&self.patterns) {
            out.extend(
                regex
                    .find_iter(text)
                    .filter(|found| !found.is_empty())
                    .map(|found| found.range()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Matcher {
        let list: Vec<String> = list.iter().map(|word| (*word).to_owned()).collect();
        Matcher::new(&list, Vec::new()).unwrap()
    }

    fn found<'t>(matcher: &Matcher, text: &'t str) -> Vec<&'t str> {
        let mut ranges = Vec::new();
        matcher.find_into(text, &mut ranges);
        ranges.into_iter().map(|range| &text[range]).collect()
    }

    #[test]
    fn words_match_whole_words_case_insensitively() {
        let matcher = words(&["falcon", "Project Falcon", "C++", "straße"]);
        assert_eq!(
            found(
                &matcher,
                "PROJECT   falcon and falcons, Falcon; c++ and STRASSE or Straße."
            ),
            ["PROJECT   falcon", "Falcon", "c++", "Straße"]
        );
        assert!(found(&matcher, "falconry, refalcon, cc++x").is_empty());
    }

    #[test]
    fn a_shorter_word_still_matches_where_a_longer_one_does_not() {
        let matcher = words(&["foo bar", "foo"]);
        assert_eq!(found(&matcher, "foo barn"), ["foo"]);
    }

    #[test]
    fn patterns_are_bounded() {
        assert!(compile_pattern(r"(?i)falcon-\d+").is_ok());
        assert_eq!(
            compile_pattern(&"a".repeat(MAX_PATTERN_CHARS + 1))
                .unwrap_err()
                .kind(),
            "pattern_too_long"
        );
        assert_eq!(
            compile_pattern(r"\w{1000}").unwrap_err().kind(),
            "pattern_too_complex"
        );
        assert_eq!(
            compile_pattern(r"((a{100}){100}){100}").unwrap_err().kind(),
            "pattern_too_complex"
        );
        assert_eq!(
            compile_pattern("(unclosed").unwrap_err(),
            PatternError::Invalid("unclosed group".into())
        );
        assert_eq!(
            compile_pattern("a*").unwrap_err().kind(),
            "pattern_matches_empty"
        );
    }

    #[test]
    fn the_largest_word_list_compiles() {
        let list: Vec<String> = (0..super::super::limits::MAX_WORDS)
            .map(|index| {
                format!(
                    "{index:04}{}",
                    "ä".repeat(super::super::limits::MAX_WORD_CHARS - 4)
                )
            })
            .collect();
        assert!(Matcher::new(&list, Vec::new()).is_ok());
    }
}
