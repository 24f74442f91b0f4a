//! The detectors: pure functions from a text to the byte ranges of the values of one
//! [`PiiKind`] it holds, with no allocation beyond the result and no regular expressions.
//! Each kind's module documents exactly what it matches and how it validates: `email`,
//! `phone`, `card` (Luhn and issuer prefixes), `iban` (registry lengths and mod 97), `ip`
//! (the standard library's parsers), `secret` (known key formats) with `credential`
//! (values assigned to credential names), and `national` (eight countries' ids with their
//! check digits). Ranges start and end next to ASCII bytes, so they always fall on `char`
//! boundaries.

mod bytes;
mod card;
mod checksum;
mod credential;
mod email;
mod iban;
mod ip;
mod national;
mod phone;
mod secret;

use std::ops::Range;

use crate::PiiKind;

/// Appends the byte ranges of the `kind` values in `text` to `out`, in no particular order.
pub fn find_into(kind: PiiKind, text: &str, out: &mut Vec<Range<usize>>) {
    match kind {
        PiiKind::Email => email::find(text, out),
        PiiKind::Phone => phone::find(text, out),
        PiiKind::PaymentCard => card::find(text, out),
        PiiKind::Iban => iban::find(text, out),
        PiiKind::IpAddress => ip::find(text, out),
        PiiKind::Secret => secret::find(text, out),
        PiiKind::UsSsn => national::us_ssn(text, out),
        PiiKind::UkNino => national::uk_nino(text, out),
        PiiKind::FrNir => national::fr_nir(text, out),
        PiiKind::EsDni => national::es_dni(text, out),
        PiiKind::ItCodiceFiscale => national::it_codice_fiscale(text, out),
        PiiKind::NlBsn => national::nl_bsn(text, out),
        PiiKind::InAadhaar => national::in_aadhaar(text, out),
        PiiKind::DeTaxId => national::de_tax_id(text, out),
    }
}

/// The byte ranges of the `kind` values in `text`, in text order.
pub fn find(kind: PiiKind, text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    find_into(kind, text, &mut ranges);
    ranges.sort_by_key(|range| (range.start, range.end));
    ranges
}

/// The values one detector finds in `text`, in text order: what each detector's tests
/// compare.
#[cfg(test)]
fn found_by(detector: fn(&str, &mut Vec<Range<usize>>), text: &str) -> Vec<&str> {
    let mut ranges = Vec::new();
    detector(text, &mut ranges);
    ranges.sort_by_key(|range| (range.start, range.end));
    ranges.into_iter().map(|range| &text[range]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ordinary prose, numbers, dates and versions hold nothing for any detector.
    #[test]
    fn ordinary_text_holds_no_finding() {
        let text = "On 2024-01-15 at 10:30 the team shipped version 2.14.3 (build 20240115.7) \
            to 1,250 customers; 99.95% uptime, 3/4 of requests under 120 ms. Invoice #48213 \
            totals EUR 1.234,56 and order 1234567890 ships in 2-3 days. Call it v1.2.3-rc.1. \
            Rust's std::fmt and Foo::bar() are fine; so are ISBN 978-3-16-148410-0, the \
            ratio 16:9, coordinates 48.8566, 2.3522 and the year 1999. A key: value pair.";
        for kind in PiiKind::ALL {
            assert_eq!(find(kind, text), Vec::<Range<usize>>::new(), "{kind}");
        }
    }

    #[test]
    fn ranges_fall_on_char_boundaries_in_non_ascii_text() {
        let text = "Грüße: jürgen@bücher.de, ☎ +49 30 1234567 — €4111 1111 1111 1111€";
        for kind in PiiKind::ALL {
            for range in find(kind, text) {
                assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end));
            }
        }
        assert_eq!(find(PiiKind::PaymentCard, text).len(), 1);
        assert_eq!(find(PiiKind::Phone, text).len(), 1);
        assert_eq!(find(PiiKind::Email, text).len(), 1);
    }
}
