//! Name resolution that refuses the service's own network: a webhook host that resolves only
//! to private, loopback or link-local addresses (an internal name such as
//! `metadata.google.internal` or `qdrant`) is refused at delivery. reqwest connects to the
//! addresses this resolver returned, so a rebinding DNS server cannot swap in another
//! address between the check and the connection.

use std::{net::SocketAddr, sync::Arc};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tessera_webhooks::is_private_address;

/// Resolves with the system resolver and keeps only public addresses.
#[derive(Debug, Clone, Default)]
pub struct PublicAddressResolver;

#[derive(Debug, thiserror::Error)]
#[error(
    "{host} resolves only to private, loopback or link-local addresses ({addresses}), which webhooks may not target"
)]
struct PrivateTarget {
    host: String,
    addresses: String,
}

impl Resolve for PublicAddressResolver {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = resolved
                .iter()
                .copied()
                .filter(|address| !is_private_address(address.ip()))
                .collect();
            if public.is_empty() {
                let addresses = resolved
                    .iter()
                    .map(|a| a.ip().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(Box::new(PrivateTarget { host, addresses }) as _);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

impl PublicAddressResolver {
    pub fn shared() -> Arc<Self> {
        Arc::new(Self)
    }
}
