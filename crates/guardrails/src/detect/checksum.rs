//! The check-digit algorithms the detectors verify, on ASCII digits and letters: Luhn
//! (payment cards), ISO 13616 mod 97 (IBAN), Verhoeff (Aadhaar), ISO 7064 MOD 11,10 (German
//! tax id), the Dutch 11-test (BSN), the French NIR key, the Spanish DNI letter and the
//! Italian codice fiscale's check character.

/// The value of an ASCII digit.
fn digit(b: u8) -> u32 {
    u32::from(b.wrapping_sub(b'0'))
}

/// Luhn: doubling every second digit from the right, the sum is a multiple of 10.
pub(crate) fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(index, &b)| {
            let value = digit(b);
            if index % 2 == 1 {
                let doubled = value * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                value
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// ISO 13616: the first four characters moved to the end, letters as 10 to 35, the number
/// modulo 97 is 1. `iban` is upper-case letters and digits.
pub(crate) fn iban_mod97(iban: &[u8]) -> bool {
    if iban.len() < 5 {
        return false;
    }
    let mut remainder = 0u32;
    for &b in iban[4..].iter().chain(&iban[..4]) {
        remainder = match b {
            b'0'..=b'9' => (remainder * 10 + digit(b)) % 97,
            b'A'..=b'Z' => (remainder * 100 + u32::from(b - b'A') + 10) % 97,
            _ => return false,
        };
    }
    remainder == 1
}

const VERHOEFF_MULTIPLY: [[u8; 10]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
];

const VERHOEFF_PERMUTE: [[u8; 10]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
];

/// Verhoeff (dihedral group D5): the check over every digit, rightmost first, is 0.
pub(crate) fn verhoeff(digits: &[u8]) -> bool {
    let mut check = 0usize;
    for (index, &b) in digits.iter().rev().enumerate() {
        let value = digit(b) as usize;
        if value > 9 {
            return false;
        }
        check =
            usize::from(VERHOEFF_MULTIPLY[check][usize::from(VERHOEFF_PERMUTE[index % 8][value])]);
    }
    check == 0
}

/// ISO 7064 MOD 11,10 over every digit, the check digit last: the running value ends at 1.
pub(crate) fn mod_11_10(digits: &[u8]) -> bool {
    let mut check = 5u32;
    for &b in digits {
        let carried = if check == 0 { 10 } else { check };
        check = ((carried * 2) % 11 + digit(b)) % 10;
    }
    check == 1
}

/// The Dutch 11-test of a 9-digit BSN: 9·d1 + 8·d2 + … + 2·d8 − d9 is a multiple of 11.
pub(crate) fn eleven_test(digits: &[u8]) -> bool {
    if digits.len() != 9 {
        return false;
    }
    let weighted: i64 = digits[..8]
        .iter()
        .enumerate()
        .map(|(index, &b)| i64::from(9 - index as u32) * i64::from(digit(b)))
        .sum();
    (weighted - i64::from(digit(digits[8]))).rem_euclid(11) == 0
}

/// The French NIR's key: 97 − (the first 13 characters as a number mod 97), Corsica's
/// departments `2A` and `2B` read as 19 and 18. `nir` is 15 characters.
pub(crate) fn nir_key(nir: &[u8]) -> bool {
    if nir.len() != 15 {
        return false;
    }
    let mut number = [0u8; 13];
    number.copy_from_slice(&nir[..13]);
    match &number[5..7] {
        b"2A" => number[5..7].copy_from_slice(b"19"),
        b"2B" => number[5..7].copy_from_slice(b"18"),
        _ => {}
    }
    if !number.iter().chain(&nir[13..]).all(u8::is_ascii_digit) {
        return false;
    }
    let remainder = number.iter().fold(0u64, |remainder, &b| {
        (remainder * 10 + u64::from(digit(b))) % 97
    });
    let key = u64::from(digit(nir[13])) * 10 + u64::from(digit(nir[14]));
    key == 97 - remainder
}

/// The letter of a Spanish DNI number: `TRWAGMYFPDXBNJZSQVHLCKE` at the number mod 23.
pub(crate) fn dni_letter(number: u32) -> u8 {
    b"TRWAGMYFPDXBNJZSQVHLCKE"[(number % 23) as usize]
}

/// The codice fiscale's check character over its first 15 characters: odd positions
/// (1st, 3rd, …) through a fixed table, even positions at their value, the sum mod 26 as a
/// letter.
pub(crate) fn codice_fiscale_check(first_fifteen: &[u8]) -> Option<u8> {
    const ODD: [u32; 26] = [
        1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24,
        23,
    ];
    let mut sum = 0u32;
    for (index, &b) in first_fifteen.iter().enumerate() {
        let value = match b {
            b'0'..=b'9' => digit(b),
            b'A'..=b'Z' => u32::from(b - b'A'),
            _ => return None,
        };
        sum += if index % 2 == 0 {
            ODD[value as usize]
        } else {
            value
        };
    }
    Some(b'A' + (sum % 26) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_accepts_valid_numbers_only() {
        assert!(luhn(b"4111111111111111"));
        assert!(luhn(b"79927398713"));
        assert!(!luhn(b"4111111111111112"));
        assert!(!luhn(b"79927398710"));
    }

    #[test]
    fn iban_mod97_checks_the_rearranged_number() {
        assert!(iban_mod97(b"GB82WEST12345698765432"));
        assert!(iban_mod97(b"DE89370400440532013000"));
        assert!(!iban_mod97(b"GB82WEST12345698765431"));
        assert!(!iban_mod97(b"DE88370400440532013000"));
    }

    #[test]
    fn verhoeff_matches_known_values() {
        assert!(verhoeff(b"2363"));
        assert!(verhoeff(b"12340"));
        assert!(!verhoeff(b"1234"));
        assert!(verhoeff(b"234123412346"));
        assert!(!verhoeff(b"234123412347"));
    }

    #[test]
    fn mod_11_10_matches_known_values() {
        assert!(mod_11_10(b"794623"));
        assert!(mod_11_10(b"002006673085"));
        assert!(mod_11_10(b"36574261809"));
        assert!(!mod_11_10(b"36574261890"));
    }

    #[test]
    fn eleven_test_matches_known_values() {
        assert!(eleven_test(b"111222333"));
        assert!(eleven_test(b"123456782"));
        assert!(!eleven_test(b"111252333"));
        assert!(!eleven_test(b"12345678"));
    }

    #[test]
    fn nir_key_handles_corsica() {
        assert!(nir_key(b"295109912611193"));
        assert!(!nir_key(b"295109912611199"));
        assert!(nir_key(b"253072B07300470"));
        assert!(nir_key(b"253072A07300443"));
        assert!(!nir_key(b"253072C07300443"));
    }

    #[test]
    fn dni_letters_and_codice_fiscale_checks() {
        assert_eq!(dni_letter(12_345_678), b'Z');
        assert_eq!(codice_fiscale_check(b"RCCMNL83S18D969"), Some(b'H'));
        assert_eq!(codice_fiscale_check(b"CNTCHR83T41D969"), Some(b'D'));
        assert_eq!(codice_fiscale_check(b"RSSMRA80A01H501"), Some(b'U'));
    }
}
