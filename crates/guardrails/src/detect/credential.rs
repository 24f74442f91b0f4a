//! Credentials assigned to a name: the value after a name ending in `key`, `token`,
//! `secret`, `password`, `passwd` or `pwd` (the whole name or its last part: `api_key`,
//! `API-KEY`, `apiKey`, `db.password`…), then `=` or `:` with optional quotes and spaces, as
//! configuration files, URLs and JSON write them. Only the value is reported. A password's
//! value needs 6 or more characters of at least two of lower case, upper case, digits and
//! symbols (so `password: required` is prose); a key's, token's or secret's value needs 16 or
//! more characters, letters and digits both, and a Shannon entropy of at least 3 bits per
//! character (so `token=xxxxxxxxxxxxxxxx1` is not one).

use std::ops::Range;

use super::bytes::{is_alnum, run_end};

/// Names whose value is a credential, matched at the end of the name.
const NAMES: [&[u8]; 6] = [b"password", b"passwd", b"secret", b"token", b"pwd", b"key"];

/// Values assigned to credential names (`api_key = "…"`, `"token": "…"`), not already
/// inside a known-format finding.
pub(crate) fn find_assigned(bytes: &[u8], known: &[Range<usize>], out: &mut Vec<Range<usize>>) {
    for (at, &b) in bytes.iter().enumerate() {
        if b != b'=' && b != b':' {
            continue;
        }
        let Some(password) = credential_name_before(bytes, at) else {
            continue;
        };
        let Some(value) = value_after(bytes, at + 1) else {
            continue;
        };
        let inside_known = known
            .iter()
            .any(|range| range.start < value.end && value.start < range.end);
        if !inside_known && strong(&bytes[value.clone()], password) {
            out.push(value);
        }
    }
}

/// Whether a credential name ends right before the `=` or `:` at `at` (quotes and spaces
/// between them allowed); `Some(true)` for a password.
fn credential_name_before(bytes: &[u8], at: usize) -> Option<bool> {
    let mut end = at;
    while end > 0 && bytes[end - 1] == b' ' {
        end -= 1;
    }
    if end > 0 && matches!(bytes[end - 1], b'"' | b'\'') {
        end -= 1;
    }
    let start = (0..end)
        .rev()
        .take_while(|&index| is_alnum(bytes[index]) || matches!(bytes[index], b'_' | b'-' | b'.'))
        .last()?;
    let name = &bytes[start..end];
    NAMES.iter().find_map(|keyword| {
        let offset = name.len().checked_sub(keyword.len())?;
        let tail = &name[offset..];
        if !tail.eq_ignore_ascii_case(keyword) {
            return None;
        }
        // The keyword is the whole name or its last part: after `_`, `-`, `.`, or a camelCase hump.
        let part = offset == 0
            || matches!(name[offset - 1], b'_' | b'-' | b'.')
            || (tail[0].is_ascii_uppercase() && name[offset - 1].is_ascii_lowercase());
        part.then_some(matches!(*keyword, b"password" | b"passwd" | b"pwd"))
    })
}

/// The value after an `=` or `:` at `from`: optional spaces and quote, then the characters
/// a credential is written with.
fn value_after(bytes: &[u8], from: usize) -> Option<Range<usize>> {
    let mut start = from;
    while bytes.get(start) == Some(&b' ') {
        start += 1;
    }
    if matches!(bytes.get(start), Some(b'"' | b'\'')) {
        start += 1;
    }
    let end = run_end(bytes, start, |b| {
        is_alnum(b)
            || matches!(
                b,
                b'+' | b'/'
                    | b'='
                    | b'_'
                    | b'-'
                    | b'.'
                    | b'~'
                    | b'!'
                    | b'@'
                    | b'#'
                    | b'%'
                    | b'^'
                    | b'*'
            )
    });
    // A sentence's final dot is not part of the value.
    let end = if end > start && bytes[end - 1] == b'.' {
        end - 1
    } else {
        end
    };
    (end > start && end - start <= 512).then_some(start..end)
}

fn strong(value: &[u8], password: bool) -> bool {
    let lower = value.iter().any(u8::is_ascii_lowercase);
    let upper = value.iter().any(u8::is_ascii_uppercase);
    let digit = value.iter().any(u8::is_ascii_digit);
    let symbol = value.iter().any(|b| !b.is_ascii_alphanumeric());
    if password {
        value.len() >= 6
            && [lower, upper, digit, symbol]
                .iter()
                .filter(|&&class| class)
                .count()
                >= 2
    } else {
        value.len() >= 16 && (lower || upper) && digit && entropy(value) >= 3.0
    }
}

/// Shannon entropy in bits per byte.
fn entropy(value: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in value {
        counts[usize::from(b)] += 1;
    }
    let length = value.len() as f64;
    counts
        .iter()
        .filter(|&&count| count > 0)
        .map(|&count| {
            let p = f64::from(count) / length;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        let mut ranges = Vec::new();
        find_assigned(text.as_bytes(), &[], &mut ranges);
        ranges.into_iter().map(|range| &text[range]).collect()
    }

    #[test]
    fn finds_values_assigned_to_credential_names() {
        assert_eq!(
            found("api_key=Zx8Qw2Lm9Pk4Rt7Vb3Nc"),
            ["Zx8Qw2Lm9Pk4Rt7Vb3Nc"]
        );
        assert_eq!(
            found(r#"{"apiKey": "Zx8Qw2Lm9Pk4Rt7Vb3Nc"}"#),
            ["Zx8Qw2Lm9Pk4Rt7Vb3Nc"]
        );
        assert_eq!(found("DB_PASSWORD: hunter2!"), ["hunter2!"]);
        assert_eq!(found("password = 'S3cret'"), ["S3cret"]);
        assert_eq!(
            found("?token=a1b2c3d4e5f6g7h8i9j0&x=1"),
            ["a1b2c3d4e5f6g7h8i9j0"]
        );
    }

    #[test]
    fn ignores_prose_placeholders_and_weak_values() {
        for text in [
            "the password: required",
            "token=xxxxxxxxxxxxxxxx1",
            "monkey=Zx8Qw2Lm9Pk4Rt7Vb3Nc",
            "key: value",
            "password: <your password>",
            "url: https://example.org/a1b2c3d4e5f6g7h8",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }

    #[test]
    fn values_inside_a_known_format_are_left_to_it() {
        let text = "api_key=Zx8Qw2Lm9Pk4Rt7Vb3Nc";
        let mut ranges = Vec::new();
        let known = 8..28;
        find_assigned(text.as_bytes(), std::slice::from_ref(&known), &mut ranges);
        assert!(ranges.is_empty());
    }
}
