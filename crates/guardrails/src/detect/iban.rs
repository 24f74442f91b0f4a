//! IBANs: a country code of two upper-case letters from SWIFT's IBAN registry, two check
//! digits, and the country's BBAN, written back to back (`DE89370400440532013000`) or in
//! the printed format, groups of four separated by one space (`DE89 3704 0044 0532 0130
//! 00`). The length must be the registry's for the country and the ISO 13616 mod-97 check
//! must hold. BBAN letters may be lower case (they are checked as upper case).

use std::ops::Range;

use super::{
    bytes::{is_alnum, scan_words, word_ends},
    checksum::iban_mod97,
};

/// IBAN lengths by country, from SWIFT's IBAN registry (89 countries): four characters more
/// than each country's BBAN.
#[rustfmt::skip]
const LENGTHS: [([u8; 2], usize); 89] = [
    (*b"AD", 24), (*b"AE", 23), (*b"AL", 28), (*b"AT", 20), (*b"AZ", 28), (*b"BA", 20),
    (*b"BE", 16), (*b"BG", 22), (*b"BH", 22), (*b"BI", 27), (*b"BR", 29), (*b"BY", 28),
    (*b"CH", 21), (*b"CR", 22), (*b"CY", 28), (*b"CZ", 24), (*b"DE", 22), (*b"DJ", 27),
    (*b"DK", 18), (*b"DO", 28), (*b"EE", 20), (*b"EG", 29), (*b"ES", 24), (*b"FI", 18),
    (*b"FK", 18), (*b"FO", 18), (*b"FR", 27), (*b"GB", 22), (*b"GE", 22), (*b"GI", 23),
    (*b"GL", 18), (*b"GR", 27), (*b"GT", 28), (*b"HN", 28), (*b"HR", 21), (*b"HU", 28),
    (*b"IE", 22), (*b"IL", 23), (*b"IQ", 23), (*b"IS", 26), (*b"IT", 27), (*b"JO", 30),
    (*b"KW", 30), (*b"KZ", 20), (*b"LB", 28), (*b"LC", 32), (*b"LI", 21), (*b"LT", 20),
    (*b"LU", 20), (*b"LV", 21), (*b"LY", 25), (*b"MC", 27), (*b"MD", 24), (*b"ME", 22),
    (*b"MK", 19), (*b"MN", 20), (*b"MR", 27), (*b"MT", 31), (*b"MU", 30), (*b"NI", 28),
    (*b"NL", 18), (*b"NO", 15), (*b"OM", 23), (*b"PK", 24), (*b"PL", 28), (*b"PS", 29),
    (*b"PT", 25), (*b"QA", 29), (*b"RO", 24), (*b"RS", 22), (*b"RU", 33), (*b"SA", 24),
    (*b"SC", 31), (*b"SD", 18), (*b"SE", 24), (*b"SI", 19), (*b"SK", 24), (*b"SM", 27),
    (*b"SO", 23), (*b"ST", 25), (*b"SV", 28), (*b"TL", 23), (*b"TN", 24), (*b"TR", 26),
    (*b"UA", 29), (*b"VA", 22), (*b"VG", 24), (*b"XK", 20), (*b"YE", 30),
];

fn length_of(country: [u8; 2]) -> Option<usize> {
    LENGTHS
        .binary_search_by_key(&country, |&(code, _)| code)
        .ok()
        .map(|index| LENGTHS[index].1)
}

pub(crate) fn find(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    scan_words(
        bytes,
        |b| b.is_ascii_uppercase(),
        |at| iban_at(bytes, at),
        out,
    );
}

fn iban_at(bytes: &[u8], at: usize) -> Option<usize> {
    let head = bytes.get(at..at + 4)?;
    if !(head[1].is_ascii_uppercase() && head[2].is_ascii_digit() && head[3].is_ascii_digit()) {
        return None;
    }
    let length = length_of([head[0], head[1]])?;
    let mut iban = [0u8; 34];
    let mut read = 0;
    let mut position = at;
    // The printed format puts a space after every fourth character; otherwise none.
    let spaced = bytes.get(at + 4) == Some(&b' ');
    while read < length {
        if spaced && read > 0 && read % 4 == 0 {
            if bytes.get(position) != Some(&b' ') {
                return None;
            }
            position += 1;
        }
        let b = *bytes.get(position)?;
        if !is_alnum(b) {
            return None;
        }
        iban[read] = b.to_ascii_uppercase();
        read += 1;
        position += 1;
    }
    (word_ends(bytes, position) && iban_mod97(&iban[..length])).then_some(position)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        super::super::found_by(find, text)
    }

    #[test]
    fn the_length_table_is_sorted() {
        assert!(LENGTHS.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    #[test]
    fn finds_ibans_back_to_back_and_printed() {
        assert_eq!(
            found("IBAN: DE89370400440532013000."),
            ["DE89370400440532013000"]
        );
        assert_eq!(
            found("pay to DE89 3704 0044 0532 0130 00 today"),
            ["DE89 3704 0044 0532 0130 00"]
        );
        assert_eq!(
            found("GB82 WEST 1234 5698 7654 32"),
            ["GB82 WEST 1234 5698 7654 32"]
        );
        assert_eq!(found("NO9386011117947"), ["NO9386011117947"]);
        assert_eq!(
            found("FR14 2004 1010 0505 0001 3M02 606"),
            ["FR14 2004 1010 0505 0001 3M02 606"]
        );
    }

    #[test]
    fn ignores_wrong_checks_lengths_and_countries() {
        for text in [
            "DE88370400440532013000",
            "DE8937040044053201300",
            "DE893704004405320130001",
            "DE89 37040044 0532013000",
            "XX89370400440532013000",
            "de89370400440532013000",
            "ADE89370400440532013000",
            "DE89370400440532013000X",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }
}
