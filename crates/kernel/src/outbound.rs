//! Where the service may send requests on a tenant's behalf (webhook receivers, MCP servers):
//! never to its own network unless the operator allows it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Which targets outbound calls made for tenants may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TargetPolicy {
    /// Allow `localhost` and loopback, private, link-local and unspecified IP addresses
    /// (off by default: a tenant must not reach the service's own network through us).
    pub allow_private_targets: bool,
}

/// Whether `ip` is loopback, private, link-local (cloud metadata services among them),
/// unique-local, carrier-grade NAT, broadcast, reserved or unspecified: addresses of the
/// service's own network, which tenants' targets must not reach unless the policy allows it.
/// An IPv6 address that carries an IPv4 address a network may route it to (IPv4-mapped,
/// IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo: [`embedded_ipv4`]) is private when
/// what it carries is, and NAT64's local-use prefix `64:ff9b:1::/48` always is. This is the one
/// check of webhooks, MCP servers and every outbound call made for a tenant, at registration
/// (URL literals) and at connection (resolved addresses).
pub fn is_private_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => private_v4(ip),
        IpAddr::V6(ip) => private_v6(ip),
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    let [first, second, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        // "This network" (0.0.0.0/8: Linux sends 0.0.0.0 to the host itself).
        || first == 0
        // Carrier-grade NAT (100.64.0.0/10).
        || (first == 100 && (second & 0xc0) == 64)
        // Reserved (240.0.0.0/4).
        || first >= 240
}

fn private_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    ip.is_loopback()
        || ip.is_unspecified()
        // Unique local (fc00::/7), link-local (fe80::/10) and the old site-local (fec0::/10).
        || (segments[0] & 0xfe00) == 0xfc00
        || (segments[0] & 0xffc0) == 0xfe80
        || (segments[0] & 0xffc0) == 0xfec0
        // NAT64's local-use prefix (RFC 8215): translated by the operator's own gateway, at
        // whatever prefix length it chose, so never a public destination.
        || segments[..3] == [0x64, 0xff9b, 1]
        || embedded_ipv4(ip).into_iter().flatten().any(private_v4)
}

/// The IPv4 addresses an IPv6 address carries, which a translator or tunnel on the way may
/// deliver it to: the low 32 bits of IPv4-mapped (`::ffff:0:0/96`), IPv4-compatible
/// (`::/96`), IPv4-translated (`::ffff:0:0:0/96`) and NAT64 well-known-prefix
/// (`64:ff9b::/96`) addresses; the 32 bits after 6to4's `2002::/16`; and Teredo's
/// (`2001::/32`) server and client (stored inverted) addresses.
pub fn embedded_ipv4(ip: Ipv6Addr) -> [Option<Ipv4Addr>; 2] {
    let s = ip.segments();
    let v4 = |high: u16, low: u16| Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    match s {
        [0, 0, 0, 0, 0, 0 | 0xffff, high, low]
        | [0, 0, 0, 0, 0xffff, 0, high, low]
        | [0x64, 0xff9b, 0, 0, 0, 0, high, low] => [Some(v4(high, low)), None],
        [0x2002, high, low, ..] => [Some(v4(high, low)), None],
        [
            0x2001,
            0,
            server_high,
            server_low,
            _,
            _,
            client_high,
            client_low,
        ] => [
            Some(v4(server_high, server_low)),
            Some(v4(!client_high, !client_low)),
        ],
        _ => [None, None],
    }
}

/// Whether two URLs share their origin (scheme, host and port, the default port of the
/// scheme being the same as none): what decides whether credentials given for one may be
/// sent to the other. A text that is not an absolute URL shares no origin.
pub fn same_origin(a: &str, b: &str) -> bool {
    match (Url::parse(a), Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            let origin = a.origin();
            origin.is_tuple() && origin == b.origin()
        }
        _ => false,
    }
}

impl TargetPolicy {
    /// Why `text` cannot be a target URL (http or https, at most `max_chars`, no
    /// credentials or fragment, a host the policy allows), if it cannot.
    pub fn check(self, text: &str, max_chars: usize) -> Result<Url, String> {
        if text.chars().count() > max_chars {
            return Err(format!("at most {max_chars} characters"));
        }
        let url = Url::parse(text).map_err(|e| format!("not an absolute URL: {e}"))?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err("the scheme must be https or http".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("credentials in the URL are not allowed".into());
        }
        if url.fragment().is_some() {
            return Err("a fragment is never sent; remove it".into());
        }
        let private = match url.host() {
            None => return Err("the URL has no host".into()),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                name == "localhost" || name.ends_with(".localhost")
            }
            Some(Host::Ipv4(ip)) => is_private_address(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => is_private_address(IpAddr::V6(ip)),
        };
        if private && !self.allow_private_targets {
            return Err("loopback, private and link-local hosts are not allowed".into());
        }
        Ok(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(text: &str) -> Ipv6Addr {
        text.parse().unwrap()
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        for (a, b) in [
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com/v2/mcp?x=1",
            ),
            (
                "https://mcp.example.com/mcp",
                "https://MCP.example.com:443/other",
            ),
            ("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b"),
        ] {
            assert!(same_origin(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("https://mcp.example.com/mcp", "http://mcp.example.com/mcp"),
            (
                "https://mcp.example.com/mcp",
                "https://evil.example.com/mcp",
            ),
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com:8443/mcp",
            ),
            (
                "https://mcp.example.com/mcp",
                "https://mcp.example.com.evil.example/mcp",
            ),
            (
                "http://127.0.0.1:8080/a",
                "http://[::ffff:127.0.0.1]:8080/a",
            ),
            ("not a url", "not a url"),
        ] {
            assert!(!same_origin(a, b), "{a} {b}");
        }
    }

    #[test]
    fn embedded_ipv4_addresses_are_decoded() {
        let loopback = Some(Ipv4Addr::LOCALHOST);
        for (address, carried) in [
            ("::127.0.0.1", [loopback, None]),
            ("::ffff:127.0.0.1", [loopback, None]),
            ("::ffff:0:127.0.0.1", [loopback, None]),
            ("64:ff9b::7f00:1", [loopback, None]),
            ("64:ff9b::8.8.8.8", [Some(Ipv4Addr::new(8, 8, 8, 8)), None]),
            ("2002:7f00:1::", [loopback, None]),
            (
                "2002:a9fe:a9fe:1::1",
                [Some(Ipv4Addr::new(169, 254, 169, 254)), None],
            ),
            // Teredo: server 65.54.227.120, client 127.0.0.1 stored inverted.
            (
                "2001:0:4136:e378:8000:63bf:80ff:fffe",
                [Some(Ipv4Addr::new(65, 54, 227, 120)), loopback],
            ),
            ("2606:4700::6810:84e5", [None, None]),
            ("fe80::1", [None, None]),
        ] {
            assert_eq!(embedded_ipv4(v6(address)), carried, "{address}");
        }
    }

    #[test]
    fn addresses_carrying_a_private_ipv4_are_private() {
        for address in [
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:0:192.168.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::808:808",
            "64:ff9b:1:ffff::1",
            "2002:7f00:1::",
            "2002:a00:1::1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "2001:0:7f00:1::1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "fec0::1",
        ] {
            assert!(is_private_address(IpAddr::V6(v6(address))), "{address}");
        }
        for address in [
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
            "2606:4700::6810:84e5",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_private_address(IpAddr::V6(v6(address))), "{address}");
        }
        for address in ["0.1.2.3", "100.64.0.1", "240.0.0.1", "255.255.255.255"] {
            assert!(
                is_private_address(IpAddr::V4(address.parse().unwrap())),
                "{address}"
            );
        }
    }

    #[test]
    fn url_literals_embedding_a_private_ipv4_are_refused() {
        for url in [
            "http://[::127.0.0.1]/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://[::ffff:7f00:1]:8080/x",
            "http://[64:ff9b::7f00:1]/x",
            "http://[64:ff9b::127.0.0.1]/x",
            "http://[64:ff9b:1::a00:1]/x",
            "http://[2002:7f00:1::]/x",
            "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x",
            "http://0x7f.1/x",
            "http://2130706433/x",
            "http://0.0.0.0/x",
        ] {
            assert!(TargetPolicy::default().check(url, 100).is_err(), "{url}");
        }
        assert!(
            TargetPolicy::default()
                .check("https://[64:ff9b::808:808]/x", 100)
                .is_ok()
        );
    }

    #[test]
    fn private_hosts_pass_only_when_allowed() {
        let open = TargetPolicy {
            allow_private_targets: true,
        };
        for url in [
            "http://127.0.0.1:8080/x",
            "http://localhost/x",
            "http://[::1]/x",
            "http://169.254.169.254/",
        ] {
            assert!(TargetPolicy::default().check(url, 100).is_err(), "{url}");
            assert!(open.check(url, 100).is_ok(), "{url}");
        }
        assert!(
            TargetPolicy::default()
                .check("https://example.com/mcp", 100)
                .is_ok()
        );
        assert!(
            TargetPolicy::default()
                .check("https://u:p@example.com/", 100)
                .is_err()
        );
        assert!(
            TargetPolicy::default()
                .check("ftp://example.com/", 100)
                .is_err()
        );
        assert!(
            TargetPolicy::default()
                .check("https://example.com/", 10)
                .is_err()
        );
    }
}
