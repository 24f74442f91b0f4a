//! National identification numbers, one detector per country, each validated as far as the
//! number allows (letters and digits are ASCII; "word" boundaries as in `bytes`):
//!
//! - **US SSN** (`us_ssn`): `AAA-GG-SSSS` or `AAA GG SSSS` (separators required: nine bare
//!   digits are too often something else); no check digit, but area 000, 666 and 900–999,
//!   group 00 and serial 0000 are never issued, and the publicised 078-05-1120,
//!   219-09-9999 and 457-55-5462 are refused.
//! - **UK National Insurance number** (`uk_nino`): two prefix letters, six digits (bare or
//!   in pairs), a suffix A–D, spaces optional (`AB 12 34 56 C`, `AB123456C`); no check
//!   digit, but HMRC's prefix rules: neither letter D, F, I, Q, U or V, the second not O,
//!   and not BG, GB, KN, NK, NT, TN or ZZ.
//! - **French NIR** (`fr_nir`): 15 characters, bare or spaced `1 85 05 78 006 084 36`
//!   (spaces or dots), Corsica's `2A`/`2B` departments included; the two-digit key must be
//!   97 − (the first 13 digits mod 97), `2A` and `2B` read as 19 and 18.
//! - **Spanish DNI and NIE** (`es_dni`): 8 digits or `X`/`Y`/`Z` and 7 digits, then the
//!   control letter (optionally after `-` or a space), which must be
//!   `TRWAGMYFPDXBNJZSQVHLCKE` at the number mod 23 (X, Y, Z read as 0, 1, 2).
//! - **Italian codice fiscale** (`it_codice_fiscale`) of a person: 16 upper-case
//!   characters, letters and digits in their places (digits possibly replaced by
//!   `LMNPQRSTUV`), a month letter among `ABCDEHLMPRST`, a day 1–31 (41–71 for women), and
//!   the check letter computed from the odd/even tables.
//! - **Dutch BSN** (`nl_bsn`): 9 digits, bare or `1234.56.782`, not all zero, passing the
//!   11-test. Any 9-digit number passes it with a chance of 1 in 11: enable this kind
//!   where such numbers are expected to be BSNs.
//! - **Indian Aadhaar** (`in_aadhaar`): 12 digits, bare or in fours separated by a space or
//!   `-`, the first 2–9, not a palindrome, passing the Verhoeff check.
//! - **German tax id** (`de_tax_id`, Steuerliche Identifikationsnummer): 11 digits, bare or
//!   `12 345 678 901`, not starting with 0; in the first ten digits exactly one digit occurs
//!   two or three times and no other more than once; the ISO 7064 MOD 11,10 check digit
//!   must hold.

use std::ops::Range;

use super::{
    bytes::{Compact, grouped, number_ends, number_starts, scan_words, word_ends},
    checksum::{codice_fiscale_check, dni_letter, eleven_test, mod_11_10, nir_key, verhoeff},
};

/// Runs `detect` where a number starts.
fn scan_numbers(
    bytes: &[u8],
    detect: impl Fn(usize) -> Option<usize>,
    out: &mut Vec<Range<usize>>,
) {
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii_digit()
            && number_starts(bytes, at)
            && let Some(end) = detect(at)
        {
            out.push(at..end);
            at = end;
        } else {
            at += 1;
        }
    }
}

/// Digits read in `layout` at `at`, ending a number.
fn digits_in(
    bytes: &[u8],
    at: usize,
    layout: &[usize],
    separators: &[u8],
) -> Option<(usize, Compact)> {
    let (end, compact) = grouped(bytes, at, layout, separators)?;
    (compact.as_bytes().iter().all(u8::is_ascii_digit) && number_ends(bytes, end))
        .then_some((end, compact))
}

/// SSNs printed on sample cards and in advertising, used by many people: never a person's.
const PUBLICISED_SSNS: [&[u8]; 3] = [b"078051120", b"219099999", b"457555462"];

pub(crate) fn us_ssn(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_numbers(
        bytes,
        |at| {
            let (end, compact) = digits_in(bytes, at, &[3, 2, 4], b"- ")?;
            let digits = compact.as_bytes();
            let issued = end - at == 11
                && &digits[..3] != b"000"
                && &digits[..3] != b"666"
                && digits[0] != b'9'
                && &digits[3..5] != b"00"
                && &digits[5..] != b"0000"
                && !PUBLICISED_SSNS.contains(&digits);
            issued.then_some(end)
        },
        out,
    );
}

pub(crate) fn uk_nino(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_words(
        bytes,
        |b| b.is_ascii_uppercase(),
        |at| nino_at(bytes, at),
        out,
    );
}

fn nino_at(bytes: &[u8], at: usize) -> Option<usize> {
    let (first, second) = (*bytes.get(at)?, *bytes.get(at + 1)?);
    let prefix_valid = second.is_ascii_uppercase()
        && !b"DFIQUV".contains(&first)
        && !b"DFIOQUV".contains(&second)
        && ![*b"BG", *b"GB", *b"KN", *b"NK", *b"NT", *b"TN", *b"ZZ"].contains(&[first, second]);
    if !prefix_valid {
        return None;
    }
    let mut position = at + 2;
    let optional_space =
        |position: usize| position + usize::from(bytes.get(position) == Some(&b' '));
    position = optional_space(position);
    let (digits_end, _) = grouped(bytes, position, &[2, 2, 2], b" ")?;
    if !bytes[position..digits_end]
        .iter()
        .all(|&b| b.is_ascii_digit() || b == b' ')
    {
        return None;
    }
    position = optional_space(digits_end);
    let suffix = *bytes.get(position)?;
    let end = position + 1;
    (matches!(suffix, b'A'..=b'D') && word_ends(bytes, end)).then_some(end)
}

pub(crate) fn fr_nir(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_numbers(
        bytes,
        |at| {
            let (end, compact) = grouped(bytes, at, &[1, 2, 2, 2, 3, 3, 2], b" .")?;
            let nir = compact.as_bytes();
            let department_ok =
                nir[5..7].iter().all(u8::is_ascii_digit) || matches!(&nir[5..7], b"2A" | b"2B");
            let digits_ok = nir[..5].iter().chain(&nir[7..]).all(u8::is_ascii_digit);
            (department_ok && digits_ok && number_ends(bytes, end) && nir_key(nir)).then_some(end)
        },
        out,
    );
}

pub(crate) fn es_dni(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_numbers(bytes, |at| control_letter(bytes, at, 8, 0), out);
    scan_words(
        bytes,
        |b| matches!(b, b'X' | b'Y' | b'Z'),
        |at| {
            let lead = u32::from(bytes[at] - b'X');
            let digits = at + 1 + usize::from(bytes.get(at + 1) == Some(&b'-'));
            control_letter(bytes, digits, 7, lead * 10_000_000)
        },
        out,
    );
}

/// `count` digits at `at`, an optional `-` or space, and the DNI letter of `base` plus
/// their number.
fn control_letter(bytes: &[u8], at: usize, count: usize, base: u32) -> Option<usize> {
    let digits = bytes.get(at..at + count)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let number = base
        + digits
            .iter()
            .fold(0, |value, &b| value * 10 + u32::from(b - b'0'));
    let mut position = at + count;
    if matches!(bytes.get(position), Some(b'-' | b' ')) {
        position += 1;
    }
    let letter = bytes.get(position)?.to_ascii_uppercase();
    let end = position + 1;
    (letter == dni_letter(number) && word_ends(bytes, end)).then_some(end)
}

pub(crate) fn it_codice_fiscale(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_words(
        bytes,
        |b| b.is_ascii_uppercase(),
        |at| {
            let code = bytes.get(at..at + 16)?;
            let end = at + 16;
            (word_ends(bytes, end) && codice_fiscale(code)).then_some(end)
        },
        out,
    );
}

fn codice_fiscale(code: &[u8]) -> bool {
    // Digits of the date and place may be replaced by these letters (omocodia).
    let numeral = |b: u8| b.is_ascii_digit() || b"LMNPQRSTUV".contains(&b);
    let value = |b: u8| match b {
        b'0'..=b'9' => u32::from(b - b'0'),
        _ => b"LMNPQRSTUV"
            .iter()
            .position(|&l| l == b)
            .map_or(99, |p| p as u32),
    };
    let letters = |range: Range<usize>| code[range].iter().all(u8::is_ascii_uppercase);
    let numerals = |range: Range<usize>| code[range].iter().all(|&b| numeral(b));
    let shaped = letters(0..6)
        && numerals(6..8)
        && b"ABCDEHLMPRST".contains(&code[8])
        && numerals(9..11)
        && letters(11..12)
        && numerals(12..15)
        && letters(15..16);
    if !shaped {
        return false;
    }
    let day = value(code[9]) * 10 + value(code[10]);
    ((1..=31).contains(&day) || (41..=71).contains(&day))
        && codice_fiscale_check(&code[..15]) == Some(code[15])
}

pub(crate) fn nl_bsn(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_numbers(
        bytes,
        |at| {
            let (end, compact) = digits_in(bytes, at, &[4, 2, 3], b".")?;
            let digits = compact.as_bytes();
            (digits.iter().any(|&b| b != b'0') && eleven_test(digits)).then_some(end)
        },
        out,
    );
}

pub(crate) fn in_aadhaar(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_numbers(
        bytes,
        |at| {
            let (end, compact) = digits_in(bytes, at, &[4, 4, 4], b" -")?;
            let digits = compact.as_bytes();
            let palindrome = digits.iter().eq(digits.iter().rev());
            (digits[0] >= b'2' && !palindrome && verhoeff(digits)).then_some(end)
        },
        out,
    );
}

pub(crate) fn de_tax_id(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_numbers(
        bytes,
        |at| {
            let (end, compact) = digits_in(bytes, at, &[2, 3, 3, 3], b" ")?;
            let digits = compact.as_bytes();
            let mut counts = [0u8; 10];
            for &b in &digits[..10] {
                counts[usize::from(b - b'0')] += 1;
            }
            let repeated: Vec<u8> = counts.iter().copied().filter(|&count| count > 1).collect();
            let distribution = matches!(repeated.as_slice(), [2] | [3]);
            (digits[0] != b'0' && distribution && mod_11_10(digits)).then_some(end)
        },
        out,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    type Detector = fn(&str, &mut Vec<Range<usize>>);

    fn found(detector: Detector, text: &str) -> Vec<String> {
        let mut ranges = Vec::new();
        detector(text, &mut ranges);
        ranges
            .into_iter()
            .map(|range| text[range].to_owned())
            .collect()
    }

    fn assert_finds(detector: Detector, cases: &[&str]) {
        for case in cases {
            let text = format!("id: {case}, thanks");
            assert_eq!(found(detector, &text), [case.to_string()], "{case}");
        }
    }

    fn assert_ignores(detector: Detector, cases: &[&str]) {
        for case in cases {
            assert!(
                found(detector, case).is_empty(),
                "{case}: {:?}",
                found(detector, case)
            );
        }
    }

    #[test]
    fn us_social_security_numbers() {
        assert_finds(us_ssn, &["536-90-4399", "123 45 6789"]);
        assert_ignores(
            us_ssn,
            &[
                "536904399",
                "000-12-3456",
                "666-12-3456",
                "912-34-5678",
                "123-00-4567",
                "123-45-0000",
                "078-05-1120",
                "123-45 6789",
                "2024-01-15",
                "1123-45-6789",
            ],
        );
    }

    #[test]
    fn uk_national_insurance_numbers() {
        assert_finds(uk_nino, &["AB 12 34 56 C", "AB123456C", "AB 123456 C"]);
        assert_ignores(
            uk_nino,
            &[
                "QQ 12 34 56 C",
                "DA123456A",
                "AO123456A",
                "GB123456A",
                "ZZ123456A",
                "AB123456E",
                "AB12345C",
                "XAB123456C",
                "AB123456CD",
            ],
        );
    }

    #[test]
    fn french_nir() {
        assert_finds(
            fr_nir,
            &[
                "2 95 10 99 126 111 93",
                "295109912611193",
                "253072B07300470",
                "2 53 07 2A 073 004 43",
            ],
        );
        assert_ignores(
            fr_nir,
            &["295109912611199", "253072C07300443", "2951099126111930"],
        );
    }

    #[test]
    fn spanish_dni_and_nie() {
        assert_finds(
            es_dni,
            &[
                "12345678Z",
                "12345678-Z",
                "X1234567L",
                "Y-1234567X",
                "Z1234567R",
            ],
        );
        assert_ignores(
            es_dni,
            &["12345678A", "X1234567A", "123456789Z", "112345678Z"],
        );
    }

    #[test]
    fn italian_codice_fiscale() {
        assert_finds(
            it_codice_fiscale,
            &["RCCMNL83S18D969H", "CNTCHR83T41D969D", "RSSMRA80A01H501U"],
        );
        assert_ignores(
            it_codice_fiscale,
            &[
                "RCCMNL83S18D969A",
                "RCCMNL83Z18D969H",
                "RCCMNL83S18D969",
                "XRCCMNL83S18D969H",
                "ABCDEFGHIJKLMNOP",
            ],
        );
    }

    #[test]
    fn dutch_bsn() {
        assert_finds(nl_bsn, &["111222333", "1112.22.333", "123456782"]);
        assert_ignores(
            nl_bsn,
            &["111252333", "000000000", "1234567820", "12345678"],
        );
    }

    #[test]
    fn indian_aadhaar() {
        assert_finds(
            in_aadhaar,
            &["234123412346", "2341 2341 2346", "2341-2341-2346"],
        );
        assert_ignores(
            in_aadhaar,
            &[
                "234123412347",
                "123412341234",
                "2341 2341-2346",
                "23412341234612",
            ],
        );
    }

    #[test]
    fn german_tax_id() {
        assert_finds(de_tax_id, &["36574261809", "36 574 261 809"]);
        assert_ignores(
            de_tax_id,
            &["36574261890", "36554266806", "06574261809", "365742618090"],
        );
    }
}
