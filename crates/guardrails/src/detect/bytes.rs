//! Byte-level helpers the detectors share. Every detector matches ASCII only, so every range
//! it reports starts and ends next to an ASCII byte: a valid `str` boundary in any text. A
//! non-ASCII character next to a match counts as a boundary (like a space).

use std::ops::Range;

pub(crate) fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Whether a word may start at `at`: no ASCII letter or digit right before it.
pub(crate) fn word_starts(bytes: &[u8], at: usize) -> bool {
    at == 0 || !is_alnum(bytes[at - 1])
}

/// Whether a word may end at `end`: no ASCII letter or digit right after it.
pub(crate) fn word_ends(bytes: &[u8], end: usize) -> bool {
    end >= bytes.len() || !is_alnum(bytes[end])
}

/// Bytes that glue two numbers into one (`1.5`, `12-345`, `1,000`, `3/4`).
fn glues_numbers(b: u8) -> bool {
    matches!(b, b'.' | b',' | b'-' | b'/')
}

/// Whether a number may start at `at`: a word start not glued to a number before it.
pub(crate) fn number_starts(bytes: &[u8], at: usize) -> bool {
    word_starts(bytes, at)
        && !(at >= 2 && glues_numbers(bytes[at - 1]) && bytes[at - 2].is_ascii_digit())
}

/// Whether a number may end at `end`: a word end not glued to a number after it.
pub(crate) fn number_ends(bytes: &[u8], end: usize) -> bool {
    word_ends(bytes, end)
        && !(end + 1 < bytes.len() && glues_numbers(bytes[end]) && bytes[end + 1].is_ascii_digit())
}

/// The end of the run of bytes from `at` that `accept` takes.
pub(crate) fn run_end(bytes: &[u8], at: usize, accept: impl Fn(u8) -> bool) -> usize {
    bytes[at..]
        .iter()
        .position(|&b| !accept(b))
        .map_or(bytes.len(), |length| at + length)
}

/// Up to 32 bytes without their separators: what a checksum reads.
#[derive(Clone, Copy)]
pub(crate) struct Compact {
    bytes: [u8; 32],
    len: usize,
}

impl Compact {
    pub(crate) fn new() -> Self {
        Self {
            bytes: [0; 32],
            len: 0,
        }
    }

    /// Appends `b`; false once full.
    pub(crate) fn push(&mut self, b: u8) -> bool {
        match self.bytes.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Reads, from `at`, letters and digits in groups of the lengths `layout` gives, either
/// back to back or with one separator between every two groups, the same one each time,
/// taken from `separators`. Returns where it ends and the characters read; the caller checks
/// the boundary and what the characters must be.
pub(crate) fn grouped(
    bytes: &[u8],
    at: usize,
    layout: &[usize],
    separators: &[u8],
) -> Option<(usize, Compact)> {
    let mut compact = Compact::new();
    let mut position = at;
    let mut separator = None;
    for (index, &length) in layout.iter().enumerate() {
        if index > 0 {
            let next = *bytes.get(position)?;
            match separator {
                None if separators.contains(&next) => {
                    separator = Some(next);
                    position += 1;
                }
                None if index == 1 => separator = Some(0),
                Some(sep) if sep != 0 && sep == next => position += 1,
                Some(0) => {}
                _ => return None,
            }
        }
        let group = bytes.get(position..position + length)?;
        if !group.iter().all(|&b| is_alnum(b)) {
            return None;
        }
        for &b in group {
            if !compact.push(b) {
                return None;
            }
        }
        position += length;
    }
    Some((position, compact))
}

/// Runs `detect` at every position where a word starts with a byte `first` accepts, and
/// collects what it finds; after a match the scan resumes at its end.
pub(crate) fn scan_words(
    bytes: &[u8],
    first: impl Fn(u8) -> bool,
    mut detect: impl FnMut(usize) -> Option<usize>,
    out: &mut Vec<Range<usize>>,
) {
    let mut at = 0;
    while at < bytes.len() {
        if first(bytes[at])
            && word_starts(bytes, at)
            && let Some(end) = detect(at)
        {
            out.push(at..end);
            at = end;
        } else {
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_reads_back_to_back_or_with_one_separator() {
        let read = |text: &str| {
            grouped(text.as_bytes(), 0, &[3, 2, 4], b"- ")
                .map(|(end, compact)| (end, compact.as_bytes().to_vec()))
        };
        assert_eq!(read("123456789"), Some((9, b"123456789".to_vec())));
        assert_eq!(read("123-45-6789"), Some((11, b"123456789".to_vec())));
        assert_eq!(read("123 45 6789"), Some((11, b"123456789".to_vec())));
        assert_eq!(read("123-45 6789"), None);
        assert_eq!(read("12345-6789"), None);
        assert_eq!(read("123-45-678"), None);
    }

    #[test]
    fn numbers_glued_by_separators_are_one_number() {
        let text = b"1.5 and 12-345";
        assert!(!number_starts(text, 2));
        assert!(!number_ends(text, 1));
        assert!(number_starts(text, 0));
        assert!(!number_starts(text, 11));
    }
}
