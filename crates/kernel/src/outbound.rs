//! Where the service may send requests on a tenant's behalf (webhook receivers, MCP servers):
//! never to its own network unless the operator allows it.

use std::net::{IpAddr, Ipv4Addr};

use url::{Host, Url};

/// Which targets outbound calls made for tenants may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TargetPolicy {
    /// Allow `localhost` and loopback, private, link-local and unspecified IP addresses
    /// (off by default: a tenant must not reach the service's own network through us).
    pub allow_private_targets: bool,
}

/// Whether `ip` is loopback, private, link-local (cloud metadata services among them),
/// unique-local, carrier-grade NAT, broadcast or unspecified: addresses of the service's own
/// network, which tenants' targets must not reach unless the policy allows it.
pub fn is_private_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => private_v4(ip),
        IpAddr::V6(ip) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.to_ipv4_mapped().is_some_and(private_v4)
                // Unique local (fc00::/7) and link-local (fe80::/10).
                || (ip.segments()[0] & 0xfe00) == 0xfc00
                || (ip.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        // Carrier-grade NAT (100.64.0.0/10).
        || (ip.octets()[0] == 100 && (ip.octets()[1] & 0xc0) == 64)
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
