//! Key-value pairs as OpenAI bounds them (the `metadata` of a vector store or a batch, a
//! file's `attributes` in a store): how many, how long a key, the check every kind shares,
//! and [`Metadata`], the string pairs.

use std::collections::BTreeMap;

use crate::DomainError;

/// How many pairs a client attaches to a dataset or a file at most, as OpenAI bounds
/// `metadata` and `attributes`, and how long a key is.
pub const MAX_PAIRS: usize = 16;
pub const MAX_KEY_CHARS: usize = 64;

/// Checks pairs as OpenAI bounds them: at most [`MAX_PAIRS`], keys of 1 to
/// [`MAX_KEY_CHARS`] characters, and each value by `value`, which says what is wrong with
/// one (a message and a type); `loc` names the field in a refusal.
pub fn check_pairs<V>(
    pairs: &BTreeMap<String, V>,
    loc: &[&str],
    value: impl Fn(&str, &V) -> Option<(String, &'static str)>,
) -> Result<(), DomainError> {
    let invalid = |message: String, kind: &str| {
        DomainError::invalid(loc.iter().map(|part| (*part).into()), message, kind)
    };
    if pairs.len() > MAX_PAIRS {
        return Err(invalid(
            format!("at most {MAX_PAIRS} pairs, got {}", pairs.len()),
            "too_long",
        ));
    }
    for (key, one) in pairs {
        if key.is_empty() || key.chars().count() > MAX_KEY_CHARS {
            return Err(invalid(
                format!("keys must have 1 to {MAX_KEY_CHARS} characters"),
                "string_length",
            ));
        }
        if let Some((message, kind)) = value(key, one) {
            return Err(invalid(message, kind));
        }
    }
    Ok(())
}

/// Key-value pairs a client attaches to a record (a dataset, a batch), as OpenAI's `metadata` defines them: at
/// most [`Metadata::MAX_PAIRS`], keys of at most [`Metadata::MAX_KEY_CHARS`] characters,
/// values of at most [`Metadata::MAX_VALUE_CHARS`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata(BTreeMap<String, String>);

impl Metadata {
    pub const MAX_PAIRS: usize = MAX_PAIRS;
    pub const MAX_KEY_CHARS: usize = MAX_KEY_CHARS;
    pub const MAX_VALUE_CHARS: usize = 512;

    /// The pairs, checked; `loc` names the field in a refusal (`body.metadata`).
    pub fn new(pairs: BTreeMap<String, String>, loc: &[&str]) -> Result<Self, DomainError> {
        check_pairs(&pairs, loc, |key, value| {
            (value.chars().count() > Self::MAX_VALUE_CHARS).then(|| {
                (
                    format!(
                        "the value of `{key}` has more than {} characters",
                        Self::MAX_VALUE_CHARS
                    ),
                    "string_length",
                )
            })
        })?;
        Ok(Self(pairs))
    }

    /// A request body's `metadata`, when it has one, checked (`body.metadata` in refusals).
    pub fn of_body(pairs: Option<BTreeMap<String, String>>) -> Result<Option<Self>, DomainError> {
        pairs
            .map(|pairs| Self::new(pairs, &["body", "metadata"]))
            .transpose()
    }

    /// The pairs as they were checked, for a store reading back what it saved.
    pub fn trusted(pairs: BTreeMap<String, String>) -> Self {
        Self(pairs)
    }

    pub fn pairs(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
