//! Payment card numbers: 13 to 19 digits, written back to back or in groups separated by one
//! space or `-` (the same each time) in a printed layout: fours with a shorter last group
//! (`4111 1111 1111 1111`, `6011-0009-9013-9424`), or Amex's and Diners' 4-6-5 and 4-6-4.
//! The number must pass the Luhn check and start with a known issuer prefix at a length
//! that issuer uses: Visa (4; 13, 16, 19), Mastercard (51–55, 2221–2720; 16), American
//! Express (34, 37; 15), Discover (6011, 644–649, 65, 622126–622925; 16–19), Diners Club
//! (300–305, 36, 38, 39; 14–19), JCB (3528–3589; 16–19), UnionPay (62; 16–19), Maestro
//! (5018, 5020, 5038, 5893, 6304, 6759, 6761–6763; 13–19) and Mir (2200–2204; 16–19).
//! Numbers glued to other digits are not cards; a group of digits after a card, separated
//! by a space, is left out of it.

use std::ops::Range;

use super::{
    bytes::{number_ends, number_starts},
    checksum::luhn,
};

pub(crate) fn find(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii_digit()
            && number_starts(bytes, at)
            && let Some(end) = card_at(bytes, at)
        {
            out.push(at..end);
            at = end;
        } else {
            at += 1;
        }
    }
}

/// The card number starting at `at`, if the digit groups there make one.
fn card_at(bytes: &[u8], at: usize) -> Option<usize> {
    // Digit groups separated by one separator, the same each time; at most 5 (4-4-4-4-3).
    let mut groups: [(usize, usize); 6] = [(0, 0); 6];
    let mut count = 0;
    let mut separator = None;
    let mut position = at;
    while count < groups.len() {
        let end = super::bytes::run_end(bytes, position, |b| b.is_ascii_digit());
        groups[count] = (position, end);
        count += 1;
        let Some(&next) = bytes.get(end) else {
            break;
        };
        let continues = matches!(next, b' ' | b'-')
            && separator.is_none_or(|sep| sep == next)
            && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
        if !continues {
            break;
        }
        separator = Some(next);
        position = end + 1;
    }
    // The longest run of whole groups that is a card, ending the number or before a space.
    (1..=count).rev().find_map(|taken| {
        let groups = &groups[..taken];
        let end = groups[taken - 1].1;
        let ends = taken == count || bytes.get(end) == Some(&b' ');
        (ends && number_ends(bytes, end) && printed_layout(groups) && valid(bytes, groups))
            .then_some(end)
    })
}

/// Whether the group lengths are a layout cards are printed in.
fn printed_layout(groups: &[(usize, usize)]) -> bool {
    let mut lengths = [0usize; 6];
    for (length, (start, end)) in lengths.iter_mut().zip(groups) {
        *length = end - start;
    }
    match &lengths[..groups.len().min(6)] {
        [single] => (13..=19).contains(single),
        [4, 6, 5] | [4, 6, 4] => true,
        [fours @ .., last] => {
            fours.len() >= 3 && fours.iter().all(|&l| l == 4) && (1..=4).contains(last)
        }
        [] => false,
    }
}

fn valid(bytes: &[u8], groups: &[(usize, usize)]) -> bool {
    let mut digits = [0u8; 19];
    let mut length = 0;
    for &(start, end) in groups {
        for &b in &bytes[start..end] {
            let Some(slot) = digits.get_mut(length) else {
                return false;
            };
            *slot = b;
            length += 1;
        }
    }
    let digits = &digits[..length];
    (13..=19).contains(&length) && issuer_uses(digits) && luhn(digits)
}

/// Whether a known issuer's prefix starts `digits` at a length it issues.
fn issuer_uses(digits: &[u8]) -> bool {
    let prefix = |count: usize| {
        digits[..count]
            .iter()
            .fold(0u32, |value, &b| value * 10 + u32::from(b - b'0'))
    };
    let length = digits.len();
    let (p2, p3, p4, p6) = (prefix(2), prefix(3), prefix(4), prefix(6));
    let visa = digits[0] == b'4' && matches!(length, 13 | 16 | 19);
    let mastercard = ((51..=55).contains(&p2) || (2221..=2720).contains(&p4)) && length == 16;
    let amex = matches!(p2, 34 | 37) && length == 15;
    let long = (16..=19).contains(&length);
    let discover =
        (p4 == 6011 || (644..=649).contains(&p3) || p2 == 65 || (622_126..=622_925).contains(&p6))
            && long;
    let diners =
        ((300..=305).contains(&p3) || matches!(p2, 36 | 38 | 39)) && (14..=19).contains(&length);
    let jcb = (3528..=3589).contains(&p4) && long;
    let unionpay = p2 == 62 && long;
    let maestro = matches!(p4, 5018 | 5020 | 5038 | 5893 | 6304 | 6759 | 6761..=6763);
    let mir = (2200..=2204).contains(&p4) && long;
    visa || mastercard || amex || discover || diners || jcb || unionpay || maestro || mir
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        super::super::found_by(find, text)
    }

    #[test]
    fn finds_valid_cards_in_their_printed_layouts() {
        assert_eq!(
            found("card 4111 1111 1111 1111, exp 12/29"),
            ["4111 1111 1111 1111"]
        );
        assert_eq!(found("4111-1111-1111-1111"), ["4111-1111-1111-1111"]);
        assert_eq!(found("5500005555555559"), ["5500005555555559"]);
        assert_eq!(found("Amex 3782 822463 10005."), ["3782 822463 10005"]);
        assert_eq!(found("6011 0009 9013 9424"), ["6011 0009 9013 9424"]);
        assert_eq!(found("Diners 3056 930902 5904"), ["3056 930902 5904"]);
        assert_eq!(found("JCB 3530111333300000"), ["3530111333300000"]);
        assert_eq!(found("2221 0000 0000 0009"), ["2221 0000 0000 0009"]);
        assert_eq!(
            found("4111 1111 1111 1111 2024 was paid"),
            ["4111 1111 1111 1111"]
        );
    }

    #[test]
    fn ignores_invalid_or_unknown_numbers() {
        for text in [
            "4111 1111 1111 1112",
            "1234 5678 9012 3456",
            "9111111111111111",
            "41111 11111 11111 1",
            "4111 1111-1111 1111",
            "4111111111111111111111",
            "ref 12.4111111111111111",
            "411111111111",
            "3782822463100050",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }
}
