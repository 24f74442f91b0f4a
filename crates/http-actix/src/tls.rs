//! The HTTPS listener's certificate: the configured PEM files, or a self-signed certificate
//! generated on the first run and kept under `data_dir/tls` so clients can pin it.

use std::{
    io::BufReader,
    net::IpAddr,
    path::{Path, PathBuf},
};

use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

/// Why the TLS configuration could not be built; names the config key involved.
#[derive(Debug, thiserror::Error)]
#[error("config key `{key}`: {message}")]
pub struct TlsError {
    key: &'static str,
    message: String,
}

fn tls_error(key: &'static str, message: impl Into<String>) -> TlsError {
    TlsError {
        key,
        message: message.into(),
    }
}

/// Where the generated development certificate lives.
pub fn dev_certificate_paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = data_dir.join("tls");
    (dir.join("cert.pem"), dir.join("key.pem"))
}

/// Where the listener's certificate comes from.
#[derive(Debug, Clone, Copy)]
pub struct CertificateSource<'a> {
    /// The configured PEM files (config keys `tls.cert` and `tls.key`), when both are set.
    pub files: Option<(&'a Path, &'a Path)>,
    /// Otherwise a self-signed certificate is generated once and kept under `data_dir/tls`.
    pub data_dir: &'a Path,
    /// The listening address, which the generated certificate names beside `localhost`.
    pub listen_ip: IpAddr,
}

/// Builds the rustls server configuration (HTTP/2 and HTTP/1.1) for this certificate.
pub fn server_config(source: CertificateSource<'_>) -> Result<ServerConfig, TlsError> {
    // Several rustls providers can be compiled in (through dependencies); choose one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (cert_path, key_path, cert_key, key_key) = match source.files {
        Some((cert, key)) => (cert.to_owned(), key.to_owned(), "tls.cert", "tls.key"),
        None => {
            let (cert, key) = dev_certificate_paths(source.data_dir);
            if !cert.exists() || !key.exists() {
                generate_self_signed(&cert, &key, source.listen_ip)?;
                tracing::info!(cert = %cert.display(), "generated a self-signed TLS certificate for development");
            }
            (cert, key, "data_dir", "data_dir")
        }
    };
    let certs = read_certificates(&cert_path).map_err(|m| tls_error(cert_key, m))?;
    let key = read_private_key(&key_path).map_err(|m| tls_error(key_key, m))?;
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            tls_error(
                key_key,
                format!("certificate and key do not form a usable pair: {e}"),
            )
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let certs = CertificateDer::pem_reader_iter(&mut BufReader::new(file))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} is not a PEM certificate chain: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    Ok(certs)
}

fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|e| format!("{} holds no usable PEM private key: {e}", path.display()))
}

fn generate_self_signed(
    cert_path: &Path,
    key_path: &Path,
    listen_ip: IpAddr,
) -> Result<(), TlsError> {
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !listen_ip.is_unspecified() && !listen_ip.is_loopback() {
        names.push(listen_ip.to_string());
    }
    let generated = rcgen::generate_simple_self_signed(names)
        .map_err(|e| tls_error("data_dir", format!("cannot generate a certificate: {e}")))?;
    if let Some(dir) = cert_path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| tls_error("data_dir", format!("cannot create {}: {e}", dir.display())))?;
    }
    write_private(key_path, generated.signing_key.serialize_pem().as_bytes())?;
    std::fs::write(cert_path, generated.cert.pem()).map_err(|e| {
        tls_error(
            "data_dir",
            format!("cannot write {}: {e}", cert_path.display()),
        )
    })?;
    Ok(())
}

/// Writes a file readable by its owner only (private keys).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(|e| tls_error("data_dir", format!("cannot write {}: {e}", path.display())))?;
    file.write_all(bytes)
        .map_err(|e| tls_error("data_dir", format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The self-signed certificate under `dir`, or the given files.
    fn source<'a>(dir: &'a Path, files: Option<(&'a Path, &'a Path)>) -> CertificateSource<'a> {
        CertificateSource {
            files,
            data_dir: dir,
            listen_ip: IpAddr::from([127, 0, 0, 1]),
        }
    }

    #[test]
    fn generates_once_then_reuses_the_certificate() {
        let dir = tempfile::tempdir().unwrap();
        server_config(source(dir.path(), None)).unwrap();
        let (cert, key) = dev_certificate_paths(dir.path());
        let first = std::fs::read(&cert).unwrap();
        server_config(source(dir.path(), None)).unwrap();
        assert_eq!(std::fs::read(&cert).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }

    #[test]
    fn unreadable_or_bogus_files_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let (missing, missing_key) = (
            dir.path().join("missing.pem"),
            dir.path().join("missing-key.pem"),
        );
        let message = server_config(source(dir.path(), Some((&missing, &missing_key))))
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("config key `tls.cert`: cannot read"),
            "{message}"
        );

        let bogus = dir.path().join("bogus.pem");
        std::fs::write(&bogus, "not a certificate").unwrap();
        let message = server_config(source(dir.path(), Some((&bogus, &missing_key))))
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("config key `tls.cert`:"), "{message}");

        server_config(source(dir.path(), None)).unwrap();
        let (cert, _) = dev_certificate_paths(dir.path());
        let message = server_config(source(dir.path(), Some((&cert, &bogus))))
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("config key `tls.key`:"), "{message}");
    }
}
