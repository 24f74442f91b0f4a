//! `RedisServer`: which Redis server the replicas share, and how it is trusted. `redis://` is
//! plain TCP; `rediss://` is TLS (rustls on ring), the server's certificate checked against
//! the system's roots, or only against the certificate authorities of a PEM file
//! (`redis_ca_file`) for a server whose certificate a private CA signed (decision 0043).
//! Redis Cluster is not supported: the settings refuse `redis+cluster://`.

use rustls_pki_types::{CertificateDer, pem::PemObject};

/// Why a Redis server cannot be used as configured; found before any connection is tried.
#[derive(Debug, thiserror::Error)]
pub enum RedisSetupError {
    #[error("invalid Redis URL: {0}")]
    Url(String),
    #[error("{0}")]
    CertificateAuthority(String),
}

/// A Redis server: its URL and, for `rediss://`, the roots its certificate is checked against.
#[derive(Clone)]
pub struct RedisServer {
    client: redis::Client,
}

impl RedisServer {
    /// `ca_pem`: the PEM certificates of the authorities to trust instead of the system's
    /// (only with a `rediss://` URL).
    pub fn new(url: &str, ca_pem: Option<&[u8]>) -> Result<Self, RedisSetupError> {
        let client = match ca_pem {
            None => redis::Client::open(url),
            Some(pem) => {
                if !url.starts_with("rediss://") {
                    return Err(RedisSetupError::CertificateAuthority(
                        "a CA file applies to rediss:// URLs only".into(),
                    ));
                }
                // The redis crate would accept a file with no certificate in it and then
                // trust nothing; say so here instead of at every connection.
                let certificates = CertificateDer::pem_slice_iter(pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        RedisSetupError::CertificateAuthority(format!("not a PEM file: {e}"))
                    })?;
                if certificates.is_empty() {
                    return Err(RedisSetupError::CertificateAuthority(
                        "no PEM certificate in it".into(),
                    ));
                }
                redis::Client::build_with_tls(
                    url,
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem.to_vec()),
                    },
                )
            }
        }
        .map_err(|e| RedisSetupError::Url(e.to_string()))?;
        Ok(Self { client })
    }

    pub(crate) fn client(&self) -> redis::Client {
        self.client.clone()
    }
}
