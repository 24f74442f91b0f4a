//! API-key-like secrets. Known formats, each a prefix and a minimum run of its characters
//! (letters, digits, and `-`/`_` where the format has them), not glued to a longer word:
//!
//! | format | written as |
//! |:--|:--|
//! | OpenAI | `sk-` + 20 or more of `A-Za-z0-9_-` (`sk-proj-…` included) |
//! | Anthropic | `sk-ant-` + 20 or more of `A-Za-z0-9_-` |
//! | Stripe | `sk_live_`, `sk_test_`, `rk_live_`, `rk_test_` + 16 or more letters and digits |
//! | GitHub | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 36 or more letters and digits; `github_pat_` + 22 or more of `A-Za-z0-9_` |
//! | AWS access key id | `AKIA` or `ASIA` + exactly 16 upper-case letters and digits |
//! | Google API key | `AIza` + 35 of `A-Za-z0-9_-` |
//! | Slack | `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-` + 10 or more of `A-Za-z0-9-` |
//! | Tessera API key | `tsk_` + 40 or more of `A-Za-z0-9_-` |
//! | JWT | `eyJ` + 10 or more base64url characters, `.`, 10 or more, `.`, the signature (possibly empty) |
//! | PEM private key | `-----BEGIN … PRIVATE KEY-----` through its `-----END … PRIVATE KEY-----` line (PKCS#1, PKCS#8, EC, DSA, OpenSSH, encrypted, PGP's `PRIVATE KEY BLOCK`); without an END line, through the base64 lines that follow |
//!
//! Values assigned to credential names (`api_key = …`) are found by `credential`.

use std::ops::Range;

use super::bytes::is_alnum;

/// One known format: a prefix, which bytes follow it, how many at least (and at most).
struct Format {
    prefix: &'static [u8],
    body: fn(u8) -> bool,
    min: usize,
    max: usize,
}

fn alnum(b: u8) -> bool {
    is_alnum(b)
}

fn base64url(b: u8) -> bool {
    is_alnum(b) || b == b'-' || b == b'_'
}

fn alnum_underscore(b: u8) -> bool {
    is_alnum(b) || b == b'_'
}

fn alnum_dash(b: u8) -> bool {
    is_alnum(b) || b == b'-'
}

fn upper_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

const UNBOUNDED: usize = usize::MAX;

/// Longer prefixes first where one starts another (`sk-ant-` before `sk-`).
#[rustfmt::skip]
const FORMATS: &[Format] = &[
    Format { prefix: b"sk-ant-", body: base64url, min: 20, max: UNBOUNDED },
    Format { prefix: b"sk-", body: base64url, min: 20, max: UNBOUNDED },
    Format { prefix: b"sk_live_", body: alnum, min: 16, max: UNBOUNDED },
    Format { prefix: b"sk_test_", body: alnum, min: 16, max: UNBOUNDED },
    Format { prefix: b"rk_live_", body: alnum, min: 16, max: UNBOUNDED },
    Format { prefix: b"rk_test_", body: alnum, min: 16, max: UNBOUNDED },
    Format { prefix: b"ghp_", body: alnum, min: 36, max: UNBOUNDED },
    Format { prefix: b"gho_", body: alnum, min: 36, max: UNBOUNDED },
    Format { prefix: b"ghu_", body: alnum, min: 36, max: UNBOUNDED },
    Format { prefix: b"ghs_", body: alnum, min: 36, max: UNBOUNDED },
    Format { prefix: b"ghr_", body: alnum, min: 36, max: UNBOUNDED },
    Format { prefix: b"github_pat_", body: alnum_underscore, min: 22, max: UNBOUNDED },
    Format { prefix: b"AKIA", body: upper_digit, min: 16, max: 16 },
    Format { prefix: b"ASIA", body: upper_digit, min: 16, max: 16 },
    Format { prefix: b"AIza", body: base64url, min: 35, max: 35 },
    Format { prefix: b"xoxb-", body: alnum_dash, min: 10, max: UNBOUNDED },
    Format { prefix: b"xoxp-", body: alnum_dash, min: 10, max: UNBOUNDED },
    Format { prefix: b"xoxa-", body: alnum_dash, min: 10, max: UNBOUNDED },
    Format { prefix: b"xoxr-", body: alnum_dash, min: 10, max: UNBOUNDED },
    Format { prefix: b"xoxs-", body: alnum_dash, min: 10, max: UNBOUNDED },
    Format { prefix: b"tsk_", body: base64url, min: 40, max: UNBOUNDED },
];

pub(crate) fn find(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let fresh = at == 0 || !base64url(bytes[at - 1]);
        let end = if fresh {
            match bytes[at] {
                b'-' => private_key_at(text, at),
                b'e' => jwt_at(bytes, at),
                _ => known_at(bytes, at),
            }
        } else {
            None
        };
        match end {
            Some(end) => {
                found.push(at..end);
                at = end;
            }
            None => at += 1,
        }
    }
    super::credential::find_assigned(bytes, &found, out);
    out.extend(found);
}

fn known_at(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    let format = FORMATS
        .iter()
        .find(|format| rest.starts_with(format.prefix))?;
    let body_start = at + format.prefix.len();
    let end = super::bytes::run_end(bytes, body_start, format.body);
    let length = end - body_start;
    // A longer run of the format's characters, or a word glued after it, is something else.
    let glued = bytes.get(end).is_some_and(|&b| base64url(b));
    (length >= format.min && length <= format.max && !glued).then_some(end)
}

fn jwt_at(bytes: &[u8], at: usize) -> Option<usize> {
    if !bytes[at..].starts_with(b"eyJ") {
        return None;
    }
    let header_end = super::bytes::run_end(bytes, at, base64url);
    if header_end - at < 13 || bytes.get(header_end) != Some(&b'.') {
        return None;
    }
    let payload_end = super::bytes::run_end(bytes, header_end + 1, base64url);
    if payload_end - (header_end + 1) < 10 || bytes.get(payload_end) != Some(&b'.') {
        return None;
    }
    Some(super::bytes::run_end(bytes, payload_end + 1, base64url))
}

/// A PEM private key block from its BEGIN line at `at`.
fn private_key_at(text: &str, at: usize) -> Option<usize> {
    const BEGIN: &str = "-----BEGIN ";
    const DASHES: &str = "-----";
    let rest = &text[at..];
    if !rest.starts_with(BEGIN) {
        return None;
    }
    let label_end = rest[BEGIN.len()..].find(DASHES)? + BEGIN.len();
    let label = &rest[BEGIN.len()..label_end];
    if label.len() > 40 || !(label.ends_with("PRIVATE KEY") || label.ends_with("PRIVATE KEY BLOCK"))
    {
        return None;
    }
    let end_marker = format!("-----END {label}-----");
    if let Some(offset) = rest.find(&end_marker) {
        return Some(at + offset + end_marker.len());
    }
    // Cut short: the base64 lines (and PGP's headers) that follow the BEGIN line.
    let begin_end = at + label_end + DASHES.len();
    let mut lines = text[begin_end..].split_inclusive('\n');
    let mut cursor = begin_end + lines.next().map_or(0, str::len);
    let mut end = begin_end;
    for line in lines {
        let body = line.trim_end();
        let base64 = !body.is_empty()
            && body.bytes().all(|b| {
                is_alnum(b) || matches!(b, b'+' | b'/' | b'=' | b':' | b' ' | b'-' | b',')
            });
        if !base64 {
            break;
        }
        cursor += line.len();
        end = cursor;
    }
    Some(text[..end].trim_end().len().max(begin_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        super::super::found_by(find, text)
    }

    #[test]
    fn finds_known_formats() {
        let cases = [
            "sk-proj-4fGh7Jk9LmN2pQ5rS8tU1vW3xY6z",
            "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "ghp_0123456789abcdefghijABCDEFGHIJ0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "AKIAIOSFODNN7EXAMPLE",
            "AIzaSyA-0123456789abcdefghijklmnopqrstu",
            "xoxb-123456789012-abcdefABCDEF",
            "tsk_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ];
        for secret in cases {
            let text = format!("use {secret} here");
            assert_eq!(found(&text), [secret], "{secret}");
        }
    }

    #[test]
    fn finds_private_key_blocks() {
        let block = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==\n-----END RSA PRIVATE KEY-----";
        let text = format!("key:\n{block}\nthanks");
        assert_eq!(found(&text), [block]);
        let cut = "-----BEGIN PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==";
        assert_eq!(found(&format!("{cut}\n\nWhat is this?")), [cut]);
        assert!(found("-----BEGIN PUBLIC KEY-----\nMFwwDQYJ\n-----END PUBLIC KEY-----").is_empty());
    }

    #[test]
    fn ignores_prose_placeholders_and_lookalikes() {
        for text in [
            "sk-short",
            "task-sk-proj-4fGh7Jk9LmN2pQ5rS8tU1vW3xY6z",
            "AKIAIOSFODNN7EXAMPLEX",
            "ghp_tooShort123",
            "eyJhbGciOiJIUzI1NiJ9 is a header",
            "risk-assessment-methodology-and-tooling",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }
}
