//! What replicas share, over TLS: a real `redis-server` listening only on a TLS port, with a
//! certificate signed by a certificate authority made here (decision 0043). Needs
//! `redis-server` built with TLS (Debian's is); fails, never skips, without it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::Duration,
};

use chrono::Utc;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use tessera_kernel::DomainError;
use tessera_limits::{Quota, RateLimiter};
use tessera_limits_redis::{RedisCircuits, RedisRateLimiter, RedisServer, RedisSetupError};
use tessera_models::{CircuitBoard, CircuitPolicy};

/// A `redis-server` with TLS only (`--port 0`), killed when dropped.
struct TlsRedis {
    child: Child,
    url: String,
    ca_pem: String,
    _dir: tempfile::TempDir,
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn authority(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn tls_redis() -> TlsRedis {
    let dir = tempfile::tempdir().unwrap();
    let ca = authority("Tessera test Redis CA");
    let key = KeyPair::generate().unwrap();
    let certificate = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let path = |name: &str| dir.path().join(name);
    std::fs::write(path("ca.pem"), ca.pem()).unwrap();
    std::fs::write(path("server.pem"), certificate.pem()).unwrap();
    std::fs::write(path("server.key"), key.serialize_pem()).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("redis-server")
        .args(["--port", "0", "--tls-port", &port.to_string()])
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .arg("--tls-cert-file")
        .arg(path("server.pem"))
        .arg("--tls-key-file")
        .arg(path("server.key"))
        .arg("--tls-ca-cert-file")
        .arg(path("ca.pem"))
        .args(["--tls-auth-clients", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server is installed (as on the CI machine)");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    TlsRedis {
        child,
        url: format!("rediss://127.0.0.1:{port}"),
        ca_pem: ca.pem(),
        _dir: dir,
    }
}

fn prefix() -> String {
    format!("tessera-test:{}:", uuid::Uuid::now_v7().simple())
}

#[tokio::test]
async fn two_limiters_share_one_budget_over_tls() {
    let redis = tls_redis();
    let server = RedisServer::new(&redis.url, Some(redis.ca_pem.as_bytes())).unwrap();
    let prefix = prefix();
    let a = RedisRateLimiter::connect(&server, &prefix).await.unwrap();
    let b = RedisRateLimiter::connect(&server, &prefix).await.unwrap();
    let quota = Quota::per_minute(2);
    assert!(a.acquire("shared", quota).await.unwrap().allowed);
    assert!(b.acquire("shared", quota).await.unwrap().allowed);
    let refused = a.acquire("shared", quota).await.unwrap();
    assert!(!refused.allowed);
    assert!(refused.retry_after.unwrap() > Duration::from_secs(25));
    assert!(!b.acquire("shared", quota).await.unwrap().allowed);
}

#[tokio::test]
async fn circuits_are_shared_over_tls() {
    let redis = tls_redis();
    let server = RedisServer::new(&redis.url, Some(redis.ca_pem.as_bytes())).unwrap();
    let prefix = prefix();
    let one = RedisCircuits::connect_lazily(&server, &prefix, CircuitPolicy::default()).unwrap();
    let other = RedisCircuits::connect_lazily(&server, &prefix, CircuitPolicy::default()).unwrap();
    let now = Utc::now();
    one.failed("m#a", now).await;
    one.failed("m#a", now).await;
    // A board that cannot reach Redis reads every circuit closed with no failures.
    assert_eq!(other.states(&["m#a".to_owned()]).await[0].failures, 2);
}

/// A server whose certificate no trusted authority signed is refused at connect, and the
/// error says it is the certificate.
#[tokio::test]
async fn a_certificate_from_another_authority_is_refused_with_the_reason() {
    let redis = tls_redis();
    let stranger = authority("Some other CA").pem();
    for server in [
        RedisServer::new(&redis.url, Some(stranger.as_bytes())).unwrap(),
        // The system's roots do not know the test authority either.
        RedisServer::new(&redis.url, None).unwrap(),
    ] {
        let error = RedisRateLimiter::connect(&server, &prefix())
            .await
            .err()
            .unwrap();
        let DomainError::Unavailable { message } = error else {
            panic!("{error:?}")
        };
        assert!(
            message.contains("cannot connect to Redis") && message.contains("UnknownIssuer"),
            "{message}"
        );
    }
}

#[test]
fn a_ca_file_must_hold_a_certificate_and_go_with_rediss() {
    let message = |result: Result<RedisServer, RedisSetupError>| result.err().unwrap().to_string();
    assert_eq!(
        message(RedisServer::new(
            "rediss://127.0.0.1:6380",
            Some(b"not a pem")
        )),
        "no PEM certificate in it"
    );
    assert_eq!(
        message(RedisServer::new(
            "redis://127.0.0.1:6379",
            Some(authority("CA").pem().as_bytes())
        )),
        "a CA file applies to rediss:// URLs only"
    );
}
