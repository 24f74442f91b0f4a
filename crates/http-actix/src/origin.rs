//! Where a request came from, for audit records: the client's address and the request id.
//! The address is the peer's, unless the peer is a trusted proxy (`http.trusted_proxies`):
//! then it is the nearest address in `X-Forwarded-For` that is not itself a trusted proxy.

use std::net::IpAddr;

use actix_web::{HttpMessage, HttpRequest};
use tessera_kernel::Origin;

use crate::middleware::{RequestId, TrustedProxies};

/// The origin of `req`.
pub fn origin_of(req: &HttpRequest) -> Origin {
    let trusted = req
        .app_data::<TrustedProxies>()
        .cloned()
        .unwrap_or_default();
    let forwarded = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    Origin {
        address: req
            .peer_addr()
            .map(|peer| client_address(peer.ip(), &forwarded, &trusted.0).to_string()),
        request_id: req.extensions().get::<RequestId>().map(|id| id.0.clone()),
    }
}

/// The client's address: `peer`, or, when `peer` is a trusted proxy, the rightmost address of
/// `forwarded` (a comma-separated `X-Forwarded-For` chain) that is not a trusted proxy.
fn client_address(peer: IpAddr, forwarded: &str, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let mut client = peer;
    for hop in forwarded.rsplit(',') {
        let Ok(address) = hop.trim().parse::<IpAddr>() else {
            // An unreadable hop: nothing before it can be believed.
            break;
        };
        client = address;
        if !trusted.contains(&address) {
            break;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn forwarded_addresses_count_only_from_trusted_proxies() {
        let proxy = ip("10.0.0.1");
        let trusted = [proxy, ip("10.0.0.2")];
        // A direct client's header is ignored.
        assert_eq!(
            client_address(ip("192.0.2.9"), "203.0.113.5", &trusted),
            ip("192.0.2.9")
        );
        // Through the proxies: the nearest untrusted hop, not what the client claimed first.
        assert_eq!(
            client_address(proxy, "198.51.100.1, 203.0.113.5, 10.0.0.2", &trusted),
            ip("203.0.113.5")
        );
        // No header, or an unreadable one: the proxy itself.
        assert_eq!(client_address(proxy, "", &trusted), proxy);
        assert_eq!(client_address(proxy, "junk", &trusted), proxy);
    }
}
