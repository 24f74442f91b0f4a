//! Key-value pairs as OpenAI bounds them (a dataset's `metadata`, a file's `attributes` in a
//! dataset): how many, how long a key, and the check both kinds share.

use std::collections::BTreeMap;

use tessera_kernel::DomainError;

/// How many pairs a client attaches to a dataset or a file at most, as OpenAI bounds
/// `metadata` and `attributes`, and how long a key is.
pub(crate) const MAX_PAIRS: usize = 16;
pub(crate) const MAX_KEY_CHARS: usize = 64;

/// Checks pairs as OpenAI bounds them: at most [`MAX_PAIRS`], keys of 1 to
/// [`MAX_KEY_CHARS`] characters, and each value by `value`, which says what is wrong with
/// one (a message and a type); `loc` names the field in a refusal.
pub(crate) fn check_pairs<V>(
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
