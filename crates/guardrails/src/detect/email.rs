//! Email addresses: a local part of letters and digits (any script), `.`, `_`, `%`, `+` and
//! `-` (1 to 64 bytes, no leading, trailing or doubled dot), and a domain of at least two
//! labels (letters, digits and inner hyphens, 1 to 63 bytes each, 253 at most in all) whose
//! last label is at least two letters or an `xn--` label. Found from each `@`, so the scan
//! costs one pass; a sentence's final dot and quotes around the address are not part of it.

use std::ops::Range;

fn is_local(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-')
}

fn is_domain(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '.' | '-')
}

pub(crate) fn find(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = bytes[from..].iter().position(|&b| b == b'@') {
        let at = from + offset;
        from = at + 1;
        let Some(start) = local_start(text, at) else {
            continue;
        };
        let Some(end) = domain_end(text, at + 1) else {
            continue;
        };
        out.push(start..end);
        from = end;
    }
}

/// Where the local part before the `@` at `at` starts, if it is valid.
fn local_start(text: &str, at: usize) -> Option<usize> {
    let mut start = at;
    for (index, c) in text[..at].char_indices().rev() {
        if !is_local(c) {
            break;
        }
        start = index;
    }
    let bytes = text.as_bytes();
    // A leading dot belongs to the sentence (".john" is never a local part).
    while start < at && bytes[start] == b'.' {
        start += 1;
    }
    let local = &bytes[start..at];
    let valid = !local.is_empty()
        && local.len() <= 64
        && local.last() != Some(&b'.')
        && !local.windows(2).any(|pair| pair == b"..");
    valid.then_some(start)
}

/// Where the domain after the `@` (starting at `from`) ends, if it is valid.
fn domain_end(text: &str, from: usize) -> Option<usize> {
    let mut end = from;
    for (index, c) in text[from..].char_indices() {
        if !is_domain(c) {
            break;
        }
        end = from + index + c.len_utf8();
    }
    let bytes = text.as_bytes();
    // A sentence's final dot or a dash after the address is not part of it.
    while end > from && matches!(bytes[end - 1], b'.' | b'-') {
        end -= 1;
    }
    let domain = &text[from..end];
    if domain.is_empty() || domain.len() > 253 {
        return None;
    }
    let mut labels = domain.split('.').peekable();
    let mut count = 0;
    while let Some(label) = labels.next() {
        count += 1;
        let well_formed = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !well_formed {
            return None;
        }
        if labels.peek().is_none() {
            let top_level = (label.chars().count() >= 2 && label.chars().all(char::is_alphabetic))
                || (label.len() > 4 && label.as_bytes()[..4].eq_ignore_ascii_case(b"xn--"));
            if !top_level {
                return None;
            }
        }
    }
    (count >= 2).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        super::super::found_by(find, text)
    }

    #[test]
    fn finds_addresses_in_prose() {
        assert_eq!(
            found("Write to jane.doe+news@mail.example.co.uk or bob@example.org."),
            ["jane.doe+news@mail.example.co.uk", "bob@example.org"]
        );
        assert_eq!(
            found("<a.b@x-y.io>, (c_d@xn--bcher-kva.de)"),
            ["a.b@x-y.io", "c_d@xn--bcher-kva.de"]
        );
        assert_eq!(
            found("Grüße an jürgen@bücher.de und «anna@example.at»"),
            ["jürgen@bücher.de", "anna@example.at"]
        );
        assert_eq!(found("“max@example.com”"), ["max@example.com"]);
    }

    #[test]
    fn ignores_what_is_not_an_address() {
        for text in [
            "@mention on its own",
            "a handle like @jane or user@localhost",
            "john..doe@example.com",
            "john.@example.com",
            "x@-example.com",
            "x@example.c",
            "x@example.123",
            "version 1.2@3.4",
            "email me at jane@",
            "price: 3 @ 4.50",
            // Not a top-level label, and its byte 4 falls inside a character.
            "x@host.é1é",
        ] {
            assert!(found(text).is_empty(), "{text}");
        }
    }
}
