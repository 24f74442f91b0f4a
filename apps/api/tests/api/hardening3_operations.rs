//! Issue 61's operations items over the real stack: the shared rate limiter on a Redis that
//! speaks only TLS (item 5).

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use tessera_store::Backend;

use crate::{
    binary::KillOnDrop,
    support::{TestApp, problem},
};

/// A `redis-server` listening only on a TLS port (`--port 0`), with a certificate signed by a
/// certificate authority made here; the CA's PEM file is what `redis_ca_file` names.
struct TlsRedis {
    _server: KillOnDrop,
    url: String,
    ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

fn tls_redis() -> TlsRedis {
    let dir = tempfile::tempdir().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "Tessera test Redis CA");
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let certificate = CertificateParams::new(vec!["127.0.0.1".to_owned()])
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
    let server = KillOnDrop(
        Command::new("redis-server")
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
            .expect("redis-server is installed (as on the CI machine)"),
    );
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    TlsRedis {
        _server: server,
        url: format!("rediss://127.0.0.1:{port}"),
        ca_file: path("ca.pem"),
        _dir: dir,
    }
}

/// `rediss://` with the CA file: two replicas draw from one budget kept in the TLS Redis
/// (before, the redis crate had no TLS: the limiter never connected and let every request
/// through).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_budgets_through_a_tls_redis() {
    let redis = tls_redis();
    let limit = |s: &mut tessera_api::config::Settings| {
        s.redis_url = Some(redis.url.clone());
        s.redis_ca_file = Some(redis.ca_file.clone());
        s.rate_limit.principal_per_minute = 3;
    };
    let first = TestApp::spawn_with(Backend::Postgres, limit).await;
    let database_url = first.settings.database_url.clone();
    let keys_dir = first.settings.keys_dir();
    let issuer = first.state.issuer.clone();
    let second = TestApp::spawn_with(Backend::Sqlite, |s| {
        limit(s);
        s.database_url = database_url;
        s.auth.keys_dir = Some(keys_dir);
        s.auth.issuer = Some(issuer);
    })
    .await;
    let (_, client_id, secret) = first.organization_with_client("files:read").await;
    let token = first.token(&client_id, &secret).await;
    let call = |app: &TestApp| {
        app.client
            .get(app.url("/v1/organization"))
            .bearer_auth(&token)
            .send()
    };
    assert_eq!(call(&first).await.unwrap().status(), 200);
    assert_eq!(call(&second).await.unwrap().status(), 200);
    assert_eq!(call(&first).await.unwrap().status(), 200);
    problem(call(&second).await.unwrap(), 429, "rate_limited").await;
    problem(call(&first).await.unwrap(), 429, "rate_limited").await;
}
