//! Telephone numbers, in three written forms:
//!
//! - **international**: `+` or `00`, a country code (first digit 1–9), then digit groups
//!   separated by one space, `.` or `-`, with at most parenthesised groups such as `(0)` or
//!   `(20)`; 8 to 15 digits in all (E.164's maximum), the `(0)` trunk digit not counted:
//!   `+1 415 555 2671`, `+44 (0)20 7946 0958`, `+4915112345678`, `0033 1 23 45 67 89`;
//! - **North American** (NANP): `(NXX) NXX-XXXX`, `NXX-NXX-XXXX`, `NXX.NXX.XXXX` or
//!   `NXX NXX XXXX` (the same separator twice), optionally after `1` and a separator, where
//!   area code and exchange start with 2–9;
//! - **national with a trunk `0`** (most of Europe, the UK, Australia, …): `0` and a digit
//!   1–9 starting a 2–5 digit area group, written `(0…)` or followed by a space, `-`, `.` or
//!   `/`, then groups of 2 or more digits with one separator repeated; 9 to 12 digits in all:
//!   `020 7946 0958`, `030/1234567`, `01 23 45 67 89`, `(030) 123 4567`, `06-12345678`.
//!
//! Not matched, on purpose: digits without any separator or `+` (order numbers, ids), dates
//! (`2024-01-15`, `15.01.2024`: no trunk `0` with 9 or more digits, or no NANP shape),
//! versions and IP addresses (`1.2.3`, `10.0.0.1`), and numbers glued to other digits by
//! `.`, `,`, `-` or `/`. National forms of countries without a trunk prefix (Italian or
//! Spanish mobiles, for instance) are found only in their international form. A group of
//! digits after a number, separated by a space, is taken as part of it while the total stays
//! within the form's bounds.

use std::ops::Range;

use super::bytes::{number_ends, number_starts, word_starts};

pub(crate) fn find(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let end = match bytes[at] {
            b'+' if word_starts(bytes, at) => international(bytes, at + 1),
            b'0' if number_starts(bytes, at) && bytes.get(at + 1) == Some(&b'0') => {
                international(bytes, at + 2)
            }
            b'0'..=b'9' | b'(' if number_starts(bytes, at) => {
                north_american(bytes, at).or_else(|| trunk(bytes, at))
            }
            _ => None,
        };
        match end {
            Some(end) => {
                out.push(at..end);
                at = end;
            }
            None => at += 1,
        }
    }
}

/// A group boundary: where the number could end and how many digits it would have.
#[derive(Clone, Copy)]
struct Cut {
    end: usize,
    digits: usize,
}

/// The longest cut with `min..=max` digits that ends the number: its last group, or one
/// followed by a space (a glued `-` or `.` would leave a number half masked).
fn longest(bytes: &[u8], cuts: &[Cut], min: usize, max: usize) -> Option<usize> {
    let last = cuts.last()?.end;
    cuts.iter()
        .rev()
        .find(|cut| {
            (min..=max).contains(&cut.digits)
                && (cut.end == last || bytes.get(cut.end) == Some(&b' '))
                && number_ends(bytes, cut.end)
        })
        .map(|cut| cut.end)
}

fn digits_end(bytes: &[u8], at: usize) -> usize {
    super::bytes::run_end(bytes, at, |b| b.is_ascii_digit())
}

/// After `+` or `00` (at `at`): a country code and groups.
fn international(bytes: &[u8], at: usize) -> Option<usize> {
    if !matches!(bytes.get(at), Some(b'1'..=b'9')) {
        return None;
    }
    let mut cuts: Vec<Cut> = Vec::with_capacity(8);
    let mut digits = 0;
    let mut position = at;
    let mut parenthesised = 0;
    loop {
        if bytes.get(position) == Some(&b'(') {
            parenthesised += 1;
            let inner = digits_end(bytes, position + 1);
            let count = inner - (position + 1);
            if parenthesised > 1 || !(1..=4).contains(&count) || bytes.get(inner) != Some(&b')') {
                break;
            }
            // "(0)" is the trunk digit dialled only at home: not part of the E.164 number.
            if &bytes[position + 1..inner] != b"0" {
                digits += count;
            }
            position = inner + 1;
            // Digits follow at once, or after one separator.
            match (bytes.get(position), bytes.get(position + 1)) {
                (Some(b'0'..=b'9'), _) => continue,
                (Some(b' ' | b'.' | b'-'), Some(b'0'..=b'9')) => {
                    position += 1;
                    continue;
                }
                _ => break,
            }
        } else {
            let end = digits_end(bytes, position);
            if end == position {
                break;
            }
            digits += end - position;
            position = end;
            cuts.push(Cut {
                end: position,
                digits,
            });
        }
        match (bytes.get(position), bytes.get(position + 1)) {
            (Some(b' ' | b'.' | b'-'), Some(b'0'..=b'9' | b'(')) => position += 1,
            (Some(b'('), _) => {}
            _ => break,
        }
    }
    longest(bytes, &cuts, 8, 15)
}

/// `(NXX) NXX-XXXX`, `NXX-NXX-XXXX`, `NXX.NXX.XXXX`, `NXX NXX XXXX`, optionally after `1`
/// and a separator.
fn north_american(bytes: &[u8], at: usize) -> Option<usize> {
    let digits = |from: usize, count: usize| {
        bytes
            .get(from..from + count)
            .filter(|group| group.iter().all(u8::is_ascii_digit))
            .map(|group| group[0])
    };
    let is_separator = |b: u8| matches!(b, b' ' | b'-' | b'.');
    let mut position = at;
    if bytes.get(at) == Some(&b'1') && bytes.get(at + 1).copied().is_some_and(is_separator) {
        position += 2;
    }
    let (area, separator) = if bytes.get(position) == Some(&b'(') {
        let area = digits(position + 1, 3)?;
        if bytes.get(position + 4) != Some(&b')') {
            return None;
        }
        position += 5;
        if bytes.get(position) == Some(&b' ') {
            position += 1;
        }
        (area, None)
    } else {
        let area = digits(position, 3)?;
        let separator = *bytes.get(position + 3).filter(|&&b| is_separator(b))?;
        position += 4;
        (area, Some(separator))
    };
    let exchange = digits(position, 3)?;
    let second = *bytes.get(position + 3).filter(|&&b| is_separator(b))?;
    if separator.is_some_and(|first| first != second) {
        return None;
    }
    digits(position + 4, 4)?;
    let end = position + 8;
    let valid = (b'2'..=b'9').contains(&area)
        && (b'2'..=b'9').contains(&exchange)
        && number_ends(bytes, end);
    valid.then_some(end)
}

/// A national number with a trunk `0`: `(0AA) …`, `0AA …`, `0AA/…`, `0AA-…`, `0AA.…`.
fn trunk(bytes: &[u8], at: usize) -> Option<usize> {
    let parenthesised = bytes[at] == b'(';
    let first = if parenthesised { at + 1 } else { at };
    if bytes.get(first) != Some(&b'0') || !matches!(bytes.get(first + 1), Some(b'1'..=b'9')) {
        return None;
    }
    let area_end = digits_end(bytes, first);
    if !(2..=5).contains(&(area_end - first)) {
        return None;
    }
    let mut digits = area_end - first;
    let mut position = area_end;
    if parenthesised {
        if bytes.get(position) != Some(&b')') {
            return None;
        }
        position += 1;
        if bytes.get(position) == Some(&b' ') {
            position += 1;
        }
    } else if matches!(bytes.get(position), Some(b' ' | b'-' | b'.' | b'/')) {
        position += 1;
    } else {
        return None;
    }
    let mut cuts: Vec<Cut> = Vec::with_capacity(6);
    let mut separator = None;
    loop {
        let end = digits_end(bytes, position);
        if end - position < 2 {
            break;
        }
        digits += end - position;
        position = end;
        cuts.push(Cut {
            end: position,
            digits,
        });
        let Some(&next) = bytes.get(position) else {
            break;
        };
        let continues = matches!(next, b' ' | b'-' | b'.')
            && separator.is_none_or(|sep| sep == next)
            && bytes.get(position + 1).is_some_and(u8::is_ascii_digit);
        if !continues {
            break;
        }
        separator = Some(next);
        position += 1;
    }
    longest(bytes, &cuts, 9, 12)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        super::super::found_by(find, text)
    }

    #[test]
    fn finds_international_numbers() {
        assert_eq!(found("Call +1 415 555 2671 now"), ["+1 415 555 2671"]);
        assert_eq!(found("tel:+4915112345678."), ["+4915112345678"]);
        assert_eq!(found("+44 (0)20 7946 0958"), ["+44 (0)20 7946 0958"]);
        assert_eq!(found("(+33 1.23.45.67.89)"), ["+33 1.23.45.67.89"]);
        assert_eq!(found("0033 1 23 45 67 89"), ["0033 1 23 45 67 89"]);
    }

    #[test]
    fn finds_north_american_numbers() {
        assert_eq!(found("(415) 555-2671"), ["(415) 555-2671"]);
        assert_eq!(found("call 415-555-2671."), ["415-555-2671"]);
        assert_eq!(found("415.555.2671"), ["415.555.2671"]);
        assert_eq!(found("1-800-555-0199"), ["1-800-555-0199"]);
    }

    #[test]
    fn finds_national_numbers_with_a_trunk_zero() {
        assert_eq!(found("020 7946 0958"), ["020 7946 0958"]);
        assert_eq!(found("Büro: 030/1234567"), ["030/1234567"]);
        assert_eq!(found("01 23 45 67 89"), ["01 23 45 67 89"]);
        assert_eq!(found("(030) 123 4567"), ["(030) 123 4567"]);
        assert_eq!(found("06-12345678"), ["06-12345678"]);
        assert_eq!(found("0171 1234567, 2 rooms"), ["0171 1234567"]);
    }

    #[test]
    fn ignores_dates_versions_addresses_and_plain_numbers() {
        for text in [
            "2024-01-15",
            "15.01.2024",
            "01/15/2024",
            "15.01.2024 10:30",
            "version 1.2.3 or 10.0.19041.1",
            "192.168.1.1",
            "order 4155552671",
            "1234567890123",
            "123-456-7890",
            "415-555.2671",
            "0.5 and 0.25",
            "+1 2",
            "ISBN 978-3-16-148410-0",
            "a1-415-555-2671",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }
}
