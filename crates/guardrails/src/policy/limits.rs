//! The bounds a policy must keep, so that no tenant's policy can make checking a request
//! slow or large: how many rules, words and patterns, how long each, how large a compiled
//! regular expression may grow, and the ranges of the size limit and the hook's settings.

/// PII and deny rules together.
pub const MAX_RULES: usize = 64;
/// Words in one deny or allow list.
pub const MAX_WORDS: usize = 1_000;
/// Characters in one word or phrase.
pub const MAX_WORD_CHARS: usize = 100;
/// Patterns in one deny or allow list.
pub const MAX_PATTERNS: usize = 20;
/// Characters in one pattern.
pub const MAX_PATTERN_CHARS: usize = 500;
/// Bytes a pattern's compiled program may take (`RegexBuilder::size_limit`): what refuses
/// `\w{1000}` or nested counted repetitions.
pub const PATTERN_SIZE_LIMIT: usize = 256 * 1024;
/// Bytes of a pattern's lazy DFA cache (`RegexBuilder::dfa_size_limit`); past it a search
/// falls back to a slower engine that is still linear in the text.
pub const PATTERN_DFA_SIZE_LIMIT: usize = 1024 * 1024;
/// Bytes a word list's compiled program may take: a full list of the longest words fits.
pub const WORDS_SIZE_LIMIT: usize = 32 * 1024 * 1024;
/// The largest `maxInputChars`.
pub const MAX_INPUT_CHARS: u64 = 10_000_000;
/// The hook's timeout, in milliseconds.
pub const HOOK_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 1..=30_000;
/// Characters in the hook's URL.
pub const MAX_HOOK_URL_CHARS: usize = 2_048;
