//! The outbound target policy: a URL naming a private address literally is refused before
//! any request, and host names resolve through the webhooks' `PublicAddressResolver`
//! (only public addresses kept, and connected to as checked). Its refusal is wrapped in
//! [`TargetRefused`] so the call can tell it from a name that does not resolve.

use std::net::IpAddr;

use reqwest::dns::{Name, Resolve, Resolving};
use tessera_kernel::{TargetPolicy, is_private_address};
use tessera_mcp::CallError;
use tessera_webhooks_http::PublicAddressResolver;
use url::{Host, Url};

/// The target policy refused the addresses a host name resolves to.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TargetRefused(String);

/// `PublicAddressResolver` with its refusals marked as such (a failed lookup stays an I/O
/// error: the server is unreachable, not refused).
#[derive(Debug, Clone, Default)]
pub struct PolicyResolver(PublicAddressResolver);

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let resolving = self.0.resolve(name);
        Box::pin(async move {
            resolving.await.map_err(|error| {
                if error.is::<std::io::Error>() {
                    error
                } else {
                    Box::new(TargetRefused(
                        error.to_string().replace("webhooks", "MCP servers"),
                    )) as _
                }
            })
        })
    }
}

/// The URL, if it is one the client may send to: http or https, and unless the policy
/// allows private targets, no private, loopback or link-local address written in it.
pub fn check_url(policy: TargetPolicy, text: &str) -> Result<Url, CallError> {
    let url =
        Url::parse(text).map_err(|error| CallError::Refused(format!("invalid URL: {error}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(CallError::Refused(format!(
            "the scheme must be http or https, not {}",
            url.scheme()
        )));
    }
    let literal = match url.host() {
        Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(Host::Domain(_)) => None,
        None => return Err(CallError::Refused("the URL has no host".into())),
    };
    match literal {
        Some(ip) if !policy.allow_private_targets && is_private_address(ip) => {
            Err(CallError::Refused(format!(
                "{ip} is a private, loopback or link-local address, which MCP servers may not be"
            )))
        }
        _ => Ok(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_private_addresses_are_refused_unless_allowed() {
        let open = TargetPolicy {
            allow_private_targets: true,
        };
        for url in [
            "http://127.0.0.1:8080/mcp",
            "http://[::1]/mcp",
            "http://10.1.2.3/mcp",
            "http://169.254.169.254/",
            "http://[::ffff:192.168.0.1]/mcp",
            "http://[::127.0.0.1]/mcp",
            "http://[64:ff9b::7f00:1]/mcp",
            "http://[64:ff9b:1::a00:1]/mcp",
            "http://[2002:7f00:1::]/mcp",
        ] {
            assert!(
                matches!(
                    check_url(TargetPolicy::default(), url),
                    Err(CallError::Refused(_))
                ),
                "{url}"
            );
            assert!(check_url(open, url).is_ok(), "{url}");
        }
        assert!(check_url(TargetPolicy::default(), "https://mcp.example.com/mcp").is_ok());
        assert!(check_url(TargetPolicy::default(), "https://8.8.8.8/mcp").is_ok());
        assert!(matches!(
            check_url(open, "ftp://example.com/"),
            Err(CallError::Refused(_))
        ));
        assert!(matches!(
            check_url(open, "not a url"),
            Err(CallError::Refused(_))
        ));
    }
}
