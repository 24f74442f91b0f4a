//! IP addresses, valid ones only: candidates are read as maximal runs of the characters an
//! address is written with and parsed by the standard library (`Ipv4Addr`, `Ipv6Addr`), so
//! `999.1.1.1`, `1.2.3` and octets with leading zeros are refused. IPv4 is four dotted
//! decimal octets not glued to more digits or dots (`10.0.0.1:8080` and `10.0.0.0/8` still
//! match their address); IPv6 is any form the standard parser takes (`2001:db8::1`,
//! `::ffff:192.0.2.1`) with at least two colons and a decimal digit, so words such as
//! `std::fmt` or `a::b` are not addresses. Not personal, so never reported: loopback,
//! unspecified (`0.0.0.0`, `::`), and IPv4 addresses starting with 255 (the broadcast
//! address and netmasks).

use std::{
    net::{Ipv4Addr, Ipv6Addr},
    ops::Range,
};

use super::bytes::{is_alnum, run_end};

pub(crate) fn find(text: &str, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        let fresh =
            at == 0 || !(is_alnum(bytes[at - 1]) || matches!(bytes[at - 1], b'.' | b':' | b'_'));
        let found = if !fresh {
            None
        } else if b.is_ascii_hexdigit() || b == b':' {
            ipv6_at(text, at).or_else(|| ipv4_at(text, at))
        } else {
            None
        };
        match found {
            Some(end) => {
                out.push(at..end);
                at = end;
            }
            None => at += 1,
        }
    }
}

fn ipv4_at(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut end = run_end(bytes, at, |b| b.is_ascii_digit() || b == b'.');
    // A sentence's final dot is not part of the address.
    if end > at && bytes[end - 1] == b'.' {
        end -= 1;
    }
    if bytes.get(end).is_some_and(|&b| is_alnum(b) || b == b'_') {
        return None;
    }
    let address: Ipv4Addr = text[at..end].parse().ok()?;
    let personal =
        !(address.is_loopback() || address.is_unspecified() || address.octets()[0] == 255);
    personal.then_some(end)
}

fn ipv6_at(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut end = run_end(bytes, at, |b| {
        b.is_ascii_hexdigit() || b == b':' || b == b'.'
    });
    if end > at && bytes[end - 1] == b'.' {
        end -= 1;
    }
    // A colon after the address ("at fe80::1: …") is punctuation, unless it ends "::".
    if end > at + 1 && bytes[end - 1] == b':' && bytes[end - 2] != b':' {
        end -= 1;
    }
    let candidate = &text[at..end];
    let plausible = candidate.bytes().filter(|&b| b == b':').count() >= 2
        && candidate.bytes().any(|b| b.is_ascii_digit())
        && !bytes.get(end).is_some_and(|&b| is_alnum(b) || b == b'_');
    if !plausible {
        return None;
    }
    let address: Ipv6Addr = candidate.parse().ok()?;
    let personal = !(address.is_loopback() || address.is_unspecified());
    personal.then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        super::super::found_by(find, text)
    }

    #[test]
    fn finds_valid_addresses() {
        assert_eq!(
            found("from 192.0.2.10, via 10.0.0.1:8080."),
            ["192.0.2.10", "10.0.0.1"]
        );
        assert_eq!(found("route 10.0.0.0/8"), ["10.0.0.0"]);
        assert_eq!(found("host [2001:db8::1]:443"), ["2001:db8::1"]);
        assert_eq!(
            found("fe80::1ff:fe23:4567:890a is local"),
            ["fe80::1ff:fe23:4567:890a"]
        );
        assert_eq!(found("mapped ::ffff:192.0.2.1."), ["::ffff:192.0.2.1"]);
        assert_eq!(
            found("2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
            ["2001:0db8:85a3:0000:0000:8a2e:0370:7334"]
        );
    }

    #[test]
    fn ignores_invalid_and_non_personal_addresses() {
        for text in [
            "999.1.1.1",
            "1.2.3",
            "1.2.3.4.5",
            "01.2.3.4",
            "version 10.0.19041.1",
            "127.0.0.1 and 0.0.0.0 and ::1 and ::",
            "mask 255.255.255.0",
            "std::fmt and a::b and Foo::bar()",
            "12:30:45",
            "00:1A:2B:3C:4D:5E",
            "x192.0.2.1",
            "2001:db8::g",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
    }
}
